"""llama-cpp-python's OpenAI-compatible server, started as ``python -m llama_cpp.server`` starts it, with one
option of its own: ``--max-tokens N`` caps what the server generates for each call, whatever the call asks
(as llama.cpp's own ``llama-server --n-predict N`` does). Run by ``scripts/llm-server start`` with the server
venv's Python; the cap lets a test give a client that hard-codes a large ``max_tokens`` (claude-mem asks
4,096 for every compressor call) the reply a small looping model writes, without minutes of generation.

    python llm_server_app.py [--max-tokens N] <llama_cpp.server options>
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Awaitable, Callable

Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def capped_body(body: bytes, cap: int) -> bytes:
    """``body`` (a completion request's JSON) with ``max_tokens`` at most ``cap``; a missing, null or
    non-positive one (llama-cpp-python: up to the context window) becomes ``cap``. Anything not a JSON
    object goes through unchanged, for the server to refuse as before."""
    try:
        data = json.loads(body)
    except ValueError:
        return body
    if not isinstance(data, dict):
        return body
    asked = data.get("max_tokens")
    if isinstance(asked, int) and not isinstance(asked, bool) and 0 < asked <= cap:
        return body
    data["max_tokens"] = cap
    return json.dumps(data).encode()


class CapMaxTokens:
    """ASGI middleware: the body of every POST to a ``…/completions`` path read whole and capped
    (:func:`capped_body`); later ``receive`` calls (llama-cpp-python asks whether the client left) reach the
    client's connection as before."""

    def __init__(self, app: Callable[..., Awaitable[None]], cap: int) -> None:
        self.app, self.cap = app, cap

    async def __call__(self, scope: dict, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http" or scope.get("method") != "POST" or not scope.get("path", "").endswith(
                "/completions"):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client left before its request was read
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = capped_body(b"".join(chunks), self.cap)
        headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(dict(scope, headers=headers), replay, send)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--max-tokens", type=int, default=0)
    ours, rest = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    if ours.max_tokens < 0:
        sys.exit(f"--max-tokens must be 0 (no cap) or more, not {ours.max_tokens}")

    import llama_cpp.server.__main__ as upstream

    if ours.max_tokens:
        create_app = upstream.create_app

        def create_capped_app(*args: Any, **kwargs: Any):
            app = create_app(*args, **kwargs)
            app.add_middleware(CapMaxTokens, cap=ours.max_tokens)
            return app

        upstream.create_app = create_capped_app
    sys.argv = [sys.argv[0], *rest]
    upstream.main()


if __name__ == "__main__":
    main()
