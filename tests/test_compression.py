"""Compression fidelity (what a compressing Worker kept) and the paused-generator watch, without a Worker."""

from __future__ import annotations

import pytest

from locomo_kit.dataset import get_conversation
from locomo_kit.runs import RunFolder
from locomo_kit.scoring.compression import compression_banner, sample_fidelity, session_fidelity, summary_lines
from locomo_kit.worker.client import WorkerError, WorkerTimeout
from locomo_kit.worker.queue import GeneratorPaused, llm_timeout_s, wait_for_queue


@pytest.fixture()
def conv26(dataset):
    return get_conversation(dataset, "conv-26")


def test_a_pass_through_compressor_keeps_every_turn_and_a_junk_one_none(conv26):
    s1 = conv26.sessions[0]
    verbatim = [f"[{t.dia_id}] {t.speaker}: {t.text}" for t in s1.turns]
    kept = session_fidelity(s1, verbatim)
    assert kept["fidelity"] == 1.0 and kept["lost_turns"] == []
    junk = ["Added feature to Claude Code session: OAuth2 with PKCE for the login flow"]  # claude-mem's own example
    lost = session_fidelity(s1, junk)
    assert lost["turns_kept"] == 0 and len(lost["lost_turns"]) == len(s1.turns)
    half = session_fidelity(s1, verbatim[: len(verbatim) // 2])
    assert half["turns_kept"] == len(verbatim) // 2


def test_evidence_survives_anywhere_and_junk_is_flagged_at_the_top_of_the_report(conv26, tmp_path):
    first = conv26.sessions[:2]
    verbatim = [f"{t.speaker}: {t.text}" for s in first for t in s.turns]
    sessions = {s.number: session_fidelity(s, verbatim) for s in first}
    record = sample_fidelity(conv26, verbatim, sessions)
    assert record["turns_kept"] >= sum(len(s.turns) for s in first)  # a short later turn may match by its words
    assert 0 < record["evidence_kept"] < record["evidence_turns"]  # the evidence in later sessions was never sent
    lines = summary_lines({"samples": {"conv-26": record}})
    assert lines[0].startswith("compression fidelity conv-26: ") and "lowest session s" in lines[0] and "of 2 " in lines[0]
    assert len(lines) == 1 and len(lines[0]) < 250  # one short line per conversation, whatever its sessions
    junk = sample_fidelity(conv26, ["OAuth2 PKCE login flow added"], {})
    run = RunFolder("r", root=tmp_path)
    run.update_manifest(compression={"samples": {"conv-26": junk}}, worker={"compressor_provider": "openrouter"})
    (banner,) = compression_banner(run)
    assert banner.startswith("> **JUNK COMPRESSION: the compressor kept almost nothing of conv-26.**")
    assert any(line.startswith("WARNING: conv-26: the compressor kept almost nothing") for line in
               summary_lines({"samples": {"conv-26": junk}}))
    run.update_manifest(compression={"samples": {"conv-26": record}})
    assert compression_banner(run)[0].startswith("> The compression fidelity of conv-26: ")
    run.update_manifest(worker={"compressor_provider": "rules"})  # memworker stores turns as they are: no line
    assert compression_banner(run) == []


class FakeWorker:
    """processing-status frozen at isProcessing/queueDepth 1 (claude-mem after "Generator paused")."""

    def __init__(self, settings, progress_until: float = 0.0, clock=None):
        self.settings, self.progress_until, self.clock = settings, progress_until, clock
        self.observations = 0

    def _request(self, method, route, **kw):
        if self.settings is None:
            raise WorkerError("404 Not Found")
        return self.settings

    def processing_status(self):
        return {"isProcessing": True, "queueDepth": 1}

    def iter_observations(self, project):
        if self.clock() < self.progress_until:
            self.observations += 1  # a working generator adds observations
        return iter(range(self.observations))

    def wait_for_processing(self, timeout, poll_interval):
        raise WorkerTimeout(f"Worker queue not empty after {timeout:.0f} s")


def test_a_paused_generator_is_named_long_before_the_session_timeout():
    now = [0.0]
    clock = lambda: now[0]

    def sleep(s):
        now[0] += s

    worker = FakeWorker({"CLAUDE_MEM_LLM_TIMEOUT_MS": "30000", "CLAUDE_MEM_PROVIDER": "openrouter"}, clock=clock)
    assert llm_timeout_s(worker) == 30.0
    with pytest.raises(GeneratorPaused, match="CLAUDE_MEM_LLM_TIMEOUT_MS = 30000 ms") as exc:
        wait_for_queue(worker, "p", timeout=900, poll_interval=3, llm_timeout=30.0, clock=clock, sleep=sleep)
    assert "at most 300000" in str(exc.value) and 75 <= now[0] < 90  # 2 x 30 s + 15 s, not 900 s
    now[0] = 0.0
    working = FakeWorker({"CLAUDE_MEM_PROVIDER": "openrouter"}, progress_until=500, clock=clock)
    assert llm_timeout_s(working) == 30.0  # claude-mem's default when the setting is absent
    with pytest.raises(WorkerTimeout) as exc:  # progressing: the plain session timeout, not "paused"
        wait_for_queue(working, "p", timeout=400, poll_interval=3, llm_timeout=30.0, clock=clock, sleep=sleep)
    assert not isinstance(exc.value, GeneratorPaused)
    assert llm_timeout_s(FakeWorker(None)) is None  # memworker, stand-ins: no /api/settings
    assert llm_timeout_s(FakeWorker({"CLAUDE_MEM_LLM_TIMEOUT_MS": "900000", "CLAUDE_MEM_X": 1})) == 30.0


def test_finished_at_is_when_the_session_finished(tmp_path, conv26, monkeypatch):
    """A session that takes over a second: its record's finished_at is after its start."""
    import importlib
    from datetime import datetime, timedelta

    from locomo_kit.ingestion import ingest_conversation
    from locomo_kit.systems.workers import WorkerSystem
    from locomo_kit.worker.client import WorkerClient

    from support.claude_mem_standin import create_standin, serve

    ingest_module = importlib.import_module("locomo_kit.systems.workers")

    real = ingest_module.ingest_transcript_session

    def slow(*args, **kwargs):
        import time

        time.sleep(1.5)
        return real(*args, **kwargs)

    monkeypatch.setattr(ingest_module, "ingest_transcript_session", slow)
    one = __import__("dataclasses").replace(conv26, sessions=conv26.sessions[:1])
    with serve(create_standin()) as url, WorkerClient(url, token="") as client:
        before = datetime.now().astimezone()
        ingest_conversation(WorkerSystem.around(client, url=url), one, RunFolder("f", root=tmp_path), progress=False)
    (rec,) = [r for r in RunFolder("f", root=tmp_path).records("ingest.jsonl") if r.get("kind") == "session"]
    assert datetime.fromisoformat(rec["finished_at"]) >= before.replace(microsecond=0) + timedelta(seconds=1)
