"""A loopback stand-in of the Anthropic Messages API and its Message Batches endpoints.

It behaves like the real API where the kit depends on it (shapes as the SDK's types define them):
- ``POST /v1/messages``: key check (``x-api-key`` or ``Authorization: Bearer``; 401
  ``authentication_error``), unknown model → 404 ``not_found_error``, sampling parameters on the
  current API version → 400, a configurable latency (asyncio: concurrent calls overlap), a
  concurrency limit answered with 429 ``rate_limit_error`` and ``retry-after``, and an outage switch
  (every call answered 529 ``overloaded_error`` or 500 while it is on).
- ``POST /v1/messages/batches`` (≤ 100,000 requests, unique ``custom_id`` matching
  ``^[a-zA-Z0-9_-]{1,64}$``), ``GET …/{id}`` (``in_progress`` until processed, then ``ended`` with
  counts and an absolute ``results_url``), ``GET …/{id}/results`` (JSONL, in shuffled order, only once
  ended), ``POST …/{id}/cancel``. ``hold_batches`` keeps batches in progress until released;
  ``batch_errors`` makes chosen custom_ids come back ``errored`` (once, but for ``invalid_request_error``).
Replies come from ``responder(body) -> text``; usage counts about 4 characters a token.

Run as a script to serve it from another process: ``python tests/support/anthropic_standin.py --port P --latency 1``.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import random
import re
import threading
import time
import uuid
from datetime import datetime, timezone
from typing import Callable

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

CURRENT_API_VERSION = "2026-10-21"
CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_BATCH_REQUESTS = 100_000


def error(status: int, kind: str, message: str, headers: dict | None = None) -> JSONResponse:
    return JSONResponse({"type": "error", "error": {"type": kind, "message": message},
                         "request_id": f"req_{uuid.uuid4().hex[:12]}"}, status, headers=headers)


def judge_like_reply(body: dict) -> str:
    """A deterministic reply: a playbook JSON score, a mem0 label, or a short answer."""
    text = json.dumps(body.get("messages", []), sort_keys=True) + str(body.get("system", ""))
    h = int(hashlib.sha256(text.encode()).hexdigest(), 16)
    if "score" in str(body.get("system", "")).lower():
        return json.dumps({"score": h % 101, "explanation": "stand-in grade"})
    if "CORRECT" in text:
        return json.dumps({"explanation": "stand-in", "label": "CORRECT" if h % 2 else "WRONG"})
    return f"stand-in answer {h % 1000}"


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat().replace("+00:00", "Z")


class AnthropicStandin:
    def __init__(self, latency: float = 0.0, max_in_flight: int | None = None, retry_after: float = 1.0,
                 api_keys: set[str] | None = None, models: set[str] | None = None,
                 responder: Callable[[dict], str] = judge_like_reply, batch_seconds: float = 0.2) -> None:
        self.latency, self.max_in_flight, self.retry_after = latency, max_in_flight, retry_after
        self.api_keys, self.models, self.responder = api_keys, models, responder
        self.batch_seconds = batch_seconds
        self.outage: int | None = None  # a status (529, 500) every message call gets while set
        self.outage_after: tuple[int, int] | None = None  # (answered calls, status): an outage that starts later
        self.hold_batches = False
        self.batch_errors: dict[str, str] = {}  # custom_id -> error type for its result
        self.in_flight = self.peak_in_flight = 0
        self.requests: list[dict] = []  # every call: path, headers, body, status, time
        self.batches: dict[str, dict] = {}
        self.lock = threading.Lock()
        self.base_url = ""  # set by the server runner, for results_url

    # -- helpers --------------------------------------------------------------------------------
    def _log(self, path: str, headers: dict, body, status: int) -> None:
        with self.lock:
            self.requests.append({"path": path, "headers": headers, "body": body, "status": status,
                                  "time": time.monotonic()})

    def message_calls(self, status: int | None = None) -> list[dict]:
        return [r for r in self.requests if r["path"] == "/v1/messages" and (status is None or r["status"] == status)]

    def _auth(self, headers: dict) -> JSONResponse | None:
        if self.api_keys is None:
            return None
        key = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ").strip()
        if key not in self.api_keys:
            return error(401, "authentication_error", "invalid x-api-key")
        return None

    def _validate(self, body: dict, headers: dict) -> JSONResponse | None:
        for field in ("model", "max_tokens", "messages"):
            if field not in body:
                return error(400, "invalid_request_error", f"{field}: Field required")
        if not isinstance(body["max_tokens"], int) or body["max_tokens"] < 1:
            return error(400, "invalid_request_error", "max_tokens: must be at least 1")
        sampling = [k for k in ("temperature", "top_p", "top_k") if k in body]
        if headers.get("anthropic-version", CURRENT_API_VERSION) == CURRENT_API_VERSION and sampling:
            return error(400, "invalid_request_error", f"{sampling[0]}: Extra inputs are not permitted")
        if self.models is not None and body["model"] not in self.models:
            return error(404, "not_found_error", f"model: {body['model']}")
        return None

    def message(self, body: dict) -> dict:
        text = self.responder(body)
        chars = len(json.dumps(body.get("messages", []))) + len(str(body.get("system", "")))
        return {"id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant", "model": body["model"],
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": max(1, chars // 4), "output_tokens": max(1, len(text) // 4)}}

    def _batch_view(self, b: dict) -> dict:
        now = time.time()
        if b["status"] == "in_progress" and not self.hold_batches and now >= b["ready_at"]:
            self._finish(b, canceled=False)
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        if b["status"] == "ended":
            for r in b["results"]:
                counts[r["result"]["type"]] += 1
        else:
            counts["processing"] = len(b["requests"])
        return {"id": b["id"], "type": "message_batch", "processing_status": b["status"], "request_counts": counts,
                "created_at": _iso(b["created"]), "expires_at": _iso(b["created"] + 86400),
                "ended_at": _iso(b["ended"]) if b.get("ended") else None, "archived_at": None,
                "cancel_initiated_at": _iso(b["cancel_at"]) if b.get("cancel_at") else None,
                "results_url": f"{self.base_url}/v1/messages/batches/{b['id']}/results" if b["status"] == "ended" else None}

    def _finish(self, b: dict, canceled: bool) -> None:
        results = []
        for req in b["requests"]:
            cid = req["custom_id"]
            if canceled:
                result = {"type": "canceled"}
            elif cid in self.batch_errors:  # a transient error happens once; a rejected request stays rejected
                kind = self.batch_errors[cid]
                if kind != "invalid_request_error":
                    del self.batch_errors[cid]
                result = {"type": "errored", "error": {"type": "error", "error": {"type": kind, "message": kind}}}
            else:
                bad = self._validate(req["params"], b["headers"])
                if bad is not None:
                    result = {"type": "errored", "error": json.loads(bad.body)}
                else:
                    result = {"type": "succeeded", "message": self.message(req["params"])}
            results.append({"custom_id": cid, "result": result})
        random.shuffle(results)  # like the real API: not in request order
        b.update(status="ended", ended=time.time(), results=results)


def create_app(s: AnthropicStandin) -> FastAPI:
    app = FastAPI()

    def hdrs(request: Request) -> dict:
        return {k.lower(): v for k, v in request.headers.items()}

    @app.post("/v1/messages")
    async def messages(request: Request):
        headers, body = hdrs(request), await request.json()
        bad = s._auth(headers) or s._validate(body, headers)
        if bad is None and s.outage:
            bad = error(s.outage, "overloaded_error" if s.outage == 529 else "api_error", "simulated outage")
        if bad is None:
            with s.lock:
                if s.max_in_flight is not None and s.in_flight >= s.max_in_flight:
                    bad = error(429, "rate_limit_error", "concurrency limit exceeded",
                                {"retry-after": str(s.retry_after)})
                else:
                    s.in_flight += 1
                    s.peak_in_flight = max(s.peak_in_flight, s.in_flight)
        if bad is not None:
            s._log("/v1/messages", headers, body, bad.status_code)
            return bad
        try:
            if s.latency:
                await asyncio.sleep(s.latency)
            reply = s.message(body)
        finally:
            with s.lock:
                s.in_flight -= 1
        s._log("/v1/messages", headers, body, 200)
        if s.outage_after and len(s.message_calls(200)) >= s.outage_after[0]:
            s.outage, s.outage_after = s.outage_after[1], None
        return JSONResponse(reply)

    @app.post("/_standin/outage")
    async def outage(request: Request):
        """Test control (not an Anthropic route): ``{"status": 529}`` starts an outage, ``{"status": null}``
        ends it; ``{"status": 529, "after": N}`` starts it once N more calls have been answered."""
        body = await request.json()
        after = body.get("after")
        if after:
            s.outage_after = (len(s.message_calls(200)) + int(after), body.get("status"))
        else:
            s.outage = body.get("status")
        return {"outage": s.outage, "answered": len(s.message_calls(200))}

    @app.post("/v1/messages/batches")
    async def create_batch(request: Request):
        headers, body = hdrs(request), await request.json()
        bad = s._auth(headers)
        reqs = body.get("requests")
        if bad is None and (not isinstance(reqs, list) or not 1 <= len(reqs) <= MAX_BATCH_REQUESTS):
            bad = error(400, "invalid_request_error", "requests: between 1 and 100000 items")
        if bad is None:
            ids = [r.get("custom_id", "") for r in reqs]
            if any(not CUSTOM_ID.match(str(i)) for i in ids):
                bad = error(400, "invalid_request_error", "custom_id: must match ^[a-zA-Z0-9_-]{1,64}$")
            elif len(set(ids)) != len(ids):
                bad = error(400, "invalid_request_error", "custom_id: must be unique within the batch")
            elif any(not isinstance(r.get("params"), dict) for r in reqs):
                bad = error(400, "invalid_request_error", "params: Field required")
        s._log("/v1/messages/batches", headers, body, bad.status_code if bad else 200)
        if bad is not None:
            return bad
        bid = f"msgbatch_{uuid.uuid4().hex[:24]}"
        with s.lock:
            s.batches[bid] = {"id": bid, "requests": reqs, "headers": headers, "status": "in_progress",
                              "created": time.time(), "ready_at": time.time() + s.batch_seconds}
            return JSONResponse(s._batch_view(s.batches[bid]))

    @app.get("/v1/messages/batches/{bid}")
    async def retrieve(bid: str, request: Request):
        headers = hdrs(request)
        s._log(f"/v1/messages/batches/{bid}", headers, None, 200)
        bad = s._auth(headers)
        if bad is not None:
            return bad
        with s.lock:
            if bid not in s.batches:
                return error(404, "not_found_error", f"message batch {bid} not found")
            return JSONResponse(s._batch_view(s.batches[bid]))

    @app.get("/v1/messages/batches/{bid}/results")
    async def results(bid: str, request: Request):
        headers = hdrs(request)
        s._log(f"/v1/messages/batches/{bid}/results", headers, None, 200)
        bad = s._auth(headers)
        if bad is not None:
            return bad
        with s.lock:
            b = s.batches.get(bid)
            if b is None or b["status"] != "ended":
                return error(404 if b is None else 400, "not_found_error" if b is None else "invalid_request_error",
                             f"message batch {bid} has no results yet")
            lines = "".join(json.dumps(r) + "\n" for r in b["results"])
        return Response(lines, media_type="application/binary")

    @app.post("/v1/messages/batches/{bid}/cancel")
    async def cancel(bid: str, request: Request):
        headers = hdrs(request)
        s._log(f"/v1/messages/batches/{bid}/cancel", headers, None, 200)
        with s.lock:
            b = s.batches.get(bid)
            if b is None:
                return error(404, "not_found_error", f"message batch {bid} not found")
            if b["status"] == "in_progress":
                b["cancel_at"] = time.time()
                s._finish(b, canceled=True)
            return JSONResponse(s._batch_view(b))

    return app


def main() -> None:
    import uvicorn

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--latency", type=float, default=1.0)
    p.add_argument("--max-in-flight", type=int)
    a = p.parse_args()
    s = AnthropicStandin(latency=a.latency, max_in_flight=a.max_in_flight)
    s.base_url = f"http://127.0.0.1:{a.port}"
    uvicorn.run(create_app(s), host="127.0.0.1", port=a.port, log_level="warning", backlog=2048)


if __name__ == "__main__":
    main()


def running(s: AnthropicStandin):
    """Serve ``s`` on a free loopback port in a thread; yields its base URL."""
    from contextlib import contextmanager

    from support.claude_mem_standin import serve

    @contextmanager
    def ctx():
        with serve(create_app(s)) as url:
            s.base_url = url
            yield url

    return ctx()
