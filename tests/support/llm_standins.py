"""Stand-ins, on loopback, of the Anthropic Messages API and an OpenAI-compatible chat API.

Each records every request (headers and JSON body) and answers from a script: a list of
``(status, body)`` pairs consumed in order; when the script runs out, the last entry repeats.
The Anthropic stand-in, like the current API version, rejects sampling parameters with 400.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

CURRENT_API_VERSION = "2026-10-21"


def anthropic_message(text: str, input_tokens: int = 11, output_tokens: int = 7) -> dict:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens}}


def openai_completion(text: str, prompt_tokens: int = 13, completion_tokens: int = 5) -> dict:
    return {"id": "c1", "object": "chat.completion", "created": 0, "model": "local",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


class Script:
    def __init__(self, replies: list[tuple[int, dict]]) -> None:
        self.replies = list(replies)
        self.requests: list[dict] = []

    def next(self) -> tuple[int, dict]:
        return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]


def anthropic_app(script: Script) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/messages")
    async def messages(request: Request):
        body = await request.json()
        headers = {k.lower(): v for k, v in request.headers.items()}
        script.requests.append({"headers": headers, "body": body})
        version = headers.get("anthropic-version")
        sampling = [k for k in ("temperature", "top_p", "top_k") if k in body]
        if version == CURRENT_API_VERSION and sampling:
            return JSONResponse({"type": "error", "error": {"type": "invalid_request_error",
                                 "message": f"{sampling[0]}: Extra inputs are not permitted"}}, 400)
        status, reply = script.next()
        return JSONResponse(reply, status)

    return app


def openai_app(script: Script) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        body = await request.json()
        script.requests.append({"headers": {k.lower(): v for k, v in request.headers.items()}, "body": body})
        status, reply = script.next()
        return JSONResponse(reply, status)

    return app


OVERLOADED = (529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
RATE_LIMITED = (429, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}})


class SlowServer:
    """An OpenAI-compatible server that computes ``slots`` calls at a time, each taking ``delay`` s,
    as llama-cpp-python's server does with one slot (checked against llama-cpp-python 0.3.36 while it was the
    kit's test server; tests/test_local_llm.py now runs llama.cpp's own):

    - calls wait in a FIFO queue for the model lock; a call whose client left while it waited is
      refused with 400 "Client closed request" and never computed; a call being computed is
      computed to the end even when its client has left (llama-cpp-python does not cancel);
    - ``GET /v1/models`` waits for the model lock too (it does not answer while a call computes);
    - with ``report_slots`` it also answers llama.cpp's ``GET /props`` (``total_slots``) and
      ``GET /slots`` (``is_processing`` per slot), as llama.cpp's own ``llama-server`` does; without
      it those are 404, as on llama-cpp-python's server.

    A call with ``max_tokens`` 1 (the kit's preflight) takes ``delay * preflight_share``.
    Every call is recorded: ``received`` (prompt hashes in arrival order), ``computed``,
    ``refused`` (left the queue before being computed) and ``abandoned`` (its client left while
    it was computed: work wasted).
    """

    def __init__(self, delay: float = 1.0, slots: int = 1, report_slots: bool = False, preflight_share: float = 0.2,
                 reply: str = "Paris") -> None:
        import threading as _threading

        self.delay, self.slots, self.report_slots, self.preflight_share = delay, slots, report_slots, preflight_share
        self.reply = reply
        self.received: list[str] = []
        self.computed: list[str] = []
        self.refused: list[str] = []
        self.abandoned: list[str] = []
        self.events: list[tuple[float, str, str]] = []  # (monotonic time, received|start|done, key)
        self.busy = 0
        self.max_busy = 0
        self._lock = _threading.Lock()

    @staticmethod
    def key(body: dict) -> str:
        import hashlib
        import json as _json

        return hashlib.sha256(_json.dumps(body.get("messages"), sort_keys=True).encode()).hexdigest()[:12]

    def answers(self) -> list[str]:
        """Prompts computed, without the preflight calls."""
        return [k for k in self.computed if not k.startswith("preflight:")]

    def app(self) -> FastAPI:
        import asyncio

        from fastapi import HTTPException
        from starlette.concurrency import run_in_threadpool

        app = FastAPI()
        gate = asyncio.Semaphore(self.slots)  # FIFO, as llama-cpp-python's anyio lock
        server = self

        @app.post("/v1/chat/completions")
        async def chat(request: Request):
            body = await request.json()
            key = ("preflight:" if body.get("max_tokens") == 1 else "") + server.key(body)
            server.received.append(key)
            server.events.append((time_now(), "received", key))
            async with gate:
                if await request.is_disconnected():
                    server.refused.append(key)
                    raise HTTPException(status_code=400, detail="Client closed request")
                with server._lock:
                    server.busy += 1
                    server.max_busy = max(server.max_busy, server.busy)
                try:
                    server.events.append((time_now(), "start", key))
                    seconds = server.delay * (server.preflight_share if body.get("max_tokens") == 1 else 1.0)
                    await run_in_threadpool(time_sleep, seconds)
                    server.computed.append(key)
                    server.events.append((time_now(), "done", key))
                finally:
                    with server._lock:
                        server.busy -= 1
                if await request.is_disconnected():
                    server.abandoned.append(key)
            text = "OK" if body.get("max_tokens") == 1 else server.reply
            chars = sum(len(str(m.get("content", ""))) for m in body.get("messages", []))
            return JSONResponse(openai_completion(text, prompt_tokens=chars // 4, completion_tokens=len(text.split())))

        @app.get("/v1/models")
        async def models():
            async with gate:
                return {"object": "list", "data": [{"id": "standin", "object": "model", "owned_by": "me",
                                                    "permissions": []}]}

        if self.report_slots:
            @app.get("/props")
            async def props():
                return {"total_slots": server.slots}

            @app.get("/slots")
            async def slots():
                return [{"id": i, "is_processing": i < server.busy} for i in range(server.slots)]

        return app


def time_sleep(seconds: float) -> None:
    import time

    time.sleep(seconds)


def time_now() -> float:
    import time

    return time.monotonic()
