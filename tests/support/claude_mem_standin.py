"""A stand-in of the claude-mem 13.25.3 Worker routes, for the faults the real Worker cannot show.

The real Worker (``scripts/claude-mem-peer``, tests in ``test_claude_mem_real.py``) is the
reference; this stand-in copies what those tests see it do, so that client and fault tests run
without npm too:

- zod-like validation: a JSON ``null`` for an optional string is a 400 ``ValidationError``;
  ``/api/memory/save`` is strict (unknown keys and nulls are a 400);
- a ``tool_use_id`` already seen in a session is dropped silently (still answered ``queued``);
- the generator (its compressor) makes one observation per ``[D1:3] Speaker: text`` line;
- ``metadata`` is stored as a JSON string and returned by ``/api/search`` only;
- search without a vector store: the whole query is one FTS5-like phrase (case-insensitive,
  contiguous tokens, no stemming), ``totalResults`` is the number of rows returned;
- list fields as JSON strings; no route to forget a project (Express answers 404 with HTML); an
  ``Authorization`` header that is ignored; ``/api/health`` with ``dependencies``.
"""

from __future__ import annotations

import json
import re
import threading
import time
from contextlib import contextmanager
from typing import Iterator

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse

from locomo_kit.worker.embedded import free_port

TURN = re.compile(r"^\[(D\d+:\d+)\]\s+([^:\n]{1,60}):\s+(.+)$", re.MULTILINE)
TOKEN = re.compile(r"\w+")
UVX_MISSING = {"dependency": "uvx", "kind": "vector_search_unavailable",
               "message": "uvx executable not found on effective PATH for vector search (uvx)"}
CLAUDE_CLI_MISSING = {"dependency": "claude_cli", "kind": "setup_required",
                      "message": "Claude executable not found. Please either:\n1. Add \"claude\" to your system PATH"}


def _null_issues(body: dict, fields: tuple[str, ...]) -> list[dict]:
    return [{"code": "invalid_type", "expected": "string", "path": [f],
             "message": "Invalid input: expected string, received null"} for f in fields if f in body and body[f] is None]


def _invalid(issues: list[dict]) -> JSONResponse:
    return JSONResponse({"error": "ValidationError", "message": "Invalid request body", "issues": issues}, 400)


def _phrase_match(query: str, row: dict) -> bool:
    want = TOKEN.findall(query.lower())
    if not want:
        return False
    text = " ".join(str(row.get(k) or "") for k in ("title", "subtitle", "narrative", "text", "facts")).lower()
    have = TOKEN.findall(text)
    n = len(want)
    return any(have[i:i + n] == want for i in range(len(have) - n + 1))


