"""The kit against the real claude-mem 13.25.3 Worker (its npm release), compressor offline.

The Worker runs from ``scripts/claude-mem-peer`` with its own HOME and port; its compressor is
claude-mem's openrouter provider pointed at ``claude_mem_compressor.CompressorStandin``. Without
npm these tests skip and say why (``-ra``). No Chroma here: see ``test_claude_mem_chroma.py``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from locomo_kit.cli import main
from locomo_kit.dataset import get_conversation
from locomo_kit.runs import RunFolder
from locomo_kit.worker.client import WorkerClient

from support.claude_mem_compressor import CompressorStandin
from support.claude_mem_peer import env_without_outputs, real_worker, require_release, worker_log, worker_pid

PROJECT = "locomo-eval-conv-26"
pytestmark = pytest.mark.integration  # the real claude-mem Worker from npm


@pytest.fixture(scope="module", autouse=True)
def release():
    require_release()


@pytest.fixture(autouse=True)
def isolated_outputs(own_outputs, dataset_path):
    return own_outputs


@pytest.fixture()
def conv26(dataset):
    return get_conversation(dataset, "conv-26")


def _records(run: RunFolder, name: str) -> list[dict]:
    return [json.loads(line) for line in (run.path / name).read_text().splitlines()]


def test_transcript_mode_end_to_end(tmp_path, conv26, capsys):
    """Done-when: 19 of 19 sessions, exit 0, coverage@8 >= 0.40 with the kit's keyword fusion;
    then verify, the default strategy's empty retrievals, and a --force re-ingestion."""
    with CompressorStandin() as comp, real_worker(tmp_path / "home", comp.base_url) as w:
        url = w["url"]
        assert main(["run", "--sample", "conv-26", "--worker-url", url, "--query-strategy", "keywords",
                     "--run-id", "kw"]) == 0
        out = capsys.readouterr().out
        assert "sessions ingested: 19, failed: 0" in out and "read-your-writes: the Worker found all 10" in out
        run = RunFolder("kw")
        sessions = [r for r in _records(run, "ingest.jsonl") if r["kind"] == "session"]
        assert [r["status"] for r in sessions] == ["ok"] * 19
        # the real Worker parsed one observation per transcript line from the stand-in's XML
        assert sum(r["observations"] for r in sessions) == len(conv26.turns)
        kinds = comp.kinds()
        assert kinds["observation"] == 19 and kinds["summary"] == 19, kinds
        assert all(c["model"] == "locomo-standin" and c["auth"] == "Bearer " for c in comp.calls)
        with WorkerClient(url) as c:
            rows = c.list_observations(PROJECT)
        first = min(rows, key=lambda o: o.id)
        assert first.narrative == f"[D1:1] Caroline: {conv26.sessions[0].turns[0].text}"
        assert first.type == "discovery" and first.facts and first.subtitle.startswith("Turn D1:1")

        m = run.manifest()
        assert m["ingest"]["succeeded"] is True and m["consistency"]["consistent"] is True
        assert m["worker"]["version"] == "13.25.3" and m["worker"]["compressor_provider"] == "openrouter"
        assert m["worker"]["semantic_search"].startswith("unavailable (uvx")
        assert m["answer"]["query_strategy"] == "keywords" and "not the Worker's own" in m["answer"]["retrieval"]
        scores = _records(run, "scores.jsonl")
        cov = [s["evidence_coverage"]["@8"] for s in scores
           if s["category"] in (1, 2, 3, 4) and s["evidence_coverage"]["@8"] is not None]
        assert len(cov) > 140 and sum(cov) / len(cov) >= 0.40, sum(cov) / len(cov)
        report = (run.path / "report.md").read_text()
        head = report.split("## Run facts")[0]
        assert "kit-side keyword fusion" in head and "DEGRADED WORKER: semantic search unavailable" in head
        assert "INCOMPLETE INGESTION" not in head and "EMPTY RETRIEVALS" not in head

        # verify: the question as the query finds nothing on a keyword-only Worker, and says so
        assert main(["verify", "--sample", "conv-26", "--worker-url", url, "--run-id", "kw"]) == 1
        err = capsys.readouterr().err
        assert "3 of 3 probes found nothing" in err and "--query-strategy keywords" in err
        assert main(["verify", "--sample", "conv-26", "--worker-url", url, "--run-id", "kw",
                     "--query-strategy", "keywords"]) == 0
        capsys.readouterr()

        # the default strategy (question as query) retrieves nothing: the report says so at its top
        assert main(["answer", "--sample", "conv-26", "--worker-url", url, "--run-id", "q",
                     "--answer-model", "extractive"]) == 0
        assert main(["score", "--sample", "conv-26", "--worker-url", url, "--run-id", "q"]) == 0
        assert main(["report", "--sample", "conv-26", "--worker-url", url, "--run-id", "q"]) == 0
        head = (RunFolder("q").path / "report.md").read_text().split("## Run facts")[0]
        assert "EMPTY RETRIEVALS: 152 of 152 questions retrieved no memory at all" in head

        # --force forgets the project and re-ingests with fresh tool_use_ids (claude-mem drops seen ones)
        capsys.readouterr()
        assert main(["ingest", "--sample", "conv-26", "--worker-url", url, "--run-id", "kw", "--force"]) == 0
        assert "sessions ingested: 19, failed: 0" in capsys.readouterr().out
        reset = [r for r in _records(run, "ingest.jsonl") if r["kind"] == "reset"]
        assert reset[0]["deleted_observations"] == len(conv26.turns) and reset[0]["generation"]
        with WorkerClient(url) as c:
            assert len(c.list_observations(PROJECT)) == len(conv26.turns)
        assert comp.kinds()["observation"] == 38


