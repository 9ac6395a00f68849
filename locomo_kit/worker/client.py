"""A client for any Worker that speaks the claude-mem Worker HTTP API (claude-mem or memworker).

Errors, all raised as subclasses of :class:`WorkerError`::

    WorkerError
    ├── WorkerUnavailable      nothing listens at the URL (says how to start memworker)
    ├── WorkerTimeout          a request timed out (names the route)
    ├── WorkerProtocolError    the answer is not the JSON the contract promises
    └── WorkerHTTPError        an HTTP error status (status, route, body excerpt)
        ├── WorkerAuthError        401/403: the bearer token is missing or wrong
        ├── WorkerValidationError  400: the Worker's ``issues`` list
        ├── WorkerNotFound         404
        ├── WorkerNotReady         503 while the Worker initialises
        └── WorkerServerError      other 5xx

Retries with backoff happen only where a retry cannot duplicate work: GET requests (also when
the connection was reset), and any request the Worker refused before doing anything (connection
refused, 429, 503). A refused connection is retried for up to ``restart_window`` seconds (default
15, ``LOCOMO_WORKER_RESTART_WINDOW``): a restarting Worker takes several seconds to listen again.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator
from urllib.parse import quote

import httpx

DEFAULT_URL = "http://127.0.0.1:37777"
START_HINT = ("start it with `.venv/bin/python -m memworker --port {port}` (or `claude-mem start`), "
              "or pass --worker-url (default: $LOCOMO_WORKER_URL, else the embedded memworker)")
DEFAULT_CWD = "/locomo-kit"  # a non-empty working directory for transcript tool uses
JSON_STRING_FIELDS = ("facts", "concepts", "files_read", "files_modified", "metadata")


class WorkerError(Exception):
    """Base of every error the client raises."""


class WorkerUnavailable(WorkerError):
    pass


class WorkerTimeout(WorkerError):
    pass


class WorkerProtocolError(WorkerError):
    pass


class WorkerHTTPError(WorkerError):
    def __init__(self, message: str, status: int, route: str, body: str) -> None:
        super().__init__(message)
        self.status, self.route, self.body = status, route, body


class WorkerAuthError(WorkerHTTPError):
    pass


class WorkerValidationError(WorkerHTTPError):
    def __init__(self, message: str, status: int, route: str, body: str, issues: list) -> None:
        super().__init__(message, status, route, body)
        self.issues = issues


class WorkerNotFound(WorkerHTTPError):
    pass


class WorkerNotReady(WorkerHTTPError):
    pass


class WorkerServerError(WorkerHTTPError):
    pass


@dataclass
class Observation:
    id: int
    project: str | None
    type: str | None
    title: str | None
    subtitle: str | None
    narrative: str | None
    text: str | None
    facts: list
    concepts: list
    created_at: str | None
    created_at_epoch: int | None
    metadata: dict
    memory_session_id: str | None = None
    raw: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_row(cls, row: dict) -> "Observation":
        if not isinstance(row, dict) or "id" not in row:
            raise WorkerProtocolError(f"observation row without an id: {str(row)[:200]}")
        decoded = {k: _decode_json_field(row.get(k)) for k in JSON_STRING_FIELDS}
        meta = decoded["metadata"] if isinstance(decoded["metadata"], dict) else {}
        return cls(id=row["id"], project=row.get("project"), type=row.get("type"), title=row.get("title"),
                   subtitle=row.get("subtitle"), narrative=row.get("narrative"), text=row.get("text"),
                   facts=decoded["facts"] or [], concepts=decoded["concepts"] or [],
                   created_at=row.get("created_at"), created_at_epoch=row.get("created_at_epoch"), metadata=meta,
                   memory_session_id=row.get("memory_session_id"), raw=row)

    @property
    def content(self) -> str:
        """The memory's text as an answerer should see it."""
        parts = [self.narrative or self.text or self.title or ""]
        parts += [f for f in self.facts if isinstance(f, str) and f not in parts[0]]
        return " ".join(p for p in parts if p)

    @property
    def source_turns(self) -> list[str]:
        turns = self.metadata.get("source_turns") or []
        return [str(t) for t in turns] if isinstance(turns, list) else []


