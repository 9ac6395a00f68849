"""The HTTP API: claude-mem's Worker routes (see docs: claude-mem-api.md) on FastAPI.

Errors are JSON with a reason: 400 ``{error: "ValidationError", issues}`` for malformed or
invalid input, 401 for a wrong token, 404 for unknown ids, 413 for oversized bodies, 503
``{error: "Service initializing"}`` until the embedder is loaded.
"""

from __future__ import annotations

import hmac
import json
import os
import time
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from memworker import __version__
from memworker.config import Settings
from memworker.safety import redact_json
from memworker.service import MemoryService

OPEN_ROUTES = ("/api/health", "/api/readiness")


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
    ids: list[int] = Field(max_length=1000)


class SaveBody(_Body):
    text: str = Field(min_length=1)
    title: str | None = Field(default=None, max_length=500)
    project: str | None = Field(default=None, max_length=500)


def _error(status: int, error: str, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": error, "message": message, **extra}, status_code=status)


class BodyLimit:
    """Pure ASGI middleware: refuse bodies over ``limit`` bytes with 413, before they are parsed."""

    def __init__(self, app, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            return await _error(413, "PayloadTooLarge", f"Body over {self.limit} bytes")(scope, receive, send)
        seen = 0

        async def limited():
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit:
                raise _TooLarge()
            return message

        try:
            await self.app(scope, limited, send)
        except _TooLarge:
            await _error(413, "PayloadTooLarge", f"Body over {self.limit} bytes")(scope, receive, send)


class _TooLarge(Exception):
    pass


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


def _epoch_param(value: str | None, name: str) -> int | None:
    if value in (None, ""):
        return None
    if value.isdigit():
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

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        issues = []
        for e in exc.errors():
            message = e.get("msg", "")
            if e.get("type") == "json_invalid":
                message = f"Malformed JSON: {(e.get('ctx') or {}).get('error', message)}"
            issues.append({"path": ".".join(str(p) for p in e.get("loc", ()) if p != "body"), "message": message})
        return JSONResponse({"error": "ValidationError", "issues": issues}, status_code=400)

    @app.middleware("http")
    async def _gate(request: Request, call_next):
        path = request.url.path
        if path.startswith("/api/") and path not in OPEN_ROUTES:
            if settings.token:
                got = request.headers.get("authorization", "")
                if not hmac.compare_digest(got.encode(), f"Bearer {settings.token}".encode()):
                    return _error(401, "Unauthorized", "Invalid or missing bearer token")
            if not svc.ready.is_set():
                return _error(503, "Service initializing", "The Worker is loading; poll /api/readiness")
        return await call_next(request)

    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)

    @app.get("/api/health")
    def health() -> dict:
        return {"status": "ok", "version": __version__, "name": "memworker", "pid": os.getpid(),
                "uptime": round(time.time() - svc.started, 3), "initialized": svc.ready.is_set(),
                "ai": {"provider": svc.extractor.name, "embedder": settings.embedder},
                "settings": settings.public(), "stats": svc.store.stats()}

    @app.get("/api/readiness")
    def readiness():
        if svc.ready.is_set():
            return {"status": "ready"}
        return JSONResponse({"status": "initializing"}, status_code=503)

    @app.post("/api/sessions/init")
    def init(body: InitBody) -> dict:
        project = body.project or "default"
        row, _created = svc.store.init_session(body.platformSource, body.contentSessionId, project, body.prompt)
        return {"sessionDbId": row["id"], "promptNumber": row["prompt_number"], "skipped": False,
                "contextInjected": False, "status": "initialized", "project": row["project"]}

    @app.post("/api/sessions/observations")
    def observations(body: ObservationBody) -> dict:
        session = svc.store.find_session(body.platformSource, body.contentSessionId)
        if session is None:
            return {"status": "skipped", "reason": "session_not_initialized"}
        if body.tool_response in (None, "", [], {}):
            return {"status": "skipped", "reason": "empty_tool_response"}
        payload, redacted = redact_json(body.model_dump())
        queue_id = svc.store.enqueue(session["id"], "observation", payload, body.tool_use_id)
        if queue_id is None:
            return {"status": "skipped", "reason": "duplicate"}
        svc.wake()
        return {"status": "queued", "queueId": queue_id, "redacted": sorted(set(redacted))}

    @app.post("/api/sessions/summarize")
    def summarize(body: SummarizeBody) -> dict:
        session = svc.store.find_session(body.platformSource, body.contentSessionId)
        if session is None:
            return {"status": "skipped", "reason": "session_not_initialized"}
        payload, _ = redact_json(body.model_dump())
        svc.store.enqueue(session["id"], "summarize", payload)
        svc.wake()
        return {"status": "queued"}

    @app.get("/api/processing-status")
    def processing_status() -> dict:
        counts = svc.store.queue_counts()
        return {"isProcessing": svc.is_processing(), "queueDepth": counts.get("pending", 0),
                "failed": counts.get("failed", 0), "done": counts.get("done", 0)}

    @app.get("/api/search")
    def search(query: str = Query("", max_length=settings.max_query_chars), project: str | None = None,
               limit: int = Query(settings.top_k, ge=1, le=100), offset: int = Query(0, ge=0),
               type: str = "observations", format: str | None = None, obs_type: str | None = None,
               dateStart: str | None = None, dateEnd: str | None = None, orderBy: str | None = None,
               context_budget: int | None = Query(None, ge=1, le=1_000_000)):
        if type not in ("observations", "all"):
            results = []
        else:
            results = svc.search(query, project, limit, _epoch_param(dateStart, "dateStart"),
                                 _epoch_param(dateEnd, "dateEnd"), obs_type, offset, context_budget)
        rows = [_row(r, ranked) for r, ranked in results]
        if format == "json":
            return {"observations": rows, "sessions": [], "prompts": [], "totalResults": len(rows), "query": query}
        lines = [f"Found {len(rows)} result(s) for \"{query}\""] + [f"#{r['id']} [{r['type']}] {r['narrative']}" for r in rows]
        return {"content": [{"type": "text", "text": "\n".join(lines)}]}

    @app.get("/api/observations")
    def list_observations(project: str | None = None, offset: int = Query(0, ge=0), limit: int = Query(20, ge=1, le=100)):
        items, more = svc.store.list_project(project, offset, limit)
        return {"items": items, "hasMore": more, "offset": offset, "limit": limit}

    @app.get("/api/observation/{oid}")
    def get_observation(oid: int):
        row = svc.store.rows([oid]).get(oid)
        return _row(row) if row else _error(404, "NotFound", f"Observation {oid} not found")

    @app.post("/api/observations/batch")
    def batch(body: BatchBody) -> list:
        rows = svc.store.rows(body.ids)
        return [_row(rows[i]) for i in body.ids if i in rows]

    @app.delete("/api/observation/{oid}")
    def delete_observation(oid: int):
        if svc.store.delete([oid]) == 0:
            return _error(404, "NotFound", f"Observation {oid} not found")
        return {"success": True, "id": oid}

    @app.delete("/api/projects/{project}")
    def forget_project(project: str) -> dict:
        deleted = svc.store.delete_project(project)
        return {"success": True, "project": project, "deleted": deleted["observations"], "sessions": deleted["sessions"]}

    @app.post("/api/memory/save")
    def save(body: SaveBody) -> dict:
        saved = svc.save_memory(body.text, body.title, body.project or "default")
        return {"success": True, **saved, "message": f"Memory saved as observation #{saved['id']}"}

    return app