def create_standin(process_delay: float = 0.01, dependencies: list[dict] | None = None,
                   summary_delay: float | None = None) -> FastAPI:
    """``summary_delay``: summaries are queued and computed (taking that long), as claude-mem does
    (``type=summarize`` in its queue); ``app.state.data["events"]`` then records ``(kind, session,
    time)`` for each init and each summary finished. Without it a summary is acknowledged only."""
    app = FastAPI()
    deps = [UVX_MISSING] if dependencies is None else dependencies
    state = {"sessions": {}, "obs": {}, "queue": [], "next": 1, "processing": False, "seen": set(), "events": []}
    lock = threading.Lock()

    def row(oid: int, project: str, sid: str, title: str, subtitle: str, narrative: str, facts: list[str],
            metadata: dict | None = None) -> dict:
        ms = int(time.time() * 1000)
        return {"id": oid, "memory_session_id": f"openrouter-{sid}-{ms}", "project": project, "type": "discovery",
                "title": title, "subtitle": subtitle, "narrative": narrative, "text": None, "facts": json.dumps(facts),
                "concepts": "[]", "files_read": "[]", "files_modified": "[]", "prompt_number": 1,
                "created_at": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()), "created_at_epoch": ms,
                "_metadata": json.dumps(metadata) if metadata is not None else None}

    def public(r: dict, with_metadata: bool) -> dict:
        out = {k: v for k, v in r.items() if k != "_metadata"}
        if with_metadata:
            out["metadata"] = r["_metadata"]
        return out

    def generator() -> None:
        while True:
            time.sleep(process_delay)
            with lock:
                if not state["queue"]:
                    continue
                state["processing"] = True
                sid, body = state["queue"].pop(0)
            if body.get("summary"):
                time.sleep(summary_delay or 0)
                with lock:
                    state["events"].append(("summary", sid, time.monotonic()))
                    state["processing"] = False
                continue
            response = body.get("tool_response", "")
            text = response if isinstance(response, str) else json.dumps(response)
            with lock:
                project = state["sessions"][sid]["project"]
                for m in TURN.finditer(text):
                    oid = state["next"]
                    state["next"] += 1
                    dia, speaker, said = m.group(1), m.group(2).strip(), m.group(3).strip()
                    state["obs"][oid] = row(oid, project, sid, f"{speaker}: {' '.join(said.split()[:8])}",
                                            f"Turn {dia}", f"[{dia}] {speaker}: {said}", [f"{speaker} said: {said}"])
                state["processing"] = False

    threading.Thread(target=generator, daemon=True).start()

    @app.get("/api/health")
    def health():
        return {"status": "ok", "version": "13.25.3", "pid": 1, "uptime": 1, "initialized": True,
                "ai": {"provider": "openrouter", "lastInteraction": None},
                "dependencies": {"degraded": bool(deps), "statuses": deps}}

    @app.get("/api/readiness")
    def readiness():
        return {"status": "ready"}

    @app.post("/api/sessions/init")
    async def init(request: Request):
        body = await request.json()
        issues = _null_issues(body, ("project", "prompt", "platformSource", "contentSessionId"))
        if not body.get("contentSessionId") and not issues:
            issues = [{"path": ["contentSessionId"], "message": "Required"}]
        if issues:
            return _invalid(issues)
        with lock:
            state["events"].append(("init", body["contentSessionId"], time.monotonic()))
            s = state["sessions"].setdefault(body["contentSessionId"], {"id": len(state["sessions"]) + 1,
                                                                       "project": body.get("project") or "x", "n": 0})
            s["n"] += 1
        return {"sessionDbId": s["id"], "promptNumber": s["n"], "skipped": False, "contextInjected": False,
                "status": "initialized"}

    @app.post("/api/sessions/observations")
    async def observations(request: Request):
        body = await request.json()
        issues = _null_issues(body, ("cwd", "tool_use_id", "platformSource", "contentSessionId", "tool_name"))
        if issues:
            return _invalid(issues)
        with lock:
            key = (body["contentSessionId"], body.get("tool_use_id"))
            if body.get("tool_use_id") and key in state["seen"]:
                return {"status": "queued"}  # dropped silently, as claude-mem does
            state["seen"].add(key)
            state["queue"].append((body["contentSessionId"], body))
        return {"status": "queued"}

    @app.post("/api/sessions/summarize")
    async def summarize(request: Request):
        body = await request.json()
        issues = _null_issues(body, ("last_assistant_message", "platformSource"))
        if issues:
            return _invalid(issues)
        if summary_delay is not None:
            with lock:
                state["queue"].append((body.get("contentSessionId"), {"summary": True}))
        return {"status": "queued"}

    @app.get("/api/processing-status")
    def status():
        with lock:
            return {"isProcessing": state["processing"], "queueDepth": len(state["queue"]) + int(state["processing"])}

    @app.get("/api/search")
    def search(query: str = "", project: str = "", limit: int = 20, format: str = ""):
        with lock:
            rows = [r for r in sorted(state["obs"].values(), key=lambda r: -r["id"])
                    if r["project"] == project and _phrase_match(query, r)][:limit]
        return {"observations": [public(r, True) for r in rows], "sessions": [], "prompts": [],
                "totalResults": len(rows), "query": query}

    @app.get("/api/observations")
    def listing(project: str = "", offset: int = 0, limit: int = 20):
        limit = min(limit, 100)
        with lock:
            rows = sorted((r for r in state["obs"].values() if r["project"] == project), key=lambda r: r["id"])
        return {"items": [public(r, False) for r in rows[offset: offset + limit]],
                "hasMore": offset + limit < len(rows), "offset": offset, "limit": limit}

    @app.get("/api/observation/{oid}")
    def get_one(oid: int):
        r = state["obs"].get(oid)
        return public(r, False) if r else JSONResponse({"error": "Observation not found"}, 404)

    @app.delete("/api/observation/{oid}")
    def delete_one(oid: int):
        with lock:
            if state["obs"].pop(oid, None) is None:
                return JSONResponse({"error": "Observation not found"}, 404)
        return {"success": True}

    @app.post("/api/memory/save")
    async def save(request: Request):
        body = await request.json()
        unknown = sorted(set(body) - {"text", "title", "project", "metadata"})
        issues = _null_issues(body, ("text", "title", "project"))
        if unknown:
            issues.append({"code": "unrecognized_keys", "keys": unknown, "path": [],
                           "message": f"Unrecognized key(s) in object: {', '.join(map(repr, unknown))}"})
        if "metadata" in body and not isinstance(body["metadata"], dict):
            issues.append({"code": "invalid_type", "expected": "record", "path": ["metadata"],
                           "message": "Invalid input: expected record"})
        if not isinstance(body.get("text"), str) or not body.get("text"):
            issues.append({"path": ["text"], "message": "Required"})
        if issues:
            return _invalid(issues)
        with lock:
            oid = state["next"]
            state["next"] += 1
            title = body.get("title") or body["text"][:60]
            state["obs"][oid] = row(oid, body.get("project") or "x", "manual", title, "Manual memory",
                                    body["text"], [], body.get("metadata"))
        return {"success": True, "id": oid, "title": title, "project": body.get("project"),
                "message": f"Memory saved as observation #{oid}"}

    @app.api_route("/api/projects/{name}", methods=["DELETE"])
    def no_such_route(name: str):
        return HTMLResponse(f"<pre>Cannot DELETE /api/projects/{name}</pre>", 404)

    app.state.data = state
    return app


@contextmanager
def serve(app: FastAPI) -> Iterator[str]:
    """Serve ``app`` on a free loopback port in a thread (a real HTTP server)."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("stand-in server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
