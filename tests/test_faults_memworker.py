"""memworker under faults: a full disk, transient item failures, a second Worker, broken database files.

Each test names the fault, injects it for real where this machine allows (a small tmpfs filled to
the last byte, real processes, real files), and checks the outcome it must have: every
acknowledged observation stored exactly once after recovery, and a clear message otherwise.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import httpx
import pytest

from locomo_kit.worker.embedded import free_port

from support.faults import fill, small_filesystem, start_memworker, stop, wait_ready
from support.helpers import TRANSCRIPT, drain, memworker_app, wait_until

DISK_FULL = sqlite3.OperationalError("database or disk is full")


def _transcript(session: int, turns: int = 3) -> str:
    lines = [f"[Session {session} — 1:56 pm on 8 May, 2023]", "[Conversation between Caroline and Melanie]"]
    words = ("zebra", "quokka", "harbor", "mango", "violin", "glacier", "lantern", "canyon")
    lines += [f"[D{session}:{k}] {'Caroline' if k % 2 else 'Melanie'}: I saw "
              + " and ".join(f"{w}{session}x{k}" for w in words) + "." for k in range(1, turns + 1)]
    return "\n".join(lines) + "\n"


def _queue(client, sid: str, transcript: str, tool_use_id: str | None = None, project: str = "p") -> dict:
    init = client.post("/api/sessions/init", json={"contentSessionId": sid, "project": project})
    if init.status_code != 200:
        return {**init.json(), "http": init.status_code}
    r = client.post("/api/sessions/observations", json={"contentSessionId": sid, "tool_name": "Read",
                                                        "tool_response": transcript, "tool_use_id": tool_use_id})
    return {**r.json(), "http": r.status_code}


def _stored_once(db: Path, acknowledged: set[int]) -> None:
    """Every acknowledged queue item is done and produced its memories; no turn is stored twice."""
    con = sqlite3.connect(db)
    try:
        status = dict(con.execute("SELECT id, status FROM queue").fetchall())
        assert {q: status.get(q) for q in acknowledged} == {q: "done" for q in acknowledged}
        per_item = {q for (q,) in con.execute("SELECT DISTINCT queue_id FROM observations")}
        assert acknowledged <= per_item
        turns = Counter(t for (m,) in con.execute("SELECT metadata FROM observations WHERE queue_id IS NOT NULL")
                        for t in json.loads(m)["source_turns"])
        assert turns and max(turns.values()) == 1
    finally:
        con.close()


# -- 1. a full disk -----------------------------------------------------------------------------
def test_queue_survives_storage_errors_and_readiness_reports_them(tmp_path):
    """Injected: every write of the queue thread fails (disk full), then space comes back."""
    with memworker_app(tmp_path, retry_base_seconds=0.05) as api:
        store = api.app.state.service.store
        failing = threading.Event()
        failing.set()
        calls = Counter()
        real_commit, real_fail = store.commit_memories, store.fail_item

        def commit(*a, **k):
            calls["commit"] += 1
            if failing.is_set():
                raise DISK_FULL
            return real_commit(*a, **k)

        def fail_item(*a, **k):
            calls["fail"] += 1
            if failing.is_set():
                raise DISK_FULL
            return real_fail(*a, **k)

        store.commit_memories, store.fail_item = commit, fail_item
        acked = _queue(api, "s1", TRANSCRIPT, "u1")
        assert acked["http"] == 200 and acked["status"] == "queued" and acked.get("queueId")
        wait_until(lambda: calls["commit"] >= 3, timeout=10)  # retried, not abandoned
        r = api.get("/api/readiness")
        assert r.status_code == 503 and "disk is full" in r.json()["reason"]
        failing.clear()
        status = drain(api)
        assert status["done"] == 1 and status["failed"] == 0
        assert api.get("/api/readiness").status_code == 200
        _queue(api, "s2", _transcript(2), "u2")
        assert drain(api)["done"] == 2
        _stored_once(Path(store.path), {1, 2})


def test_full_disk_for_real_then_space_freed(tmp_path):
    """A real 16 MB filesystem filled to the last byte under a running memworker, then freed."""
    with small_filesystem(tmp_path) as fs:
        db, port = fs / "mw.db", free_port()
        url = f"http://127.0.0.1:{port}"
        proc = start_memworker(db, port, "--retry-base-seconds", "0.05")
        try:
            wait_ready(url)
            acknowledged: set[int] = set()
            with httpx.Client(base_url=url, timeout=30) as c:
                acked = _queue(c, "s0", _transcript(1), "u0")
                acknowledged.add(acked["queueId"])
                drain(c)
                # leave room for the acknowledging commit but not for the memories it produces
                filler = fill(fs, leave_bytes=64 * 1024)
                answers = [_queue(c, f"s{k}", _transcript(k, turns=60), f"u{k}") for k in range(1, 6)]
                for a in answers:
                    assert a["http"] in (200, 507), a
                    if a["http"] == 200:
                        assert a["status"] == "queued" and a["queueId"]
                        acknowledged.add(a["queueId"])
                    else:
                        assert "disk" in a["message"].lower() or "space" in a["message"].lower()
                assert len(acknowledged) > 1, "the test needs an acknowledged item that cannot be processed"
                wait_until(lambda: c.get("/api/readiness").status_code == 503, timeout=15)
                assert c.get("/api/health").status_code == 200  # still answering, and honest about it
                filler.unlink()
                wait_until(lambda: c.get("/api/processing-status").json()["queueDepth"] == 0, timeout=30)
                status = c.get("/api/processing-status").json()
                assert status["failed"] == 0
                assert c.get("/api/readiness").status_code == 200
                refused = [k for k, a in enumerate(answers, 1) if a["http"] == 507]
                for k in refused:  # what was refused can be sent again now
                    a = _queue(c, f"s{k}", _transcript(k, turns=60), f"u{k}")
                    assert a["status"] == "queued" and a["queueId"]
                    acknowledged.add(a["queueId"])
                wait_until(lambda: c.get("/api/processing-status").json()["queueDepth"] == 0, timeout=30)
        finally:
            stop(proc)
        _stored_once(db, acknowledged)


# -- 2. transient failures ----------------------------------------------------------------------
def test_a_transiently_failing_item_is_retried_until_stored(tmp_path):
    with memworker_app(tmp_path, retry_base_seconds=0.05) as api:
        svc = api.app.state.service
        original, calls = svc.extractor.extract, Counter()

        def flaky(t):
            calls["n"] += 1
            if calls["n"] <= 2:
                raise TimeoutError("extractor timed out")
            return original(t)

        svc.extractor.extract = flaky
        _queue(api, "s1", TRANSCRIPT, "u1")
        status = drain(api)
        assert status["done"] == 1 and status["failed"] == 0 and calls["n"] == 3


def test_resending_a_failed_item_requeues_it(tmp_path):
    with memworker_app(tmp_path, retry_base_seconds=0.01, max_attempts=2) as api:
        svc = api.app.state.service
        original = svc.extractor.extract
        svc.extractor.extract = lambda t: (_ for _ in ()).throw(ConnectionError("LLM down"))
        first = _queue(api, "s1", TRANSCRIPT, "u1")
        status = drain(api)
        assert status["failed"] == 1 and status["done"] == 0
        svc.extractor.extract = original
        again = _queue(api, "s1", TRANSCRIPT, "u1")
        assert again["status"] == "queued" and again["queueId"] == first["queueId"]
        assert again.get("requeued") is True
        status = drain(api)
        assert status["failed"] == 0 and status["done"] == 1
        dup = _queue(api, "s1", TRANSCRIPT, "u1")  # a done item stays done
        assert dup["reason"] == "duplicate"
        _stored_once(Path(svc.store.path), {first["queueId"]})


# -- 3. one Worker per database -----------------------------------------------------------------
def test_a_second_worker_on_one_database_is_refused(tmp_path):
    db, port = tmp_path / "mw.db", free_port()
    first = start_memworker(db, port)
    try:
        wait_ready(f"http://127.0.0.1:{port}")
        second = subprocess.run([sys.executable, "-m", "memworker", "--port", str(free_port()), "--db-path", str(db),
                                 "--embedder", "hashing"], capture_output=True, text=True, timeout=60)
        assert second.returncode == 2
        assert f"pid {first.pid}" in second.stderr and "already serving" in second.stderr
        assert "Traceback" not in second.stderr
    finally:
        stop(first)
    again = start_memworker(db, port)  # the lock goes with the process
    try:
        wait_ready(f"http://127.0.0.1:{port}")
    finally:
        stop(again)


# -- 11. broken database files ------------------------------------------------------------------
def _run_memworker(db: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memworker", "--port", str(free_port()), "--db-path", str(db),
                           "--embedder", "hashing"], capture_output=True, text=True, timeout=60)


def _populated_db(tmp_path: Path) -> Path:
    with memworker_app(tmp_path) as api:
        for k in range(1, 9):
            _queue(api, f"s{k}", _transcript(k, turns=30), f"u{k}")
        drain(api)
        return Path(api.app.state.service.store.path)


def test_a_corrupted_database_is_refused_at_start_with_what_to_do(tmp_path):
    db = _populated_db(tmp_path)
    size = db.stat().st_size
    with open(db, "r+b") as fh:  # the header page intact, the tables' pages garbage
        fh.seek(4096 * 2)
        fh.write(os.urandom(size - 4096 * 2))
    out = _run_memworker(db)
    assert out.returncode == 2, out.stderr[-2000:]
    assert "corrupt" in out.stderr.lower() and str(db) in out.stderr and "Traceback" not in out.stderr
    assert "restore" in out.stderr.lower() or "move it aside" in out.stderr.lower()


def test_a_malformed_setting_in_the_environment_is_refused_with_its_name(tmp_path):
    out = subprocess.run([sys.executable, "-m", "memworker", "--port", str(free_port()), "--db-path",
                          str(tmp_path / "mw.db")], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "MEMWORKER_EMBED_THREADS": "two"})
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "MEMWORKER_EMBED_THREADS='two' is not a valid int (its default: 2)" in out.stderr
    assert not (tmp_path / "mw.db").exists()  # refused before anything was created


def test_a_garbage_file_is_refused_with_a_message(tmp_path):
    db = tmp_path / "mw.db"
    db.write_bytes(b"this is not a database\n" * 200)
    out = _run_memworker(db)
    assert out.returncode == 2 and "not a memworker database" in out.stderr.lower() and "Traceback" not in out.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions; the read-only mount test covers it")
def test_a_read_only_database_file_is_refused_with_a_message(tmp_path):
    db = _populated_db(tmp_path)
    db.chmod(0o444)
    out = _run_memworker(db)
    assert out.returncode == 2 and "read-only" in out.stderr.lower() and "Traceback" not in out.stderr


def test_a_database_on_a_read_only_filesystem_is_refused_with_a_message(tmp_path):
    db = _populated_db(tmp_path)
    with small_filesystem(tmp_path) as fs:
        (fs / "mw.db").write_bytes(db.read_bytes())
        remount = subprocess.run(["mount", "-o", "remount,ro", str(fs)], capture_output=True, text=True)
        if remount.returncode:
            pytest.skip(f"cannot remount read-only: {remount.stderr.strip()}")
        out = _run_memworker(fs / "mw.db")
    assert out.returncode == 2, out.stderr[-2000:]
    assert "read-only" in out.stderr.lower() and "Traceback" not in out.stderr


# -- 10. one large item -------------------------------------------------------------------------
def test_a_large_item_is_committed_in_chunks_resumes_where_it_stopped_and_lets_others_through(tmp_path):
    with memworker_app(tmp_path, chunk_memories=8, retry_base_seconds=0.02) as api:
        store = api.app.state.service.store
        real_commit, calls = store.commit_memories, []
        small_queued = threading.Event()

        def commit(queue_id, memories, threshold, progress=None):
            if queue_id == 1:  # the large item
                small_queued.wait(10)  # the small one is queued behind it before its first chunk
                calls.append((queue_id, len(memories), progress))
                if len(calls) == 3:
                    raise DISK_FULL  # its third chunk fails once: it resumes at its recorded progress
            return real_commit(queue_id, memories, threshold, progress)

        store.commit_memories = commit
        large = _queue(api, "big", _transcript(1, turns=40), "u-big")
        small = _queue(api, "small", _transcript(2, turns=2), "u-small")
        small_queued.set()
        assert large["queueId"] == 1
        status = drain(api)
        assert status["done"] == 2 and status["failed"] == 0
        chunks = [c for c in calls if c[0] == large["queueId"]]
        assert len(chunks) == 6 and all(n == 8 for _, n, _ in chunks)  # 40 memories, one chunk tried twice
        progress = [p for _, _, p in chunks]
        assert [p for i, p in enumerate(progress) if i == 0 or p != progress[i - 1]] == [8, 16, 24, 32, None]
        con = sqlite3.connect(store.path)
        done_at = dict(con.execute("SELECT id, processed_at_epoch FROM queue").fetchall())
        con.close()
        assert done_at[small["queueId"]] <= done_at[large["queueId"]]  # not stuck behind the large item
        _stored_once(Path(store.path), {large["queueId"], small["queueId"]})


def test_a_large_item_is_extracted_once_and_small_items_wait_for_at_most_one_of_its_chunks(tmp_path):
    """Bounded work per step: a chunk of a split item costs its own memories (the transcript is not
    parsed and extracted again per chunk), and the small items queued behind a large one all go
    after its first chunk (a chunk's worth of their work), not one small item per chunk."""
    with memworker_app(tmp_path, chunk_memories=8) as api:
        svc = api.app.state.service
        store = svc.store
        extracted, order = Counter(), []
        real_extract, real_commit = svc.extractor.extract, store.commit_memories
        queued = threading.Event()

        def extract(transcript):
            extracted[transcript.session] += 1
            return real_extract(transcript)

        def commit(queue_id, memories, threshold, progress=None):
            queued.wait(10)  # everything is queued before the first step
            order.append((queue_id, progress))
            return real_commit(queue_id, memories, threshold, progress)

        svc.extractor.extract, store.commit_memories = extract, commit
        large = _queue(api, "big", _transcript(1, turns=40), "u-big")
        small = [_queue(api, f"small{k}", _transcript(k, turns=2), f"u-small{k}")["queueId"] for k in (2, 3, 4)]
        queued.set()
        status = drain(api)
        assert status["done"] == 4 and status["failed"] == 0
        assert extracted[1] == 1  # five chunks, one extraction
        steps = [q for q, _ in order]
        assert steps[0] == large["queueId"] and order[0][1] == 8
        assert steps[1:4] == small  # 3 small items × 2 memories ≤ one chunk of 8: all before its 2nd chunk
        assert steps[4:] == [large["queueId"]] * 4
        _stored_once(Path(store.path), {large["queueId"], *small})


def test_a_chunk_deduplicates_like_one_memory_at_a_time(tmp_path):
    """The batch de-duplication of a chunk (one matrix product) merges exactly the memories the
    one-by-one rule merges: into stored memories, into memories inserted earlier in the same chunk,
    and into the nearest of several."""
    import numpy as np

    from memworker.store import NewMemory, Store

    rng = np.random.default_rng(7)

    def unit(v):
        return (v / np.linalg.norm(v)).astype(np.float32)

    base = [unit(rng.normal(size=32)) for _ in range(6)]
    near = lambda v, eps: unit(v + eps * unit(rng.normal(size=32)))
    stored = base[:3]
    chunk = [near(base[0], 0.1), base[3], near(base[3], 0.1), near(base[4], 2.0), base[4], near(base[4], 0.05),
             near(base[1], 0.3), base[5], near(base[2], 0.05)]

    def mem(v, k):
        return NewMemory(project="p", memory_session_id=None, type="fact", title=f"m{k}", subtitle="", narrative=f"m{k}",
                         body=f"m{k}", context="", facts=[f"m{k}"], concepts=[], metadata={"source_turns": [f"D1:{k}"]},
                         importance=0.5, event_epoch=None, embedding=v)

    outcomes = []
    for batched in (True, False):
        store = Store(tmp_path / f"d{batched}.db")
        try:
            first = store.commit_memories(None, [mem(v, k) for k, v in enumerate(stored)], 0.85)
            if batched:
                touched = store.commit_memories(None, [mem(v, 10 + k) for k, v in enumerate(chunk)], 0.85)
            else:
                touched = [i for k, v in enumerate(chunk) for i in store.commit_memories(None, [mem(v, 10 + k)], 0.85)]
            outcomes.append(([first.index(t) if t in first else f"new{touched.index(t)}" for t in touched],
                             store.stats()["observations"]))
        finally:
            store.close()
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0][0] == 0 and outcomes[0][0][2] == "new1"  # into a stored one; into one of the chunk


