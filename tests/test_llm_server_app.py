"""``scripts/llm_server_app.py``'s cap on what the local llama.cpp server generates per call (``llm-server start
--max-tokens``), in-process with a recording ASGI app; tests/test_local_llm.py checks it against the real server's
log."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

SPEC = importlib.util.spec_from_file_location("llm_server_app",
                                              Path(__file__).resolve().parents[1] / "scripts" / "llm_server_app.py")
app_module = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(app_module)


@pytest.mark.parametrize("asked, sent", [(4096, 512), (None, 512), (0, 512), (-1, 512), (True, 512), ("9", 512),
                                         (512, 512), (48, 48)])
def test_max_tokens_is_capped_missing_becomes_the_cap_and_a_smaller_one_stays(asked, sent):
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": asked}
    out = json.loads(app_module.capped_body(json.dumps(body).encode(), 512))
    assert out["max_tokens"] == sent and out["messages"] == body["messages"]
    missing = json.loads(app_module.capped_body(b'{"prompt": "x"}', 512))
    assert missing == {"prompt": "x", "max_tokens": 512}


@pytest.mark.parametrize("body", [b"not json", b"[1, 2]", b""])
def test_a_body_that_is_no_json_object_goes_through_unchanged(body):
    assert app_module.capped_body(body, 512) == body


def call(path: str, method: str, chunks: list[bytes], then: list[dict]) -> tuple[dict, bytes, list[dict]]:
    """(scope, body, later messages) as the wrapped app sees them for a request sent in ``chunks``."""
    seen: dict = {}

    async def inner(scope, receive, send):
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        seen.update(scope=scope, body=body, later=[await receive() for _ in then])

    queue = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)] + then

    async def receive():
        return queue.pop(0)

    async def send(message):
        pass

    scope = {"type": "http", "method": method, "path": path,
             "headers": [(b"content-type", b"application/json"), (b"content-length", b"999")]}
    # in a thread of its own: a session's Playwright (tests/support/chromium.py) keeps an event loop running here
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, app_module.CapMaxTokens(inner, cap=512)(scope, receive, send)).result()
    return seen["scope"], seen["body"], seen["later"]


def test_a_chat_call_in_several_chunks_reaches_the_server_capped_with_its_length_and_the_client_still_heard():
    body = json.dumps({"messages": [], "max_tokens": 4096}).encode()
    gone = {"type": "http.disconnect"}
    scope, sent, later = call("/v1/chat/completions", "POST", [body[:10], body[10:]], [gone])
    assert json.loads(sent) == {"messages": [], "max_tokens": 512}
    headers = dict(scope["headers"])
    assert headers[b"content-length"] == str(len(sent)).encode() and headers[b"content-type"] == b"application/json"
    assert later == [gone]  # llama-cpp-python's "did the client leave?" reaches the connection


def test_other_calls_are_not_touched():
    body = json.dumps({"max_tokens": 4096}).encode()
    for path, method in (("/v1/models", "GET"), ("/v1/embeddings", "POST")):
        scope, sent, _ = call(path, method, [body], [])
        assert sent == body and dict(scope["headers"])[b"content-length"] == b"999"
    _, sent, _ = call("/v1/completions", "POST", [body], [])
    assert json.loads(sent) == {"max_tokens": 512}
