"""memworker on hostile input: out-of-range integers, odd digits, deep JSON, slow or oversized
requests, and reads on a full disk; each gets a 4xx (or its answer) and the connection stays usable."""

from __future__ import annotations

import json
import socket
import time

import httpx
import pytest

from locomo_kit.worker.embedded import free_port

from support.faults import fill, small_filesystem, start_memworker, stop, wait_ready
from support.helpers import TRANSCRIPT, drain, memworker_app

BIG = 2**63


def seed_session(c: httpx.Client) -> None:
    """One session of TRANSCRIPT in project p, processed."""
    c.post("/api/sessions/init", json={"contentSessionId": "s1", "project": "p"})
    c.post("/api/sessions/observations", json={"contentSessionId": "s1", "tool_name": "Read",
                                               "tool_response": TRANSCRIPT})
    drain(c)


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    """A real memworker process (uvicorn, keep-alive connections), with a small body limit."""
    db, port = tmp_path_factory.mktemp("bad") / "mw.db", free_port()
    proc = start_memworker(db, port, "--max-body-bytes", "20000", "--header-timeout", "1.5")
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url)
        with httpx.Client(base_url=url, timeout=10) as c:
            seed_session(c)
        yield url, port
    finally:
        stop(proc)


def _nested(depth: int) -> str:
    """JSON text nested ``depth`` levels (built as text: encoding it would hit the client's own limit)."""
    return '{"a": [' * depth + '"x"' + "]}" * depth


BAD_REQUESTS = [
    ("GET", f"/api/observation/{BIG}", None, None),
    ("GET", f"/api/observation/{BIG * 4}", None, None),
    ("DELETE", f"/api/observation/{BIG}", None, None),
    ("POST", "/api/observations/batch", None, {"ids": [1, BIG]}),
    ("GET", "/api/observations", {"project": "p", "offset": str(BIG)}, None),
    ("GET", "/api/search", {"query": "paint", "project": "p", "offset": str(BIG)}, None),
    ("GET", "/api/search", {"query": "paint", "project": "p", "dateStart": "9" * 25}, None),
    ("GET", "/api/search", {"query": "paint", "project": "p", "dateEnd": str(BIG)}, None),
    ("GET", "/api/search", {"query": "paint", "project": "p", "dateStart": "١٢٣٤٥"}, None),
    ("GET", "/api/search", {"query": "paint", "project": "p", "dateEnd": "²³"}, None),
    ("POST", "/api/sessions/observations", None,
     '{"contentSessionId": "s1", "tool_name": "Read", "tool_response": "x: y", "tool_input": ' + _nested(300) + "}"),
    ("POST", "/api/sessions/observations", None,
     '{"contentSessionId": "s1", "tool_name": "Read", "tool_response": ' + _nested(600) + "}"),
    ("POST", "/api/memory/save", None, '{"text": "x", "project": ' + _nested(2000) + "}"),
]


@pytest.mark.parametrize("method, path, params, body", BAD_REQUESTS,
                         ids=[f"{m} {p} {json.dumps(q)[:40] if q else ''}".strip() for m, p, q, _ in BAD_REQUESTS])
def test_bad_input_is_a_4xx_and_the_connection_stays_usable(worker, method, path, params, body):
    url, _ = worker
    with httpx.Client(base_url=url, timeout=10) as c:
        content = None if body is None else (body if isinstance(body, str) else json.dumps(body)).encode()
        r = c.request(method, path, params=params, content=content,
                      headers={"content-type": "application/json"} if content else None)
        assert 400 <= r.status_code < 500, (r.status_code, r.text[:300])
        assert r.json().get("error") or r.json().get("issues")
        again = c.get("/api/health")  # the same keep-alive connection
        assert again.status_code == 200


def test_an_unexpected_error_is_a_json_500(tmp_path):
    with memworker_app(tmp_path) as api:
        store = api.app.state.service.store
        store.stats = lambda: 1 / 0
        r = api.get("/api/health")
        assert r.status_code == 500 and r.json()["error"] == "InternalError" and "ZeroDivisionError" in r.json()["message"]


def test_an_incomplete_request_is_not_held_open(worker):
    _, port = worker
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # the headers never end
        start = time.monotonic()
        assert s.recv(1024) == b""  # closed by the Worker
        assert time.monotonic() - start < 8


def test_a_slow_but_complete_request_is_answered(worker):
    _, port = worker
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"GET /api/readiness HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        time.sleep(0.5)
        s.sendall(b"Connection: close\r\n\r\n")
        assert b"200 OK" in s.recv(4096)


def test_a_chunked_body_over_the_limit_is_413(worker):
    url, _ = worker

    def chunks():
        for _ in range(10):
            yield b'{"text": "' + b"x" * 5000

    with httpx.Client(base_url=url, timeout=10) as c:
        r = c.post("/api/memory/save", content=chunks(), headers={"content-type": "application/json"})
        assert r.status_code == 413 and "Body over 20000 bytes" in r.json()["message"]


def test_search_and_reads_work_on_a_full_disk(tmp_path):
    with small_filesystem(tmp_path) as fs:
        db, port = fs / "mw.db", free_port()
        proc = start_memworker(db, port)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_ready(url)
            with httpx.Client(base_url=url, timeout=10) as c:
                seed_session(c)
                filler = fill(fs)
                for _ in range(3):
                    r = c.get("/api/search", params={"query": "adoption agencies", "project": "p", "format": "json"})
                    assert r.status_code == 200 and r.json()["observations"], r.text[:300]
                assert c.get("/api/observations", params={"project": "p"}).status_code == 200
                saved = c.post("/api/memory/save", json={"text": "x" * 3000, "project": "p"})
                assert saved.status_code == 507 and "Free space" in saved.json()["message"]
                filler.unlink()
        finally:
            stop(proc)


def test_acknowledging_commits_are_synchronous_full(tmp_path):
    with memworker_app(tmp_path) as api:
        assert api.app.state.service.store.conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
