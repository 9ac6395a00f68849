"""WorkerClient: every error path with httpx.MockTransport, then real servers on loopback."""

from __future__ import annotations

import json

import httpx
import pytest

from locomo_kit.worker.client import (
    WorkerAuthError,
    WorkerClient,
    WorkerNotFound,
    WorkerNotReady,
    WorkerProtocolError,
    WorkerServerError,
    WorkerTimeout,
    WorkerUnavailable,
    WorkerValidationError,
)
from locomo_kit.worker.embedded import EmbeddedWorker, free_port

from support.claude_mem_standin import create_standin, serve

ROW = {"id": 7, "memory_session_id": "m", "project": "p", "type": "discovery", "title": "t", "subtitle": "",
       "narrative": "Caroline went hiking", "text": None, "facts": '["fact one"]', "concepts": "[]",
       "files_read": "[]", "files_modified": "[]", "prompt_number": 1, "created_at": "2026-11-30T18:45:10.490Z",
       "created_at_epoch": 1, "metadata": '{"source_turns": ["D1:2"]}'}


def mock(handler, **kw) -> WorkerClient:
    return WorkerClient("http://worker.test", token=kw.pop("token", ""), transport=httpx.MockTransport(handler),
                        sleep=lambda s: None, **kw)


def test_search_decodes_rows_and_times_the_request():
    seen = {}

    def handler(request: httpx.Request) -> httpx.Response:
        seen.update(dict(request.url.params))
        return httpx.Response(200, json={"observations": [ROW], "sessions": [], "prompts": [], "totalResults": 1,
                                         "query": "q"})

    with mock(handler) as c:
        res = c.search("where did she hike?", "p", limit=5)
    assert seen == {"query": "where did she hike?", "project": "p", "limit": "5", "type": "observations", "format": "json"}
    obs = res.observations[0]
    assert obs.facts == ["fact one"] and obs.metadata == {"source_turns": ["D1:2"]} and obs.source_turns == ["D1:2"]
    assert obs.content == "Caroline went hiking fact one"
    assert res.latency_ms >= 0 and res.total == 1


def test_token_is_sent_and_never_shown():
    got = {}

    def handler(request):
        got["auth"] = request.headers.get("authorization")
        return httpx.Response(200, json={"status": "ok"})

    c = mock(handler, token="t0ken")
    c.health()
    assert got["auth"] == "Bearer t0ken"
    assert "t0ken" not in repr(c)


@pytest.mark.parametrize(
    "status, body, exc, fragment",
    [
        (401, {"error": "Unauthorized"}, WorkerAuthError, "Invalid auth token"),
        (403, {"error": "Forbidden"}, WorkerAuthError, "LOCOMO_WORKER_TOKEN"),
        (400, {"error": "ValidationError", "issues": [{"path": "contentSessionId", "message": "Required"}]},
         WorkerValidationError, "contentSessionId"),
        (404, {"error": "nope"}, WorkerNotFound, "404"),
        (500, {"error": "kaput " + "x" * 500}, WorkerServerError, "HTTP 500"),
        (502, "<html>bad gateway</html>", WorkerServerError, "bad gateway"),
    ],
)
def test_http_errors(status, body, exc, fragment):
    def handler(request):
        return httpx.Response(status, json=body) if isinstance(body, dict) else httpx.Response(status, text=body)

    with pytest.raises(exc, match=fragment) as info:
        mock(handler).init_session("s", "p", "prompt")
    assert info.value.status == status and info.value.route == "/api/sessions/init"
    assert len(info.value.body) <= 300
    if exc is WorkerValidationError:
        assert info.value.issues == [{"path": "contentSessionId", "message": "Required"}]


def test_503_is_retried_then_reported():
    calls = []

    def handler(request):
        calls.append(request.method)
        return httpx.Response(503, json={"error": "Service initializing"})

    with pytest.raises(WorkerNotReady, match="not ready"):
        mock(handler, retries=2).processing_status()
    assert len(calls) == 3


def test_429_on_post_is_retried_because_nothing_was_applied():
    answers = iter([httpx.Response(429, headers={"retry-after": "1"}), httpx.Response(200, json={"status": "queued"})])
    assert mock(lambda r: next(answers)).summarize("s")["status"] == "queued"


def test_post_timeout_is_not_retried_get_timeout_is():
    calls = {"POST": 0, "GET": 0}

    def handler(request):
        calls[request.method] += 1
        raise httpx.ReadTimeout("slow", request=request)

    c = mock(handler, retries=2)
    with pytest.raises(WorkerTimeout, match="POST /api/sessions/observations timed out"):
        c.queue_observation("s", "Read", {}, "text")
    with pytest.raises(WorkerTimeout, match="GET /api/processing-status timed out"):
        c.processing_status()
    assert calls == {"POST": 1, "GET": 3}


@pytest.mark.parametrize("answer", [httpx.Response(200, text="<html>hello</html>"),
                                    httpx.Response(200, json={"unexpected": True}),
                                    httpx.Response(200, json={"observations": "nope"})])
def test_garbage_is_a_protocol_error(answer):
    with pytest.raises(WorkerProtocolError):
        mock(lambda r: answer).search("q", "p")