@dataclass
class ObservationSearch:
    """What one Worker search returned: its observations, best first."""

    query: str
    observations: list[Observation]
    latency_ms: float
    total: int


def _without_none(body: dict) -> dict:
    """The body without None values: claude-mem's zod schemas reject JSON null for optional fields."""
    return {k: v for k, v in body.items() if v is not None}


def _decode_json_field(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return [value]
    return value


class WorkerClient:
    def __init__(self, base_url: str | None = None, token: str | None = None, *, timeout: float = 30.0,
                 transport: httpx.BaseTransport | None = None, retries: int = 3, backoff: float = 0.5,
                 sleep: Callable[[float], None] = time.sleep, restart_window: float | None = None) -> None:
        self.base_url = (base_url or os.environ.get("LOCOMO_WORKER_URL") or DEFAULT_URL).rstrip("/")
        token = token if token is not None else os.environ.get("LOCOMO_WORKER_TOKEN")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=self.base_url, headers=headers, transport=transport,
                                  timeout=httpx.Timeout(timeout, connect=5.0))
        self.retries, self.backoff, self._sleep = retries, backoff, sleep
        self.restart_window = restart_window if restart_window is not None else float(
            os.environ.get("LOCOMO_WORKER_RESTART_WINDOW", "15"))

    def __repr__(self) -> str:  # never shows the token
        return f"WorkerClient({self.base_url!r})"

    def __enter__(self) -> "WorkerClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # -- transport ----------------------------------------------------------------------------
    def _request(self, method: str, route: str, *, params: dict | None = None, body: Any = None,
                 timeout: float | None = None) -> Any:
        attempt, started = 0, time.monotonic()
        while True:
            try:
                kwargs: dict[str, Any] = {"params": params, "json": body}
                if timeout is not None:
                    kwargs["timeout"] = timeout
                resp = self._http.request(method, route, **kwargs)
            except httpx.ConnectError as exc:  # nothing was sent: always safe to retry
                if self.retries and (attempt < self.retries or time.monotonic() - started < self.restart_window):
                    attempt += 1
                    self._sleep(min(2.0, self.backoff * 2 ** (attempt - 1)))
                    continue
                port = httpx.URL(self.base_url).port or 80
                raise WorkerUnavailable(f"Worker not running at {self.base_url} ({START_HINT.format(port=port)})") from exc
            except httpx.TimeoutException as exc:
                if method == "GET" and attempt < self.retries:
                    attempt += 1
                    self._sleep(self.backoff * 2 ** (attempt - 1))
                    continue
                raise WorkerTimeout(f"{method} {route} timed out at {self.base_url} ({type(exc).__name__})") from exc
            except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
                if method == "GET" and attempt < self.retries:  # a reset connection: a GET is safe to resend
                    attempt += 1
                    self._sleep(self.backoff * 2 ** (attempt - 1))
                    continue
                raise WorkerUnavailable(f"{method} {route} at {self.base_url} failed: {exc}") from exc
            except httpx.HTTPError as exc:
                raise WorkerUnavailable(f"{method} {route} at {self.base_url} failed: {exc}") from exc
            if resp.status_code in (429, 503) and attempt < self.retries:
                attempt += 1
                retry_after = resp.headers.get("retry-after", "")
                self._sleep(float(retry_after) if retry_after.isdigit() else self.backoff * 2 ** (attempt - 1))
                continue
            return self._decode(resp, method, route)

    def _decode(self, resp: httpx.Response, method: str, route: str) -> Any:
        body = resp.text
        excerpt = body[:300]
        where = f"{method} {route}"
        if resp.status_code >= 400:
            status = resp.status_code
            if status in (401, 403):
                raise WorkerAuthError(f"Invalid auth token for {self.base_url} ({status} on {where}); "
                                      "set LOCOMO_WORKER_TOKEN to the Worker's token", status, route, excerpt)
            if status == 400:
                try:
                    issues = resp.json().get("issues", [])
                except (ValueError, AttributeError):
                    issues = []
                raise WorkerValidationError(f"{where} rejected the request: {issues or excerpt}", status, route,
                                            excerpt, issues)
            if status == 404:
                raise WorkerNotFound(f"{where}: not found (404) at {self.base_url}: {excerpt}", status, route, excerpt)
            if status == 503:
                raise WorkerNotReady(f"{where}: Worker at {self.base_url} is not ready (503): {excerpt}", status,
                                     route, excerpt)
            cls = WorkerServerError if status >= 500 else WorkerHTTPError
            raise cls(f"{where} failed with HTTP {status} at {self.base_url}: {excerpt}", status, route, excerpt)
        try:
            return resp.json()
        except ValueError:
            raise WorkerProtocolError(f"{where} at {self.base_url} did not answer JSON: {excerpt!r}") from None

    @staticmethod
    def _expect(data: Any, key: str, route: str) -> Any:
        if not isinstance(data, dict) or key not in data:
            raise WorkerProtocolError(f"{route}: expected a JSON object with '{key}', got {str(data)[:200]!r}")
        return data[key]

    # -- health -------------------------------------------------------------------------------
    def health(self) -> dict:
        data = self._request("GET", "/api/health")
        self._expect(data, "status", "/api/health")
        return data

    def wait_until_ready(self, timeout: float = 60.0, poll_interval: float = 0.25) -> dict:
        """Poll ``/api/readiness`` until 200, then return ``/api/health``."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                data = self._request("GET", "/api/readiness")
                if isinstance(data, dict) and data.get("status") == "ready":
                    return self.health()
            except WorkerNotReady:
                pass
            if time.monotonic() > deadline:
                raise WorkerTimeout(f"Worker at {self.base_url} not ready after {timeout:.0f} s (GET /api/readiness)")
            self._sleep(poll_interval)

    # -- sessions -----------------------------------------------------------------------------
    def init_session(self, content_session_id: str, project: str, prompt: str, platform_source: str = "locomo-kit") -> dict:
        data = self._request("POST", "/api/sessions/init", body={
            "contentSessionId": content_session_id, "project": project, "prompt": prompt,
            "platformSource": platform_source})
        if not isinstance(data, dict) or not ("status" in data or "skipped" in data):
            raise WorkerProtocolError(f"/api/sessions/init: unexpected answer {str(data)[:200]!r}")
        return data

    def queue_observation(self, content_session_id: str, tool_name: str, tool_input: Any, tool_response: Any,
                          tool_use_id: str | None = None, cwd: str = DEFAULT_CWD,
                          platform_source: str = "locomo-kit") -> dict:
        """Queue one tool use. ``cwd`` must be a non-empty string (claude-mem logs an empty one as an
        error); ``tool_use_id`` is omitted when None: claude-mem rejects JSON null for optional strings."""
        data = self._request("POST", "/api/sessions/observations", body=_without_none({
            "contentSessionId": content_session_id, "tool_name": tool_name, "tool_input": tool_input,
            "tool_response": tool_response, "tool_use_id": tool_use_id, "cwd": cwd or DEFAULT_CWD,
            "platformSource": platform_source}))
        self._expect(data, "status", "/api/sessions/observations")
        return data

    def summarize(self, content_session_id: str, last_assistant_message: str = "",
                  platform_source: str = "locomo-kit") -> dict:
        data = self._request("POST", "/api/sessions/summarize", body={
            "contentSessionId": content_session_id, "last_assistant_message": last_assistant_message,
            "platformSource": platform_source})
        self._expect(data, "status", "/api/sessions/summarize")
        return data

    def processing_status(self) -> dict:
        data = self._request("GET", "/api/processing-status")
        self._expect(data, "queueDepth", "/api/processing-status")
        return data

    def wait_for_processing(self, timeout: float = 180.0, poll_interval: float = 3.0) -> float:
        """Poll until the queue is empty (starting fast, backing off to ``poll_interval``).

        Returns the seconds waited; raises :class:`WorkerTimeout` when the queue is still not
        empty after ``timeout`` (a stuck queue: quota or auth failures on the Worker's side).
        """
        start = time.monotonic()
        delay = min(0.02, poll_interval)
        while True:
            status = self.processing_status()
            if int(status.get("queueDepth", 0)) == 0 and not status.get("isProcessing", False):
                return time.monotonic() - start
            if time.monotonic() - start > timeout:
                raise WorkerTimeout(f"Worker queue not empty after {timeout:.0f} s (queueDepth "
                                    f"{status.get('queueDepth')}, GET /api/processing-status)")
            self._sleep(delay)
            delay = min(poll_interval, delay * 1.2)

    # -- memories -----------------------------------------------------------------------------
    def search(self, query: str, project: str, limit: int = 8, context_budget: int | None = None) -> ObservationSearch:
        """``context_budget`` (tokens) is memworker's extra parameter: hits merged into spans of whole turns
        packed to the budget. Other Workers ignore it; :func:`locomo_kit.qa.context.fit_budget` then cuts."""
        params = {"query": query, "project": project, "limit": limit, "type": "observations", "format": "json"}
        if context_budget is not None:
            params["context_budget"] = context_budget
        start = time.perf_counter()
        data = self._request("GET", "/api/search", params=params)
        latency = (time.perf_counter() - start) * 1000
        rows = self._expect(data, "observations", "/api/search")
        if not isinstance(rows, list):
            raise WorkerProtocolError(f"/api/search: 'observations' is not a list: {str(rows)[:200]!r}")
        obs = [Observation.from_row(r) for r in rows]
        # claude-mem's totalResults is the number of rows in this answer, not a total over all pages.
        return ObservationSearch(query=query, observations=obs, latency_ms=latency, total=len(obs))

    def iter_observations(self, project: str, page_size: int = 100) -> Iterator[Observation]:
        offset = 0
        while True:
            data = self._request("GET", "/api/observations", params={"project": project, "offset": offset,
                                                                      "limit": page_size})
            items = self._expect(data, "items", "/api/observations")
            for row in items:
                yield Observation.from_row(row)
            if not data.get("hasMore") or not items:
                return
            offset += len(items)

    def list_observations(self, project: str) -> list[Observation]:
        return list(self.iter_observations(project))

    def save_memory(self, text: str, project: str, title: str | None = None, metadata: dict | None = None) -> dict:
        """Store one memory as is. The route's schema is strict (unknown keys and nulls are a 400), so
        only ``text``, ``title``, ``project`` and ``metadata`` (an object) are sent, and None is omitted."""
        data = self._request("POST", "/api/memory/save", body=_without_none(
            {"text": text, "title": title, "project": project, "metadata": metadata}))
        self._expect(data, "id", "/api/memory/save")
        return data

    def delete_observation(self, oid: int) -> None:
        self._request("DELETE", f"/api/observation/{oid}")

    def forget_project(self, project: str) -> int:
        """Delete every observation of ``project``; returns how many were deleted.

        Uses memworker's one-call route when the Worker has it; otherwise (claude-mem has no such
        route) lists the project's observations and deletes them one by one.
        """
        try:
            data = self._request("DELETE", f"/api/projects/{quote(project, safe='')}")
            return int(self._expect(data, "deleted", "/api/projects"))
        except WorkerNotFound:
            pass
        ids = [o.id for o in self.iter_observations(project)]
        for oid in ids:
            self.delete_observation(oid)
        return len(ids)
