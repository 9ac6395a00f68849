"""uvicorn's httptools HTTP/1.1 protocol with a request-read timeout.

uvicorn closes idle keep-alive connections but waits forever for a request that has started and
not finished (headers or body sent slowly or never: "slowloris"). This protocol closes a
connection whose request is not complete ``request_timeout`` seconds after it started.
(httptools, not uvicorn's pure-Python h11 parser: it costs a search a fraction of the CPU.)
"""

from __future__ import annotations

import asyncio
import logging

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

log = logging.getLogger("memworker")


class TimedHttpToolsProtocol(HttpToolsProtocol):
    request_timeout: float = 10.0

    def connection_made(self, transport) -> None:
        self._request_timer: asyncio.TimerHandle | None = None
        super().connection_made(transport)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._request_timer is None:
            self._request_timer = self.loop.call_later(self.request_timeout, self._request_timed_out)

    def on_message_complete(self) -> None:
        self._cancel_request_timer()
        super().on_message_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_request_timer()
        super().connection_lost(exc)

    def _cancel_request_timer(self) -> None:
        if self._request_timer is not None:
            self._request_timer.cancel()
            self._request_timer = None

    def _request_timed_out(self) -> None:
        self._request_timer = None
        if not self.transport.is_closing():
            log.warning("closing a connection whose request was incomplete after %.0f s", self.request_timeout)
            self.transport.close()