def test_wait_for_processing_polls_until_empty_and_times_out():
    depths = iter([3, 2, 0])
    c = mock(lambda r: httpx.Response(200, json={"isProcessing": False, "queueDepth": next(depths)}))
    assert c.wait_for_processing(timeout=5) >= 0
    stuck = mock(lambda r: httpx.Response(200, json={"isProcessing": True, "queueDepth": 4}))
    with pytest.raises(WorkerTimeout, match="queue not empty after 0 s"):
        stuck.wait_for_processing(timeout=0.0)


def test_unreachable_worker_names_url_and_how_to_start():
    port = free_port()
    c = WorkerClient(f"http://127.0.0.1:{port}", token="", retries=1, backoff=0.01, restart_window=0)
    with pytest.raises(WorkerUnavailable, match=rf"Worker not running at http://127.0.0.1:{port} .*python -m memworker --port {port}"):
        c.health()


def test_url_and_token_from_environment(monkeypatch):
    monkeypatch.setenv("LOCOMO_WORKER_URL", "http://10.1.2.3:4000/")
    monkeypatch.setenv("LOCOMO_WORKER_TOKEN", "abc")
    c = WorkerClient()
    assert c.base_url == "http://10.1.2.3:4000" and c._http.headers["authorization"] == "Bearer abc"
    monkeypatch.delenv("LOCOMO_WORKER_URL")
    assert WorkerClient().base_url == "http://127.0.0.1:37777"


def test_against_real_memworker_process(tmp_path):
    with EmbeddedWorker(tmp_path / "mw.db", embedder="hashing") as url, WorkerClient(url, token="") as c:
        health = c.wait_until_ready()
        assert health["status"] == "ok"
        c.init_session("s1", "proj", "hello")
        assert c.queue_observation("s1", "Read", {"file_path": "x"}, "[D1:1] Ann: I adopted a cat named Tom",
                                   tool_use_id="x")["status"] == "queued"
        c.wait_for_processing(timeout=30, poll_interval=0.1)
        res = c.search("cat named Tom", "proj")
        assert res.observations and res.observations[0].source_turns == ["D1:1"]
        with pytest.raises(WorkerValidationError, match="contentSessionId"):
            c.init_session("", "proj", "x")
        with pytest.raises(WorkerNotFound):
            c.delete_observation(99999)
        assert c.forget_project("proj") == 1 and c.list_observations("proj") == []


def test_against_claude_mem_standin():
    app = create_standin()
    with serve(app) as url, WorkerClient(url, token="tok") as c:
        assert c.wait_until_ready()["version"] == "13.25.3"
        c.init_session("s1", "proj", "hello")
        lines = "\n".join(f"[D1:{i}] A: line {i} about pottery" for i in range(12))
        c.queue_observation("s1", "Read", {}, lines, tool_use_id="t1")
        c.queue_observation("s1", "Read", {}, lines, tool_use_id="t1")  # a repeat: dropped, still "queued"
        c.wait_for_processing(timeout=10, poll_interval=0.05)
        obs = c.list_observations("proj")
        assert len(obs) == 12 and obs[0].metadata == {} and isinstance(obs[0].facts, list)
        hit = c.search("line 3 about", "proj", limit=2)
        assert [o.narrative for o in hit.observations] == ["[D1:3] A: line 3 about pottery"] and hit.total == 1
        assert c.search("about line 3", "proj").observations == []  # one phrase, in order
        saved = c.save_memory("[D2:1] B: a kiln", "proj", metadata={"source_turns": ["D2:1"]})
        assert c.search("a kiln", "proj").observations[0].source_turns == ["D2:1"]
        assert saved["id"] and c.forget_project("proj") == 13  # no project route: deleted one by one
        assert c.list_observations("proj") == []
        raw = httpx.post(f"{url}/api/sessions/observations", json={"contentSessionId": "s1", "tool_name": "Read",
                                                                  "cwd": None})
        assert raw.status_code == 400 and raw.json()["issues"][0]["path"] == ["cwd"]
        with pytest.raises(WorkerValidationError, match="Unrecognized key"):
            c._request("POST", "/api/memory/save", body={"text": "x", "project": "p", "tags": []})


def test_client_never_sends_null(tmp_path):
    """claude-mem's zod schemas reject JSON null for optional strings: every body omits None."""
    seen: list[dict] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content or b"{}")
        seen.append(body)
        if request.url.path == "/api/memory/save":
            return httpx.Response(200, json={"success": True, "id": 1, "title": "t", "project": "p"})
        return httpx.Response(200, json={"status": "queued"})

    with WorkerClient("http://w", token="", transport=httpx.MockTransport(handler)) as c:
        c.queue_observation("s", "Read", {"file_path": "x"}, "text")
        c.save_memory("text", "p")
        c.save_memory("text", "p", title="t", metadata={"source_turns": ["D1:1"]})
    assert all(None not in b.values() for b in seen)
    assert seen[0]["cwd"] and "tool_use_id" not in seen[0]
    assert set(seen[1]) == {"text", "project"} and seen[2]["metadata"] == {"source_turns": ["D1:1"]}
