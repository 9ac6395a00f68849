"""The kit under faults: killed mid-ingestion, a full disk under its run folder, a torn JSONL tail,
a Worker that fails an item, a Worker restarting or resetting a connection."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from locomo_kit.runs import RunFolder, RunStorageError
from locomo_kit.worker.client import WorkerClient
from locomo_kit.worker.embedded import free_port

from support.claude_mem_standin import serve
from support.faults import fill, processes_using, small_filesystem, start_memworker, stop, wait_ready
from support.helpers import wait_until
from support.llm_standins import openai_completion


def _kit(outputs: Path, *args: str, **popen) -> subprocess.Popen:
    env = {**os.environ, "LOCOMO_OUTPUTS_DIR": str(outputs), "LOCOMO_EMBEDDER": "hashing", "CI": "1"}
    return subprocess.Popen([sys.executable, "-m", "locomo_kit", *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen)


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def _turns_stored_once(db: Path) -> int:
    con = sqlite3.connect(db)
    try:
        turns = Counter(t for (m,) in con.execute("SELECT metadata FROM observations")
                        for t in json.loads(m)["source_turns"])
    finally:
        con.close()
    assert turns and max(turns.values()) == 1, [t for t, n in turns.items() if n > 1][:5]
    return len(turns)


# -- 3. no orphan Worker ------------------------------------------------------------------------
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_killing_the_kit_leaves_no_orphan_worker_and_the_rerun_stores_everything_once(tmp_path, sig, dataset_path):
    outputs = tmp_path / "outputs"
    run = outputs / "runs" / "killed"
    db = run / "memworker.db"
    kit = _kit(outputs, "ingest", "--sample", "conv-26", "--run-id", "killed")
    try:
        wait_until(lambda: _lines(run / "ingest.jsonl") >= 2 or kit.poll() is not None, timeout=120)
        assert kit.poll() is None, kit.communicate()
        workers = processes_using(db)
        assert workers, "the embedded Worker should be running"
        kit.send_signal(sig)
        kit.wait(timeout=30)
        wait_until(lambda: not processes_using(db), timeout=15)  # the Worker died with the kit
    finally:
        if kit.poll() is None:
            kit.kill()
        kit.communicate()
        for pid in processes_using(db):  # never leave one behind, whatever the outcome
            os.kill(pid, signal.SIGKILL)
    rerun = _kit(outputs, "ingest", "--sample", "conv-26", "--run-id", "killed")
    out, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, err[-2000:]
    assert "failed: 0" in out
    records = [json.loads(x) for x in (run / "ingest.jsonl").read_text().splitlines()]
    assert {r["session"] for r in records if r["status"] == "ok"} == set(range(1, 20))
    assert _turns_stored_once(db) > 300
    assert not processes_using(db)


# -- 4. the run folder --------------------------------------------------------------------------
def test_a_torn_tail_is_cut_before_the_next_append(tmp_path):
    run = RunFolder("r", root=tmp_path)
    run.append("answers.jsonl", {"q": 1})
    with open(run.path / "answers.jsonl", "a") as fh:
        fh.write('{"q": 2, "prediction": "half a li')  # a crash mid-write
    with pytest.warns(UserWarning, match="torn last line"):
        run.append("answers.jsonl", {"q": 2, "prediction": "whole"})
    assert list(run.records("answers.jsonl")) == [{"q": 1}, {"q": 2, "prediction": "whole"}]


def _append_many(folder: str, writer: int, count: int) -> None:
    run = RunFolder("r", root=Path(folder))
    for i in range(count):  # long lines, as an answer with its retrieved context: written page by page
        run.append("answers.jsonl", {"writer": writer, "i": i, "context": f"{writer}:{i} " * 12_000})


def test_processes_appending_to_one_file_at_once_lose_no_line(tmp_path):
    """A system's conversations split over processes append to the same record files: none may take another's
    line, half written, for a torn tail to cut (MemPalace once lost one answer of 1,540 that way)."""
    import multiprocessing
    import warnings

    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_append_many, args=(str(tmp_path), w, 300)) for w in range(3)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(300)
    assert [proc.exitcode for proc in procs] == [0, 0, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an unreadable line would only warn
        records = list(RunFolder("r", root=tmp_path).records("answers.jsonl"))
    assert sorted((r["writer"], r["i"]) for r in records) == [(w, i) for w in range(3) for i in range(300)]
    assert all(r["context"] == f"{r['writer']}:{r['i']} " * 12_000 for r in records)


def test_an_answer_reported_done_but_not_on_disk_fails_the_run_and_a_rerun_answers_it(offline_outputs_dir, monkeypatch,
                                                                                      capsys):
    """The answer stage checks its own records as it checks a system's: an answer it counted but did not write
    (a lost line) makes the run exit 1, not a smaller result; the same command again answers what is missing."""
    from locomo_kit.cli import main

    real, dropped = RunFolder.append, []

    def losing_one(self, name, record):
        if name == "answers.jsonl" and record.get("status") == "ok" and not dropped:
            dropped.append((record["sample_id"], record["question_index"]))
            return None
        return real(self, name, record)

    argv = ["run", "--sample", "conv-26@s1", "--system", "bm25", "--limit", "3"]
    monkeypatch.setattr(RunFolder, "append", losing_one)
    assert main(argv) == 1
    printed = capsys.readouterr()
    assert "1 answer(s) reported done are not in" in printed.out + printed.err
    assert f"first: {dropped[0][0]} q{dropped[0][1]}" in printed.out + printed.err
    monkeypatch.setattr(RunFolder, "append", real)
    assert main(argv) == 0
    assert "official F1" in capsys.readouterr().out


def test_a_full_disk_ends_the_run_with_a_clear_message_and_no_torn_line(tmp_path, dataset_path):
    with small_filesystem(tmp_path, size="4m") as fs:
        run = RunFolder("r", root=fs)
        run.append("answers.jsonl", {"q": 0})
        filler = fill(fs, leave_bytes=100)
        with pytest.raises(RunStorageError, match="No space left on device.*Free space on that disk.*rerun"):
            run.append("answers.jsonl", {"q": 1, "prediction": "x" * 5000})
        with pytest.raises(RunStorageError, match="manifest.json"):
            run.update_manifest(parameters={"sample": "conv-26"})
        assert (run.path / "answers.jsonl").read_text() == '{"q": 0}\n'
        filler.unlink()
        run.append("answers.jsonl", {"q": 1})
        assert [r["q"] for r in run.records("answers.jsonl")] == [0, 1]


def test_the_cli_on_a_full_disk_says_what_to_do_without_a_traceback(tmp_path, dataset_path):
    port = free_port()
    worker = start_memworker(tmp_path / "mw.db", port)
    try:
        wait_ready(f"http://127.0.0.1:{port}")
        with small_filesystem(tmp_path, size="4m") as fs:
            filler = fill(fs)
            kit = _kit(fs / "outputs", "ingest", "--sample", "conv-26", "--worker-url", f"http://127.0.0.1:{port}")
            out, err = kit.communicate(timeout=120)
            assert kit.returncode == 1, err[-2000:]
            assert "No space left on device" in err and "rerun the same command" in err
            assert "Traceback" not in err
            filler.unlink()
    finally:
        stop(worker)


# -- 2. no false "done" -------------------------------------------------------------------------
def _extractor_standin(failing: threading.Event) -> FastAPI:
    """An OpenAI-compatible extractor: one memory per transcript line; 500 while ``failing`` is set
    and the transcript is session 3's."""
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        text = (await request.json())["messages"][1]["content"]
        if failing.is_set() and "[Session 3 " in text:
            return JSONResponse({"error": "upstream overloaded"}, 500)
        lines = [x for x in text.splitlines() if x.strip() and not x.startswith("[")]  # "Speaker: text"
        memories = [{"content": line, "type": "fact", "importance": 0.5} for line in lines]
        return openai_completion(json.dumps({"memories": memories}))

    return app


