"""Bad input, authentication, crash durability and concurrency of memworker."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from collections import Counter

import httpx
import pytest

from locomo_kit.worker.embedded import free_port

from support.helpers import TRANSCRIPT, drain, memworker_app, wait_until


@pytest.fixture()
def api(tmp_path):
    with memworker_app(tmp_path, max_body_bytes=20_000) as client:
        client.post("/api/sessions/init", json={"contentSessionId": "s1", "project": "p"})
        client.post("/api/sessions/observations", json={"contentSessionId": "s1", "tool_name": "Read",
                                                        "tool_response": TRANSCRIPT})
        drain(client)
        yield client


@pytest.mark.parametrize(
    "route, body, fragment",
    [
        ("/api/sessions/init", b"{not json", "Malformed JSON"),
        ("/api/sessions/init", b"[1, 2]", "valid dictionary"),
        ("/api/sessions/init", json.dumps({"project": "p"}).encode(), "contentSessionId"),
        ("/api/sessions/init", json.dumps({"contentSessionId": ""}).encode(), "contentSessionId"),
        ("/api/sessions/observations", json.dumps({"contentSessionId": "s1"}).encode(), "tool_name"),
        ("/api/sessions/summarize", json.dumps({}).encode(), "contentSessionId"),
        ("/api/memory/save", json.dumps({"title": "no text"}).encode(), "text"),
        ("/api/observations/batch", json.dumps({"ids": ["a"]}).encode(), "ids"),
    ],
)
def test_invalid_bodies_get_400_with_issues(api, route, body, fragment):
    r = api.post(route, content=body, headers={"content-type": "application/json"})
    assert r.status_code == 400
    data = r.json()
    assert data["error"] == "ValidationError" and fragment in json.dumps(data["issues"])


def test_oversized_body_is_413(api):
    r = api.post("/api/memory/save", json={"text": "x" * 50_000, "project": "p"})
    assert r.status_code == 413 and "Body over 20000 bytes" in r.json()["message"]
    assert api.get("/api/health").status_code == 200


@pytest.mark.parametrize("query", ['"', "AND", "NOT OR", "foo NEAR(bar", "col:value", "*", "^start", "a'b\"c",
                                   "DROP TABLE observations; --", "ünïcødé 🎨", "a" * 1000])
def test_fts_syntax_cannot_break_search(api, query):
    r = api.get("/api/search", params={"query": query, "project": "p", "format": "json"})
    assert r.status_code == 200 and isinstance(r.json()["observations"], list)
    assert api.get("/api/observations", params={"project": "p"}).json()["items"]  # table intact


def test_overlong_query_and_bad_params_are_400(api):
    assert api.get("/api/search", params={"query": "a" * 5000, "project": "p"}).status_code == 400
    assert api.get("/api/search", params={"query": "a", "limit": "many"}).status_code == 400
    assert api.get("/api/search", params={"query": "a", "limit": 0}).status_code == 400
    assert api.get("/api/observations", params={"limit": 1000}).status_code == 400


@pytest.mark.parametrize("name, value, ok", [("limit", "1.5", False), ("limit", "101", False), ("limit", "", True),
                                             ("limit", "3", True), ("offset", "-1", False), ("offset", "١", False),
                                             ("context_budget", "0", False), ("context_budget", "500", True)])
def test_search_integer_parameters_are_checked(api, name, value, ok):
    r = api.get("/api/search", params={"query": "a", "project": "p", "format": "json", name: value})
    if ok:
        assert r.status_code == 200 and isinstance(r.json()["observations"], list)
    else:
        assert r.status_code == 400 and r.json()["issues"][0]["path"] == f"query.{name}"


def test_search_parameters_are_documented(api):
    params = api.get("/openapi.json").json()["paths"]["/api/search"]["get"]["parameters"]
    assert {"query", "project", "limit", "offset", "context_budget", "format", "dateStart", "dateEnd"} <= {
        p["name"] for p in params}


def test_unknown_ids_are_404_with_reason(api):
    r = api.get("/api/observation/424242")
    assert r.status_code == 404 and "424242 not found" in r.json()["message"]
    assert api.get("/api/observation/not-a-number").status_code == 400


def test_bearer_token(tmp_path):
    with memworker_app(tmp_path, token="s3cret") as api:
        assert api.get("/api/health").status_code == 200  # open, like readiness
        r = api.get("/api/observations")
        assert r.status_code == 401 and r.json()["error"] == "Unauthorized"
        assert api.get("/api/observations", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert api.get("/api/observations", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        assert "s3cret" not in api.get("/api/health").text


def test_a_failing_item_is_recorded_and_the_worker_keeps_serving(tmp_path):
    with memworker_app(tmp_path, max_attempts=2, retry_base_seconds=0.01) as api:
        svc = api.app.state.service
        original = svc.extractor.extract
        svc.extractor.extract = lambda t: (_ for _ in ()).throw(RuntimeError("boom"))
        api.post("/api/sessions/init", json={"contentSessionId": "s1", "project": "p"})
        api.post("/api/sessions/observations", json={"contentSessionId": "s1", "tool_name": "Read", "tool_response": "x: y z"})
        status = drain(api)
        assert status["failed"] == 1
        svc.extractor.extract = original
        api.post("/api/sessions/observations", json={"contentSessionId": "s1", "tool_name": "Read", "tool_response": TRANSCRIPT})
        assert drain(api)["done"] == 1


def _start(db, port):
    # the real embedder: slow enough (about 0.4 s a session) for the kill to land mid-queue
    return subprocess.Popen([sys.executable, "-m", "memworker", "--port", str(port), "--db-path", str(db),
                             "--embedder", "minilm"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def _ready(url):
    def check():
        try:
            return httpx.get(f"{url}/api/readiness", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False
    wait_until(check, timeout=60)


def test_sigkill_mid_queue_loses_nothing_and_duplicates_nothing(tmp_path, dataset):
    """Queue 8 sessions, SIGKILL the Worker while it works (after 2), restart it on the same database."""
    from locomo_kit.dataset import get_conversation
    from locomo_kit.worker import transcript

    conv = get_conversation(dataset, "conv-26")
    conv = dataclasses.replace(conv, sessions=conv.sessions[:8])  # 6 queued at the kill: the rest is the same work
    db, port = tmp_path / "mw.db", free_port()
    url = f"http://127.0.0.1:{port}"
    proc = _start(db, port)
    try:
        _ready(url)
        acknowledged = 0
        with httpx.Client(base_url=url, timeout=30) as c:
            for s in conv.sessions:
                sid = transcript.content_session_id(conv.sample_id, s.number)
                c.post("/api/sessions/init", json={"contentSessionId": sid, "project": "p"})
                r = c.post("/api/sessions/observations", json={"contentSessionId": sid, **transcript.read_tool_call(conv, s)})
                assert r.json()["status"] == "queued"
                acknowledged += 1
            wait_until(lambda: c.get("/api/processing-status").json()["done"] >= 2, timeout=60, interval=0.01)
            before = c.get("/api/processing-status").json()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert before["queueDepth"] > 0, "the kill must land while work is queued"
        proc = _start(db, port)
        _ready(url)
        with httpx.Client(base_url=url, timeout=30) as c:
            wait_until(lambda: c.get("/api/processing-status").json()["queueDepth"] == 0, timeout=120)
            status = c.get("/api/processing-status").json()
        assert status["done"] == acknowledged and status["failed"] == 0
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    con = sqlite3.connect(db)
    per_item = Counter(q for (q,) in con.execute("SELECT queue_id FROM observations"))
    assert set(per_item) == set(range(1, acknowledged + 1))  # every acknowledged item produced memories
    turns = Counter(t for (m,) in con.execute("SELECT metadata FROM observations")
                    for t in json.loads(m)["source_turns"])
    assert max(turns.values()) == 1  # no turn stored twice


def test_concurrent_ingest_and_search(tmp_path):
    """8 clients ingest into their own projects while 4 search; no errors, nothing lost."""
    with memworker_app(tmp_path) as api:
        errors: list[str] = []

        def writer(n: int) -> None:
            for k in range(5):
                sid = f"w{n}-s{k}"
                if api.post("/api/sessions/init", json={"contentSessionId": sid, "project": f"p{n}"}).status_code != 200:
                    errors.append("init")
                r = api.post("/api/sessions/observations", json={"contentSessionId": sid, "tool_name": "Read",
                                                                 "tool_response": TRANSCRIPT.replace("D1:", f"D{k + 1}:")})
                if r.json().get("status") != "queued":
                    errors.append(str(r.json()))
                if api.post("/api/memory/save", json={"text": f"note {n}-{k} about pottery", "project": f"p{n}"}).status_code != 200:
                    errors.append("save")

        def reader() -> None:
            for _ in range(30):
                r = api.get("/api/search", params={"query": "adoption pottery", "project": "p1", "format": "json"})
                if r.status_code != 200:
                    errors.append(f"search {r.status_code}")

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
        threads += [threading.Thread(target=reader) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        status = drain(api)
        assert errors == []
        assert status["done"] == 40 and status["failed"] == 0
        for n in range(8):
            items = api.get("/api/observations", params={"project": f"p{n}", "limit": 100}).json()["items"]
            saved = [i for i in items if i["subtitle"] == "Manual memory"]
            assert len(saved) == 5
            turns = {t for i in items if i["subtitle"] != "Manual memory" for t in json.loads(i["metadata"])["source_turns"]}
            assert turns == {f"D{k}:{j}" for k in range(1, 6) for j in (2, 3, 4)}