def test_the_vector_cache_grows_without_copying_and_stays_exact(tmp_path):
    import numpy as np

    from memworker.store import Store

    store = Store(tmp_path / "v.db")
    try:
        rng = np.random.default_rng(0)
        vectors = rng.normal(size=(300, 16)).astype(np.float32)
        copies, previous = 0, None
        for i, v in enumerate(vectors):
            store._add_vector("p", 1000 + i, v)
            current = store._vectors["p"][1]
            copies += previous is None or not np.shares_memory(previous, current)
            previous = current
        assert copies <= 4  # a new buffer at 64, 128 and 256 rows, not a copy of the matrix per memory
        ids, mat = store._vectors["p"]
        assert ids.tolist() == list(range(1000, 1300)) and np.array_equal(mat, vectors)
        assert store.dense_candidates("p", vectors[123], 1) == {1123: pytest.approx(float(vectors[123] @ vectors[123]))}
    finally:
        store.close()


def test_only_memories_of_the_same_speaker_merge(tmp_path):
    """The same words said by the other person are another memory (their attribution is kept);
    in a batch and one at a time alike."""
    import numpy as np

    from memworker.store import NewMemory, Store

    vec = np.ones(16, dtype=np.float32) / 4.0

    def mem(speaker, turn):
        return NewMemory(project="p", memory_session_id=None, type="fact", title=turn, subtitle="", narrative=turn,
                         body=turn, context="", facts=[f"{speaker}: congrats!"], concepts=[],
                         metadata={"source_turns": [turn], **({"speaker": speaker} if speaker else {})},
                         importance=0.5, event_epoch=None, embedding=vec)

    for batched in (True, False):
        store = Store(tmp_path / f"s{batched}.db")
        try:
            memories = [mem("Caroline", "D1:1"), mem("Melanie", "D1:2"), mem("Caroline", "D2:1"),
                        mem("Melanie", "D2:2"), mem(None, "D3:1"), mem(None, "D3:2")]
            if batched:
                store.commit_memories(None, memories, 0.85)
            else:
                for m in memories:
                    store.commit_memories(None, [m], 0.85)
            rows = store.rows(store.project_ids("p"))
            turns = sorted(json.loads(r["metadata"])["source_turns"] for r in rows.values())
        finally:
            store.close()
        assert turns == [["D1:1", "D2:1"], ["D1:2", "D2:2"], ["D3:1", "D3:2"]], batched