def test_default_provider_stops_transcript_mode_and_turns_mode_saves_exact_turns(tmp_path, conv26, capsys):
    """claude-mem's default provider without the `claude` CLI: transcript mode refuses at once;
    turns mode stores every turn with its source in ``metadata``, returned by search."""
    with real_worker(tmp_path / "home") as w:
        url = w["url"]
        start = time.monotonic()
        assert main(["ingest", "--sample", "conv-26", "--worker-url", url, "--run-id", "t"]) == 1
        assert time.monotonic() - start < 30
        err = capsys.readouterr().err
        assert "compressor cannot run (claude_cli: setup_required" in err and "--mode turns" in err
        assert not (RunFolder("t").path / "ingest.jsonl").exists()

        assert main(["ingest", "--sample", "conv-26", "--worker-url", url, "--run-id", "t", "--mode", "turns"]) == 0
        with WorkerClient(url) as c:
            assert len(c.list_observations(PROJECT)) == len(conv26.turns)
            hits = c.search("adoption agencies", PROJECT, limit=5).observations
        assert hits and all(h.source_turns and h.metadata["source_session"].startswith("locomo-conv-26-s")
                            for h in hits)
        assert "D2:8" in {t for h in hits for t in h.source_turns}
        m = RunFolder("t").manifest()
        assert m["consistency"]["consistent"] and m["worker"]["compressor"].startswith("cannot run")


def test_stopped_compressor_stops_the_run_after_one_timeout(tmp_path, capsys):
    with CompressorStandin() as comp, real_worker(tmp_path / "home", comp.base_url) as w:
        comp.stopped = True
        start = time.monotonic()
        code = main(["run", "--sample", "conv-26", "--worker-url", w["url"], "--query-strategy", "keywords",
                     "--run-id", "stop", "--session-timeout", "8"])
        elapsed = time.monotonic() - start
    captured = capsys.readouterr()
    assert code == 1 and elapsed < 40, elapsed
    assert "compressor is not processing" in captured.err and "queue not empty after 8 s" in captured.err
    assert "sessions ingested: 0, failed: 1, already done: 0, not attempted: 18" in captured.out
    assert comp.kinds().get("refused", 0) >= 1  # the Worker did call it, and was refused
    run = RunFolder("stop")
    assert not (run.path / "report.md").exists() and not (run.path / "answers.jsonl").exists()
    assert run.manifest()["ingest"]["succeeded"] is False


def test_compressor_that_stores_nothing_fails_the_sessions(tmp_path, capsys):
    """A compressor that skips every tool use (claude-mem's code mode on conversations): each
    session stored zero observations, so ``ingest`` fails, loudly."""
    with CompressorStandin() as comp, real_worker(tmp_path / "home", comp.base_url) as w:
        comp.skip_all = True
        assert main(["ingest", "--sample", "conv-26", "--worker-url", w["url"], "--run-id", "z"]) == 1
    out = capsys.readouterr().out
    assert "sessions ingested: 0, failed: 19" in out and out.count("ZERO observations") == 19
    assert comp.kinds()["skip"] == 19


def test_worker_killed_mid_ingestion_then_resumed(tmp_path, conv26):
    home = tmp_path / "home"
    env = env_without_outputs(tmp_path)
    with CompressorStandin(delay=0.4) as comp:
        with real_worker(home, comp.base_url) as w:
            url, port = w["url"], w["port"]
            cmd = [sys.executable, "-m", "locomo_kit", "ingest", "--sample", "conv-26", "--worker-url", url,
                   "--run-id", "kill", "--poll-interval", "0.2"]
            log = tmp_path / "outputs" / "runs" / "kill" / "ingest.jsonl"
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            deadline = time.monotonic() + 120
            while not (log.exists() and len(log.read_text().splitlines()) >= 3):
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.05)
            os.kill(worker_pid(home), signal.SIGKILL)
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 1
            assert "INGESTION STOPPED: locomo-conv-26-s" in out, out + err  # refused, or cut off mid-request
        # the same HOME and port again: the queue held in RAM is gone, the database is not
        with real_worker(home, comp.base_url, port=port):
            again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
            assert again.returncode == 0, again.stdout + again.stderr
            with WorkerClient(url) as c:
                rows = c.list_observations(PROJECT)
    records = [json.loads(line) for line in log.read_text().splitlines()]
    ok = sorted(r["session"] for r in records if r["status"] == "ok")
    assert ok == list(range(1, 20))
    turns = [o.narrative.split("]")[0] + "]" for o in rows]
    assert {t.strip("[]") for t in turns} == {t.dia_id for t in conv26.turns}  # nothing lost
    assert len(turns) == len(conv26.turns), len(turns)  # nothing stored twice
    assert "Worker" in worker_log(home)
