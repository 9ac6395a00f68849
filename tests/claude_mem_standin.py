"""A stand-in of the real claude-mem Worker routes (shapes from docs claude-mem-api.md).

Differences from memworker that the kit must cope with: list fields and metadata as claude-mem
sends them (JSON strings, ``metadata`` null), no route to forget a project (Express answers 404
with an HTML page), an in-memory queue processed asynchronously, no source-turn metadata, and an
``Authorization`` header that is ignored.
"""

from __future__ import annotations

import json
import threading
import time
from contextlib import contextmanager
from typing import Iterator

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse

from locomo_kit.embedded import free_port


def create_standin(process_delay: float = 0.01) -> FastAPI:
    app = FastAPI()
    state = {"sessions": {}, "obs": {}, "queue": [], "next": 1, "processing": False}
    lock = threading.Lock()

    def row(oid: int, project: str, sid: str, title: str, narrative: str, facts: list[str]) -> dict:
        ms = int(time.time() * 1000)
        return {"id": oid, "memory_session_id": f"mem-{sid}", "project": project, "type": "discovery",
                "title": title, "subtitle": "", "narrative": narrative, "text": None, "facts": json.dumps(facts),
                "concepts": "[]", "files_read": "[]", "files_modified": "[]", "prompt_number": 1,
                "created_at": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()), "created_at_epoch": ms,
                "metadata": None}

    def generator() -> None:
        while True:
            time.sleep(process_delay)
            with lock:
                if not state["queue"]:
                    continue
                state["processing"] = True
                sid, body = state["queue"].pop(0)
            lines = [ln for ln in str(body.get("tool_response", "")).splitlines() if ": " in ln]
            with lock:
                project = state["sessions"][sid]["project"]
                for chunk in range(0, len(lines), 5):
                    oid = state["next"]
                    state["next"] += 1
                    part = lines[chunk: chunk + 5]
                    state["obs"][oid] = row(oid, project, sid, part[0][:60], " ".join(part), part)
                state["processing"] = False

    threading.Thread(target=generator, daemon=True).start()

    @app.get("/api/health")
    def health():
        return {"status": "ok", "version": "13.15.3", "pid": 1, "uptime": 1, "initialized": True, "ai": {"provider": "claude"}}

    @app.get("/api/readiness")
    def readiness():
        return {"status": "ready"}

    @app.post("/api/sessions/init")
    async def init(request: Request):
        body = await request.json()
        if not body.get("contentSessionId"):
            return JSONResponse({"error": "ValidationError", "issues": [{"path": ["contentSessionId"], "message": "Required"}]}, 400)
        with lock:
            s = state["sessions"].setdefault(body["contentSessionId"], {"id": len(state["sessions"]) + 1,
                                                                       "project": body.get("project") or "x", "n": 0})
            s["n"] += 1
        return {"sessionDbId": s["id"], "promptNumber": s["n"], "skipped": False, "contextInjected": False,
                "status": "initialized"}

    @app.post("/api/sessions/observations")
    async def observations(request: Request):
        body = await request.json()
        with lock:
            state["queue"].append((body["contentSessionId"], body))
        return {"status": "queued"}

    @app.post("/api/sessions/summarize")
    async def summarize(request: Request):
        return {"status": "queued"}

    @app.get("/api/processing-status")
    def status():
        with lock:
            return {"isProcessing": state["processing"], "queueDepth": len(state["queue"]) + int(state["processing"])}

    @app.get("/api/search")
    def search(query: str = "", project: str = "", limit: int = 20, format: str = ""):
        words = set(query.lower().split())
        with lock:
            rows = [r for r in state["obs"].values() if r["project"] == project]
        rows.sort(key=lambda r: -len(words & set(r["narrative"].lower().split())))
        rows = rows[:limit]
        return {"observations": rows, "sessions": [], "prompts": [], "totalResults": len(rows), "query": query}

    @app.get("/api/observations")
    def listing(project: str = "", offset: int = 0, limit: int = 20):
        limit = min(limit, 100)
        with lock:
            rows = sorted((r for r in state["obs"].values() if r["project"] == project), key=lambda r: r["id"])
        return {"items": rows[offset: offset + limit], "hasMore": offset + limit < len(rows), "offset": offset, "limit": limit}

    @app.get("/api/observation/{oid}")
    def get_one(oid: int):
        r = state["obs"].get(oid)
        return r if r else JSONResponse({"error": "Observation not found"}, 404)

    @app.delete("/api/observation/{oid}")
    def delete_one(oid: int):
        with lock:
            if state["obs"].pop(oid, None) is None:
                return JSONResponse({"error": "Observation not found"}, 404)
        return {"success": True}

    @app.post("/api/memory/save")
    async def save(request: Request):
        body = await request.json()
        with lock:
            oid = state["next"]
            state["next"] += 1
            state["obs"][oid] = row(oid, body.get("project") or "x", "manual", body.get("title") or body["text"][:60],
                                    body["text"], [])
        return {"success": True, "id": oid, "title": state["obs"][oid]["title"], "project": body.get("project"),
                "message": "saved"}

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