def test_a_session_the_worker_failed_is_never_recorded_done_and_a_rerun_stores_it(tmp_path, dataset_path):
    failing = threading.Event()
    failing.set()
    outputs, port = tmp_path / "outputs", free_port()
    with serve(_extractor_standin(failing)) as llm_url:
        worker = start_memworker(tmp_path / "mw.db", port, "--extractor", "llm", "--llm-base-url", llm_url,
                                 "--llm-model", "m", "--max-attempts", "2", "--retry-base-seconds", "0.05")
        try:
            url = f"http://127.0.0.1:{port}"
            wait_ready(url)
            first = _kit(outputs, "ingest", "--sample", "conv-26", "--worker-url", url, "--run-id", "r",
                         "--poll-interval", "0.2")
            out, err = first.communicate(timeout=300)
            assert first.returncode == 1
            assert "sessions ingested: 18, failed: 1" in out and "failed to process the transcript of session 3" in out
            failing.clear()
            second = _kit(outputs, "ingest", "--sample", "conv-26", "--worker-url", url, "--run-id", "r",
                          "--poll-interval", "0.2")
            out, err = second.communicate(timeout=300)
            assert second.returncode == 0, out + err[-2000:]
            assert "sessions ingested: 1, failed: 0, already done: 18" in out
            status = httpx.get(f"{url}/api/processing-status").json()
            assert status["failed"] == 0 and status["queueDepth"] == 0
        finally:
            stop(worker)
    assert _turns_stored_once(tmp_path / "mw.db") > 300


# -- 12. a restarting Worker --------------------------------------------------------------------
def test_the_client_waits_for_a_restarting_worker(tmp_path):
    port = free_port()
    worker: list[subprocess.Popen] = []
    timer = threading.Timer(4.0, lambda: worker.append(start_memworker(tmp_path / "mw.db", port)))
    timer.start()
    try:
        with WorkerClient(f"http://127.0.0.1:{port}", token="") as client:
            assert client.wait_until_ready(timeout=60)["name"] == "memworker"
    finally:
        timer.join()
        for w in worker:
            stop(w)


def test_a_reset_connection_on_a_get_is_retried():
    """A server that resets the first connection, then answers: health succeeds."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]

    def serve_once() -> None:
        first, _ = listener.accept()
        first.recv(65536)
        first.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")  # RST on close
        first.close()
        second, _ = listener.accept()
        second.recv(65536)
        body = b'{"status": "ok", "name": "memworker"}'
        second.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                       + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n" + body)
        second.close()

    thread = threading.Thread(target=serve_once, daemon=True)
    thread.start()
    try:
        with WorkerClient(f"http://127.0.0.1:{port}", token="", backoff=0.01) as client:
            assert client.health()["status"] == "ok"
    finally:
        listener.close()
        thread.join(timeout=5)
