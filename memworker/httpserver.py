"""uvicorn's HTTP/1.1 protocol with a request-read timeout.

uvicorn closes idle keep-alive connections but waits forever for a request that has started and
not finished (headers or body sent slowly or never: "slowloris"). This protocol closes a
connection whose request is not complete ``request_timeout`` seconds after it started.
"""

from __future__ import annotations

import asyncio
import logging

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("memworker")


class TimedH11Protocol(H11Protocol):
    request_timeout: float = 10.0

    def connection_made(self, transport) -> None:  # type: ignore[override]
        self._request_timer: asyncio.TimerHandle | None = None
        super().connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self._request_timer is None and self.conn.their_state in (h11.IDLE, h11.SEND_BODY):
            self._request_timer = self.loop.call_later(self.request_timeout, self._request_timed_out)
        super().data_received(data)
        if self._request_timer is not None and self.conn.their_state not in (h11.IDLE, h11.SEND_BODY):
            self._cancel_request_timer()

    def _cancel_request_timer(self) -> None:
        if self._request_timer is not None:
            self._request_timer.cancel()
            self._request_timer = None

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_request_timer()
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        self._cancel_request_timer()
        super().on_response_complete()

    def _request_timed_out(self) -> None:
        self._request_timer = None
        if self.conn.their_state in (h11.IDLE, h11.SEND_BODY) and not self.transport.is_closing():
            log.warning("closing a connection whose request was incomplete after %.0f s", self.request_timeout)
            self.transport.close()
