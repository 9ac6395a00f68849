"""``scripts/llm_server_app.py``'s front, which caps what the local llama.cpp server generates per call (``llm-server
start --max-tokens``): in-process, in front of a recording HTTP server; tests/test_local_llm.py checks it in front
of the real server (the tokens llama.cpp generated, and that it cancels a call whose client left)."""

from __future__ import annotations

import importlib.util
import json
import select
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
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


class Recorder(BaseHTTPRequestHandler):
    """The server behind the front: records each request; ``/stream`` answers in chunks, the second one only
    once ``server.go_on`` is set; ``/slow`` waits for its client (the front) to close or for 20 s."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def handle_one(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.seen.append({"method": self.command, "path": self.path, "headers": dict(self.headers),
                                 "body": body})
        if self.path == "/slow":
            ready, _, _ = select.select([self.connection], [], [], 20)
            self.server.closed.set() if ready and not self.connection.recv(1, socket.MSG_PEEK) else None
            self.close_connection = True
            return
        if self.path == "/stream":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for n in range(3):
                if n == 1:
                    self.server.go_on.wait(10)
                piece = f"data: {n}\n\n".encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\n\r\n")
            return
        reply = json.dumps({"path": self.path, "got": len(body)}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    do_GET = do_POST = handle_one


@pytest.fixture
def front(monkeypatch):
    """(front URL, recording server, the front's log lines), both serving on threads."""
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    upstream.daemon_threads = True
    upstream.seen, upstream.closed, upstream.go_on = [], threading.Event(), threading.Event()
    lines: list[str] = []
    monkeypatch.setattr(app_module.CapFront, "log_message", lambda self, fmt, *args: lines.append(fmt % args))
    server = app_module.FrontServer(("127.0.0.1", 0), upstream.server_address, cap=512)
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in (upstream, server)]
    for t in threads:
        t.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", upstream, lines
    for s in (server, upstream):
        s.shutdown()
        s.server_close()


def test_a_chat_call_reaches_the_server_capped_with_its_length_and_headers_and_the_reply_comes_back(front):
    url, upstream, lines = front
    with httpx.Client(base_url=url, headers={"Authorization": "Bearer local"}) as client:  # one kept-alive connection
        replies = [client.post("/v1/chat/completions", json={"messages": [], "max_tokens": n}) for n in (4096, 48)]
    assert [json.loads(s["body"]) for s in upstream.seen] == [{"messages": [], "max_tokens": 512},
                                                              {"messages": [], "max_tokens": 48}]
    first = upstream.seen[0]
    assert first["headers"]["Content-Length"] == str(len(first["body"]))
    assert first["headers"]["Content-Type"] == "application/json" and first["headers"]["Authorization"] == "Bearer local"
    assert [r.status_code for r in replies] == [200, 200] and replies[0].headers["content-type"] == "application/json"
    assert replies[0].json() == {"path": "/v1/chat/completions", "got": len(first["body"])}
    assert sum('"POST /v1/chat/completions HTTP/1.1" 200' in line for line in lines) == 2  # an access line a call


def test_other_calls_are_not_touched_and_every_completion_path_is_capped(front):
    url, upstream, _ = front
    body = json.dumps({"max_tokens": 4096}).encode()
    assert httpx.get(f"{url}/v1/models").json() == {"path": "/v1/models", "got": 0}
    httpx.post(f"{url}/v1/embeddings", content=body)
    for path in ("/v1/completions", "/completions", "/chat/completions?x=1"):
        httpx.post(url + path, content=body)
    assert [(s["method"], s["path"]) for s in upstream.seen] == [
        ("GET", "/v1/models"), ("POST", "/v1/embeddings"), ("POST", "/v1/completions"), ("POST", "/completions"),
        ("POST", "/chat/completions?x=1")]
    assert upstream.seen[1]["body"] == body
    assert [json.loads(s["body"]) for s in upstream.seen[2:]] == [{"max_tokens": 512}] * 3


def test_a_streamed_reply_reaches_the_client_as_it_comes(front):
    url, upstream, _ = front
    events = []
    with httpx.stream("POST", f"{url}/stream", json={}, timeout=10) as reply:
        assert reply.headers["content-type"] == "text/event-stream"
        for line in reply.iter_lines():
            if line:
                events.append(line)
                upstream.go_on.set()  # the server writes the rest only once the client has the first event
    assert events == ["data: 0", "data: 1", "data: 2"]


def test_a_chunked_request_body_is_read_and_capped(front):
    url, upstream, _ = front
    body = json.dumps({"messages": [], "max_tokens": 4096}).encode()
    with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1]))) as client:
        client.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                       + b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in (body[:7], body[7:])) + b"0\r\n\r\n")
        assert client.recv(100).startswith(b"HTTP/1.1 200")
    assert json.loads(upstream.seen[0]["body"]) == {"messages": [], "max_tokens": 512}


def test_a_client_that_leaves_before_its_reply_closes_the_call_upstream(front):
    url, upstream, lines = front
    with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1]))) as client:
        client.sendall(b"POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
        deadline = time.monotonic() + 10
        while not upstream.seen and time.monotonic() < deadline:
            time.sleep(0.05)
    assert upstream.closed.wait(10), "the front kept the call open after its client left"
    assert any(app_module.CLIENT_LEFT in line for line in lines), lines


def test_no_server_behind_the_front_is_a_502():
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()
    server = app_module.FrontServer(("127.0.0.1", 0), closed, cap=512)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        reply = httpx.post(f"http://127.0.0.1:{server.server_address[1]}/v1/chat/completions", json={})
    finally:
        server.shutdown()
        server.server_close()
    assert reply.status_code == 502 and "llama.cpp's server did not answer" in reply.text


def test_a_negative_cap_is_refused(capsys):
    with pytest.raises(SystemExit):
        app_module.parse_args(["--model", "m.gguf", "--alias", "m", "--port", "1", "--max-tokens", "-1"])
    assert "--max-tokens must be 0 (no cap) or more, not -1" in capsys.readouterr().err


def test_a_client_that_expects_100_continue_is_answered_by_the_front(front):
    """curl sends ``Expect: 100-continue`` with a body over 1 KiB and waits for it: the front answers it, and the
    server behind gets the whole call without the header."""
    url, upstream, _ = front
    body = json.dumps({"messages": [{"role": "user", "content": "x" * 2000}], "max_tokens": 4096}).encode()
    with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])), timeout=10) as client:
        client.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                       b"Content-Length: %d\r\n\r\n" % len(body))
        assert client.recv(100).startswith(b"HTTP/1.1 100 Continue")
        client.sendall(body)
        assert client.recv(100).startswith(b"HTTP/1.1 200")
    assert json.loads(upstream.seen[0]["body"])["max_tokens"] == 512 and "Expect" not in upstream.seen[0]["headers"]
