"""The HTTP API: claude-mem's Worker routes (see docs: claude-mem-api.md) on FastAPI.

Errors are JSON with a reason: 400 ``{error: "ValidationError", issues}`` for malformed or
invalid input (and a ``Host`` header that is not this Worker's), 401 for a wrong token, 404 for
unknown ids, 413 for oversized bodies, 503 ``{error: "Service initializing"}`` until the
embedder is loaded, 507 when the database cannot be written (disk full, read-only): nothing was
acknowledged, send it again. Any other failure is a JSON 500 that keeps the connection usable.

Every text field and JSON key a request stores is redacted first (``memworker.safety``).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import os
import threading
import time
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import FastAPI, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from memworker import __version__
from memworker.config import Settings
from memworker.safety import json_depth, redact_json
from memworker.service import MemoryService
from memworker.store import is_storage_error

OPEN_ROUTES = ("/api/health", "/api/readiness")
MAX_INT = 2**63 - 1  # SQLite's integers
MAX_JSON_DEPTH = 64
LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}
log = logging.getLogger("memworker")
Id = Annotated[int, Field(ge=0, le=MAX_INT)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="allow")


class InitBody(_Body):
    contentSessionId: str = Field(min_length=1, max_length=500)
    project: str | None = Field(default=None, max_length=500)
    prompt: str | None = None
    platformSource: str = "claude-code"


class ObservationBody(_Body):
    contentSessionId: str = Field(min_length=1, max_length=500)
    tool_name: str = Field(min_length=1, max_length=200)
    tool_input: Any = None
    tool_response: Any = None
    cwd: str | None = None
    tool_use_id: str | None = None
    platformSource: str = "claude-code"


class SummarizeBody(_Body):
    contentSessionId: str = Field(min_length=1, max_length=500)
    last_assistant_message: str | None = None
    platformSource: str = "claude-code"


class BatchBody(_Body):
    ids: list[Id] = Field(max_length=1000)


class SaveBody(_Body):
    text: str = Field(min_length=1)
    title: str | None = Field(default=None, max_length=500)
    project: str | None = Field(default=None, max_length=500)


def _error(status: int, error: str, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": error, "message": message, **extra}, status_code=status)


class BodyLimit:
    """Pure ASGI middleware: refuse bodies over ``limit`` bytes with 413, before they are parsed.

    A declared ``Content-Length`` over the limit is refused at once; a chunked body is read up to
    the limit and refused as soon as it passes it.
    """

    def __init__(self, app, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        too_large = _error(413, "PayloadTooLarge", f"Body over {self.limit} bytes")
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            return await too_large(scope, receive, send)
        chunks, seen = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunks.append(message.get("body", b""))
            seen += len(chunks[-1])
            if seen > self.limit:
                return await too_large(scope, receive, send)
            if not message.get("more_body"):
                break
        body, replayed = b"".join(chunks), False

        async def replay():
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


class Gate:
    """Pure ASGI middleware: answer ``check(request)``'s refusal instead of the route when it gives one.

    (Starlette's ``@app.middleware("http")`` runs every request through a task and a stream: it cost
    more than a search.)"""

    def __init__(self, app, check) -> None:
        self.app, self.check = app, check

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            refusal = self.check(Request(scope))
            if refusal is not None:
                return await refusal(scope, receive, send)
        await self.app(scope, receive, send)


class CatchAll:
    """Pure ASGI middleware: an unexpected exception becomes a JSON answer, and the keep-alive
    connection stays usable (Starlette's own handler re-raises, which makes the server drop it)."""

    def __init__(self, app, db_path: str) -> None:
        self.app, self.db_path = app, db_path

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = False

        async def tracking_send(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:
            if started:
                raise
            await _failure(exc, self.db_path)(scope, receive, send)


def _failure(exc: BaseException, db_path: str) -> JSONResponse:
    if isinstance(exc, RecursionError):
        return _error(400, "ValidationError", "JSON nested too deeply",
                      issues=[{"path": "", "message": f"nested more than {MAX_JSON_DEPTH} levels"}])
    if is_storage_error(exc):
        log.error("storage error: %s", exc)
        return _error(507, "InsufficientStorage",
                      f"The Worker could not write its database ({exc}); nothing was stored or acknowledged. "
                      f"Free space on the disk holding {db_path} (or make it writable), then send this again.")
    log.exception("unexpected error")
    return _error(500, "InternalError", f"{type(exc).__name__}: {str(exc)[:300]}")


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_hosts(settings: Settings) -> set[str] | None:
    """Host header names this Worker answers (DNS-rebinding guard); None: any (a wildcard bind)."""
    names = {h.strip().lower() for h in settings.allowed_hosts.split(",") if h.strip()}
    if settings.host in ("0.0.0.0", "::", ""):
        return None if not names else names | LOOPBACK_NAMES
    if is_loopback(settings.host):
        return names | LOOPBACK_NAMES
    return names | {settings.host.lower()} | LOOPBACK_NAMES


def _host_name(header: str) -> str:
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].split("]", 1)[0]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def _row(row: dict, ranked=None) -> dict:
    out = {k: row[k] for k in ("id", "memory_session_id", "project", "type", "title", "subtitle", "narrative",
                                "text", "facts", "concepts", "files_read", "files_modified", "prompt_number",
                                "created_at", "created_at_epoch", "metadata")}
    if ranked is not None:
        meta = json.loads(out["metadata"] or "{}")
        meta.update(score=round(ranked.score, 6), similarity=round(ranked.similarity, 6),
                    bm25=round(ranked.bm25, 6), cosine=round(ranked.cosine, 6))
        out["metadata"] = json.dumps(meta)
    return out


def _doc_param(name: str, kind: str, description: str) -> dict:
    return {"name": name, "in": "query", "required": False, "schema": {"type": kind}, "description": description}


def _int_query(params, name: str, default: int | None, low: int, high: int) -> int | None:
    """An integer query parameter within [low, high] (absent or empty: ``default``); else a 400."""
    raw = params.get(name)
    if raw is None or raw == "":
        return default
    body = raw[1:] if raw[:1] in "+-" else raw
    if not (body.isascii() and body.isdigit()):
        raise RequestValidationError([{"loc": ("query", name), "type": "int_parsing",
                                       "msg": "Input should be a valid integer, unable to parse string as an integer"}])
    value = int(raw)
    if not low <= value <= high:
        raise RequestValidationError([{"loc": ("query", name), "type": "value_error",
                                       "msg": f"Input should be between {low} and {high}"}])
    return value


def _epoch_param(value: str | None, name: str) -> int | None:
    if value in (None, ""):
        return None
    if value.isascii() and value.isdigit():
        if int(value) > MAX_INT:
            raise RequestValidationError([{"loc": ("query", name), "msg": "epoch ms out of range", "type": "value_error"}])
        return int(value)
    from datetime import datetime, timezone

    try:
        d = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise RequestValidationError([{"loc": ("query", name), "msg": "expected ISO date or epoch ms", "type": "value_error"}])
    return int((d if d.tzinfo else d.replace(tzinfo=timezone.utc)).timestamp() * 1000)


def create_app(settings: Settings, service: MemoryService | None = None) -> FastAPI:
    svc = service or MemoryService(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        svc.start()
        yield
        svc.stop()

    app = FastAPI(title="memworker", version=__version__, lifespan=lifespan)
    app.state.service = svc

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException):
        from http import HTTPStatus

        error = HTTPStatus(exc.status_code).phrase.replace(" ", "") if exc.status_code in HTTPStatus._value2member_map_ \
            else "HTTPError"
        detail = str(exc.detail)
        if exc.status_code == 400 and "parsing the body" in detail:  # e.g. JSON nested beyond the parser's limit
            return JSONResponse({"error": "ValidationError", "issues": [{"path": "", "message": f"Unreadable JSON body: {detail}"}]}, 400)
        return JSONResponse({"error": error, "message": detail}, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        issues = []
        for e in exc.errors():
            message = e.get("msg", "")
            if e.get("type") == "json_invalid":
                message = f"Malformed JSON: {(e.get('ctx') or {}).get('error', message)}"
            issues.append({"path": ".".join(str(p) for p in e.get("loc", ()) if p != "body"), "message": message})
        return JSONResponse({"error": "ValidationError", "issues": issues}, status_code=400)

    hosts = allowed_hosts(settings)
    search_slots = threading.BoundedSemaphore(max(1, settings.search_concurrency))

    def _authorized(request: Request) -> bool:
        got = request.headers.get("authorization", "")
        return hmac.compare_digest(got.encode(), f"Bearer {settings.token}".encode())

    def gate(request: Request) -> JSONResponse | None:
        """The refusal for a request this Worker must not serve (wrong Host, no token, not ready), or None."""
        path = request.url.path
        if hosts is not None and _host_name(request.headers.get("host", "")) not in hosts:
            return _error(400, "HostNotAllowed", f"Host {request.headers.get('host', '')!r} is not this Worker's "
                          f"(DNS rebinding guard); allowed: {', '.join(sorted(hosts))} (MEMWORKER_ALLOWED_HOSTS)")
        if path not in OPEN_ROUTES and settings.token and not _authorized(request):
            return _error(401, "Unauthorized", "Invalid or missing bearer token")
        if path.startswith("/api/") and path not in OPEN_ROUTES and not svc.ready.is_set():
            return _error(503, "Service initializing", "The Worker is loading; poll /api/readiness")
        return None

    app.add_middleware(Gate, check=gate)
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)
    app.add_middleware(CatchAll, db_path=settings.db_path)

    @app.get("/api/health")
    def health(request: Request) -> dict:
        basic = {"status": "ok", "name": "memworker", "initialized": svc.ready.is_set()}
        if settings.token and not _authorized(request):
            return basic  # details (version, settings, counts) need the token
        return {**basic, "version": __version__, "pid": os.getpid(), "uptime": round(time.time() - svc.started, 3),
                "ai": {"provider": svc.extractor.name, "embedder": settings.embedder},
                "settings": settings.public(), "stats": svc.store.stats(), "queue": {"stalled": svc.stalled}}

    @app.get("/api/readiness")
    def readiness():
        if not svc.ready.is_set():
            return JSONResponse({"status": "initializing"}, status_code=503)
        if svc.stalled:
            return JSONResponse({"status": "degraded", "reason": f"the queue cannot make progress: {svc.stalled}"},
                                status_code=503)
        return {"status": "ready"}

    def clean(value: Any) -> Any:
        return redact_json(value)[0]

    @app.post("/api/sessions/init")
    def init(body: InitBody) -> dict:
        b = clean(body.model_dump())
        row, _created = svc.store.init_session(b["platformSource"], b["contentSessionId"], b["project"] or "default",
                                               b["prompt"])
        return {"sessionDbId": row["id"], "promptNumber": row["prompt_number"], "skipped": False,
                "contextInjected": False, "status": "initialized", "project": row["project"]}

    @app.post("/api/sessions/observations")
    def observations(body: ObservationBody):
        if max(json_depth(body.tool_input), json_depth(body.tool_response)) > MAX_JSON_DEPTH:
            raise RecursionError
        payload, redacted = redact_json(body.model_dump())
        session = svc.store.find_session(payload["platformSource"], payload["contentSessionId"])
        if session is None:
            return {"status": "skipped", "reason": "session_not_initialized"}
        if body.tool_response in (None, "", [], {}):
            return {"status": "skipped", "reason": "empty_tool_response"}
        queue_id, state = svc.store.enqueue(session["id"], "observation", payload, payload["tool_use_id"])
        if state == "duplicate":
            return {"status": "skipped", "reason": "duplicate"}
        svc.wake()
        return {"status": "queued", "queueId": queue_id, "redacted": sorted(set(redacted)),
                **({"requeued": True} if state == "requeued" else {})}

    @app.post("/api/sessions/summarize")
    def summarize(body: SummarizeBody) -> dict:
        payload = clean(body.model_dump())
        session = svc.store.find_session(payload["platformSource"], payload["contentSessionId"])
        if session is None:
            return {"status": "skipped", "reason": "session_not_initialized"}
        svc.store.enqueue(session["id"], "summarize", payload)
        svc.wake()
        return {"status": "queued"}

    @app.get("/api/processing-status")
    def processing_status() -> dict:
        counts = svc.store.queue_counts()
        return {"isProcessing": svc.is_processing(), "queueDepth": counts.get("pending", 0),
                "failed": counts.get("failed", 0), "done": counts.get("done", 0),
                "retrying": counts.get("retrying", 0), "stalled": svc.stalled}

    search_params = [
        _doc_param("query", "string", f"what to search for (at most {settings.max_query_chars} characters)"),
        _doc_param("project", "string", "the project to search"),
        _doc_param("limit", "integer", f"results, 1-100 (default {settings.top_k})"),
        _doc_param("offset", "integer", "results to skip"),
        _doc_param("context_budget", "integer", "tokens: spans of whole turns packed to this budget (memworker's own)"),
        _doc_param("format", "string", "json: rows; else claude-mem's text answer"),
        *(_doc_param(n, "string", d) for n, d in (("type", "observations (default) or all"), ("obs_type", "a memory type"),
                                                   ("dateStart", "ISO date or epoch ms"), ("dateEnd", "ISO date or epoch ms"),
                                                   ("orderBy", "accepted, ignored: results are ranked")))]

    @app.get("/api/search", openapi_extra={"parameters": search_params})
    def search(request: Request):
        # Parameters are read here, not declared: FastAPI's per-parameter validation cost more than the search.
        p = request.query_params
        query = p.get("query", "")
        if len(query) > settings.max_query_chars:
            raise RequestValidationError([{"loc": ("query", "query"), "type": "string_too_long",
                                           "msg": f"String should have at most {settings.max_query_chars} characters"}])
        limit = _int_query(p, "limit", settings.top_k, 1, 100)
        offset = _int_query(p, "offset", 0, 0, MAX_INT)
        context_budget = _int_query(p, "context_budget", None, 1, 1_000_000)
        if p.get("type", "observations") not in ("observations", "all"):
            results = []
        else:
            since, until = _epoch_param(p.get("dateStart"), "dateStart"), _epoch_param(p.get("dateEnd"), "dateEnd")
            with search_slots:
                results = svc.search(query, clean(p.get("project")), limit, since, until, p.get("obs_type"), offset,
                                     context_budget)
        rows = [_row(r, ranked) for r, ranked in results]
        if p.get("format") == "json":  # JSONResponse: rows are plain JSON already (FastAPI's encoder costs more)
            return JSONResponse({"observations": rows, "sessions": [], "prompts": [], "totalResults": len(rows),
                                 "query": query})
        lines = [f"Found {len(rows)} result(s) for \"{query}\""] + [f"#{r['id']} [{r['type']}] {r['narrative']}" for r in rows]
        return JSONResponse({"content": [{"type": "text", "text": "\n".join(lines)}]})

    @app.get("/api/observations")
    def list_observations(project: str | None = None, offset: int = Query(0, ge=0, le=MAX_INT),
                          limit: int = Query(20, ge=1, le=100)):
        items, more = svc.store.list_project(clean(project), offset, limit)
        return {"items": items, "hasMore": more, "offset": offset, "limit": limit}

    @app.get("/api/observation/{oid}")
    def get_observation(oid: Annotated[int, Path(ge=0, le=MAX_INT)]):
        row = svc.store.rows([oid]).get(oid)
        return _row(row) if row else _error(404, "NotFound", f"Observation {oid} not found")

    @app.post("/api/observations/batch")
    def batch(body: BatchBody) -> list:
        rows = svc.store.rows(body.ids)
        return [_row(rows[i]) for i in body.ids if i in rows]

    @app.delete("/api/observation/{oid}")
    def delete_observation(oid: Annotated[int, Path(ge=0, le=MAX_INT)]):
        if svc.store.delete([oid]) == 0:
            return _error(404, "NotFound", f"Observation {oid} not found")
        return {"success": True, "id": oid}

    @app.delete("/api/projects/{project}")
    def forget_project(project: str) -> dict:
        deleted = svc.store.delete_project(clean(project))
        return {"success": True, "project": project, "deleted": deleted["observations"], "sessions": deleted["sessions"]}

    @app.post("/api/memory/save")
    def save(body: SaveBody) -> dict:
        b = clean(body.model_dump())
        saved = svc.save_memory(b["text"], b["title"], b["project"] or "default")
        return {"success": True, **saved, "message": f"Memory saved as observation #{saved['id']}"}

    return app

