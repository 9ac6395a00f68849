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
