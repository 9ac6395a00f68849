"""Ingestion: resumable, idempotent, loud about empty sessions, clean on failure."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest
from fastapi import FastAPI
from fastapi.responses import HTMLResponse

from locomo_kit.cli import main
from locomo_kit.dataset import get_conversation
from locomo_kit.ingestion import format_verification, ingest_conversation, verify_conversation
from locomo_kit.pipeline.stages import run_ingest
from locomo_kit.runs import RunFolder
from locomo_kit.systems.workers import WorkerSystem
from locomo_kit.worker import transcript
from locomo_kit.worker.client import WorkerClient
from locomo_kit.worker.embedded import EmbeddedWorker, free_port

from support.claude_mem_standin import create_standin, serve


@pytest.fixture(autouse=True)
def isolated_outputs(offline_outputs_dir):
    return offline_outputs_dir


@pytest.fixture()
def conv26(dataset):
    return get_conversation(dataset, "conv-26")


def test_adapter_ids_and_transcript(conv26):
    s = conv26.sessions[0]
    assert transcript.content_session_id("conv-26", 1) == "locomo-conv-26-s1"
    assert transcript.project_name("conv-26") == "locomo-eval-conv-26"
    call = transcript.read_tool_call(conv26, s)
    assert call["tool_name"] == "Read" and call["tool_input"] == {"file_path": "conversation-transcript/session-1.txt"}
    lines = call["tool_response"].splitlines()
    assert lines[0] == "[Session 1 — 1:56 pm on 8 May, 2023]"
    assert lines[1] == "[Conversation between Caroline and Melanie]"
    assert lines[2] == "[D1:1] Caroline: Hey Mel! Good to see you! How have you been?"
    assert len(lines) == 2 + len(s.turns)
    image = next(t for t in conv26.turns if t.image_caption)
    assert transcript.render_turn(image).endswith(f"[shares an image: {image.image_caption}]")
    assert transcript.init_prompt(conv26, s) == "Conversation between Caroline and Melanie on 1:56 pm on 8 May, 2023"


def test_every_locomo_turn_renders_as_one_line_that_memworker_attributes(dataset):
    """37 LoCoMo turns contain line breaks: each must still be one turn, of its speaker, with its id."""
    from memworker.transcript import parse_transcript

    for conv in dataset:
        for s in conv.sessions:
            parsed = parse_transcript(transcript.render_transcript(conv, s))
            assert [(t.turn_id, t.speaker) for t in parsed.turns] == [(t.dia_id, t.speaker) for t in s.turns]


def test_embedded_ingest_verify_and_resume(conv26):
    run, summary = run_ingest("conv-26")
    assert len(summary.ingested) == 19 and not summary.failed and not summary.zero_observation_sessions
    records = [json.loads(l) for l in (run.path / "ingest.jsonl").read_text().splitlines()]
    assert [r["session"] for r in records] == list(range(1, 20))
    assert all(r["fidelity"] is not None for r in records)
    fidelity = run.manifest()["compression"]["samples"]["conv-26"]
    assert fidelity["turns"] == 419 and fidelity["turns_kept"] >= 410  # memworker stores turns as they are
    assert any(line.startswith("compression fidelity conv-26: ") for line in summary.lines())
    manifest = run.manifest()
    assert manifest["dataset"]["sha256"].startswith("79fa87e9") and manifest["worker"]["name"] == "memworker"
    assert manifest["parameters"] == {"sample": "conv-26", "mode": "transcript", "worker_url": "embedded"}
    again_run, again = run_ingest("conv-26")
    assert again_run.path == run.path and again.results == [] and again.skipped == 19
    with EmbeddedWorker(run.path / "memworker.db", embedder="hashing") as url, WorkerClient(url, token="") as c:
        report = verify_conversation(WorkerSystem.around(c), conv26)
    assert report["held"] == sum(r.observations for r in summary.ingested)
    assert [p["category"] for p in report["probes"]] == ["single-hop", "multi-hop", "temporal"]
    assert all(1 <= len(p["results"]) <= 3 for p in report["probes"])
    assert format_verification(report).startswith("locomo-eval-conv-26 in memworker ")


def test_killed_ingestion_resumes_without_duplicates(tmp_path, conv26):
    run_id = "killtest"
    with EmbeddedWorker(tmp_path / "mw.db", embedder="minilm") as url:
        cmd = [sys.executable, "-m", "locomo_kit", "ingest", "--sample", "conv-26", "--worker-url", url,
               "--run-id", run_id, "--poll-interval", "0.2"]
        log = RunFolder(run_id).path / "ingest.jsonl"
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while not (log.exists() and len(log.read_text().splitlines()) >= 3):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        first = len(log.read_text().splitlines())
        assert first < 19
        assert subprocess.run(cmd, capture_output=True, text=True).returncode == 0
        records = [json.loads(l) for l in log.read_text().splitlines()]
        sessions = Counter(r["session"] for r in records if r["status"] == "ok")
        assert sorted(sessions) == list(range(1, 20)) and set(sessions.values()) == {1}
        with WorkerClient(url, token="") as c:
            obs = c.list_observations("locomo-eval-conv-26")
    turns = Counter(t for o in obs for t in o.source_turns)
    assert turns and max(turns.values()) == 1  # no turn (so no session) stored twice


def test_force_forgets_and_reingests(tmp_path, conv26):
    run = RunFolder("force")
    with EmbeddedWorker(tmp_path / "mw.db", embedder="hashing") as url, WorkerClient(url, token="") as c:
        one = ingest_conversation(WorkerSystem.around(c, poll_interval=0.1), conv26, run)
        n = len(c.list_observations("locomo-eval-conv-26"))
        two = ingest_conversation(WorkerSystem.around(c, poll_interval=0.1), conv26, run, force=True)
        assert len(two.ingested) == 19 and len(c.list_observations("locomo-eval-conv-26")) == n
    assert len(one.ingested) == 19
    kinds = [json.loads(l)["kind"] for l in (run.path / "ingest.jsonl").read_text().splitlines()]
    assert kinds.count("reset") == 1 and kinds.count("session") == 38


def test_turns_mode_is_idempotent(tmp_path, conv26):
    run = RunFolder("turns")
    with EmbeddedWorker(tmp_path / "mw.db", embedder="hashing") as url, WorkerClient(url, token="") as c:
        summary = ingest_conversation(WorkerSystem.around(c, mode="turns"), conv26, run)
        assert sum(r.observations for r in summary.ingested) == len(conv26.turns)
        (run.path / "ingest.jsonl").unlink()  # as if the checkpoint were lost mid-way
        ingest_conversation(WorkerSystem.around(c, mode="turns"), conv26, run)
        obs = c.list_observations("locomo-eval-conv-26")
    assert len(obs) == len(conv26.turns)
    assert obs[0].source_turns == ["D1:1"] and obs[0].title == "locomo-conv-26-D1:1"


def test_claude_mem_standin_and_zero_observation_warning(conv26, capsys):
    with serve(create_standin()) as url:
        assert main(["ingest", "--sample", "conv-26", "--worker-url", url, "--poll-interval", "0.05"]) == 0
        out = capsys.readouterr().out
        assert "sessions ingested: 19, failed: 0" in out and "ZERO" not in out

    silent = create_standin()
    silent.state.data["queue"] = _Sink()  # a generator that drops everything, like claude-mem's code mode
    with serve(silent) as url:
        assert main(["ingest", "--sample", "conv-26", "--worker-url", url, "--poll-interval", "0.05",
                     "--run-id", "silent"]) == 1
    out = capsys.readouterr().out
    assert "sessions ingested: 0, failed: 19" in out and out.count("stored ZERO observations") == 19


def test_a_compressor_that_kept_nothing_is_answered_from_the_empty_memory_and_reported_as_junk(capsys):
    """Every session went through the compressor and none stored anything: the run answers from the
    empty memory so that its report says at its top what the compressor kept, and exits 1."""
    silent = create_standin()
    silent.state.data["queue"] = _Sink()
    with serve(silent) as url:
        code = main(["run", "--sample", "conv-26", "--sessions", "2", "--worker-url", url])
    out, err = capsys.readouterr()
    assert code == 1 and "ingest FAILED: 0 sessions done, 0 already done, 2 failed" in out
    assert "compression fidelity conv-26: 0/35 (0%) of turns survive in 0 observations" in out
    assert "answering from the empty memory anyway" in out
    assert "conv-26: the Worker stored nothing of its 2 sessions" in out + err
    (report,) = re.findall(r"^report:\s+(\S+)", out, flags=re.M)
    head = open(report).read().split("## Run facts")[0]
    assert "**JUNK COMPRESSION: the compressor kept almost nothing of conv-26.**" in head
    assert "## 5b. What the memory stored" in open(report).read()


def test_each_session_waits_for_the_previous_summary_and_ingest_for_the_last(capsys):
    """claude-mem queues each session's summary after its observations: on a one-slot compressor the next
    session's calls would wait behind it (and claude-mem's per-call timeout counts that wait), and a command
    started after ``ingest`` would too. The kit sends a session only once the queue is empty, and returns
    once the last summary is written."""
    app = create_standin(summary_delay=0.4)
    with serve(app) as url:
        assert main(["ingest", "--sample", "conv-26", "--sessions", "3", "--worker-url", url,
                     "--poll-interval", "0.05"]) == 0
        returned = time.monotonic()
    events = app.state.data["events"]
    inits = [t for kind, _, t in events if kind == "init"]
    summaries = [t for kind, _, t in events if kind == "summary"]
    assert len(inits) == 3 and len(summaries) == 3
    assert inits[1] > summaries[0] and inits[2] > summaries[1]  # each session after the previous summary
    assert returned > summaries[2]  # ingest returned after the last one
    assert "ingest ok: 3 sessions done" in capsys.readouterr().out


class _Sink(list):
    def append(self, item):  # queued work vanishes
        pass


def test_worker_down_one_line_and_nothing_written(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("LOCOMO_WORKER_RESTART_WINDOW", "0")  # no Worker is coming back here
    url = f"http://127.0.0.1:{free_port()}"
    assert main(["ingest", "--sample", "conv-26", "--worker-url", url]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith(f"locomo-kit: error: Worker not running at {url}")
    assert not (tmp_path / "outputs").exists()


def test_a_wait_for_a_worker_that_is_down_is_announced(capsys, monkeypatch):
    monkeypatch.setenv("LOCOMO_WORKER_RESTART_WINDOW", "1")
    url = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("LOCOMO_WORKER_URL", url)
    assert main(["verify", "--sample", "conv-26"]) == 1
    first, second = capsys.readouterr().err.strip().splitlines()
    assert first == f"no Worker answers at {url} (from LOCOMO_WORKER_URL); retrying for up to 1 s"
    assert second.startswith(f"locomo-kit: error: Worker not running at {url} (start it with `.venv/bin/python -m")


def test_worker_answering_garbage(tmp_path, capsys):
    garbage = FastAPI()

    @garbage.api_route("/{path:path}", methods=["GET", "POST"])
    def anything(path: str):
        return HTMLResponse("<html>I am a web page</html>")

    with serve(garbage) as url:
        assert main(["ingest", "--sample", "conv-26", "--worker-url", url]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "did not answer JSON" in err
    assert not (tmp_path / "outputs").exists()


def test_wrong_url_scheme_is_one_line(capsys):
    assert main(["ingest", "--sample", "conv-26", "--worker-url", "ftp://nowhere"]) == 1
    assert capsys.readouterr().err.startswith("locomo-kit: error:")


def test_stuck_worker_queue_stops_ingestion_after_one_timeout(conv26, capsys):
    stuck = create_standin()
    stuck.state.data["queue"] = _Stuck()
    with serve(stuck) as url:
        code = main(["ingest", "--sample", "conv-26", "--worker-url", url, "--session-timeout", "0.2",
                     "--poll-interval", "0.05"])
    out = capsys.readouterr().out
    assert code == 1
    assert "sessions ingested: 0, failed: 1, already done: 0, not attempted: 18" in out
    assert "INGESTION STOPPED: locomo-conv-26-s1: Worker queue not empty after 0 s" in out


class _Stuck(list):
    """A queue whose work never finishes (claude-mem with an exhausted LLM quota)."""

    def append(self, item):
        super().append(item)

    def pop(self, index=-1):
        raise IndexError  # the generator never takes work

    def __bool__(self):
        return False  # the generator sees nothing to do, the status still counts it


def test_progress_of_a_finished_conversation_counts_its_sessions_as_done(tmp_path, dataset, capsys):
    """A rerun with nothing left to send shows 19/19 sessions, not 0/0 (and sends nothing)."""
    conv = get_conversation(dataset, "conv-26")
    run = RunFolder("done", root=tmp_path)
    for s in conv.sessions:
        run.append("ingest.jsonl", {"kind": "session", "sample_id": conv.sample_id, "session": s.number,
                                    "mode": "transcript", "status": "ok", "observations": 3})
    summary = ingest_conversation(WorkerSystem.around(None), conv, run, progress=True)  # no Worker: nothing may be sent
    assert summary.results == [] and summary.skipped == len(conv.sessions)
    err = capsys.readouterr().err
    assert f"{len(conv.sessions)}/{len(conv.sessions)}" in err and "0/0" not in err
