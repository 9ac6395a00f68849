"""--batch: Message Batches through the real SDK against the loopback stand-in's Batches endpoints."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
from test_paid_calls import answers

from locomo_kit.llm import CachedLLM, CompletionCache
from locomo_kit.llm.anthropic_llm import AnthropicLLM
from locomo_kit.llm.batches import BATCHES_FILE, open_batches, split
from locomo_kit.llm.execute import CallSettings
from locomo_kit.qa.context import format_context
from locomo_kit.runs import RunFolder
from locomo_kit.runs.records import load_judgements
from locomo_kit.scoring.judge import Judge, judge_answers

from support.anthropic_standin import AnthropicStandin, running
from support.helpers import wait_until

QUIET = {"log": lambda line: None, "progress": False}
BATCH = CallSettings(batch=True, poll_interval=0.05)


def judge_for(url: str, tmp_path, runs: int = 10) -> Judge:
    llm = CachedLLM(AnthropicLLM("claude-sonnet-4-6", api_key="sk-test", base_url=url),
                    CompletionCache(tmp_path / "llm.sqlite"))
    return Judge(llm, "playbook", runs=runs)


def creates(s: AnthropicStandin) -> list[dict]:
    return [r for r in s.requests if r["path"] == "/v1/messages/batches"]


def test_one_batch_for_the_whole_stage_matched_by_custom_id(tmp_path):
    s = AnthropicStandin()
    run = RunFolder("r", root=tmp_path)
    with running(s) as url:
        made = judge_answers(run, judge_for(url, tmp_path), answers(15), settings=BATCH, **QUIET)
    (create,) = creates(s)
    assert len(create["body"]["requests"]) == 150
    assert [r["body"]["max_tokens"] for r in s.message_calls()] == [1]  # only the preflight went to /v1/messages
    assert len(made) == 15 and all(j.status == "complete" and j.n_ok == 10 for j in made)
    # results come back shuffled; each run got the reply to its own request
    by_id = {r["custom_id"]: r["params"] for r in create["body"]["requests"]}
    assert all(p["model"] == "claude-sonnet-4-6" and p["max_tokens"] == 256 for p in by_id.values())
    assert open_batches(run, "judging (playbook)") == []
    events = [r["event"] for r in run.records(BATCHES_FILE)]
    assert events == ["submitted", "collected"]


def test_failed_items_are_resubmitted_alone(tmp_path):
    s = AnthropicStandin()
    run = RunFolder("r", root=tmp_path)
    judge = None
    with running(s) as url:
        judge = judge_for(url, tmp_path, runs=2)
        reqs = [judge.request(a, r) for a in answers(5) for r in range(2)]
        from locomo_kit.llm.cache import request_key

        bad = [request_key(judge.llm.llm, reqs[i]) for i in (1, 4, 7)]
        s.batch_errors = {bad[0]: "overloaded_error", bad[1]: "api_error", bad[2]: "invalid_request_error"}
        made = judge_answers(run, judge, answers(5), settings=BATCH, **QUIET)
    first, second = creates(s)
    assert len(first["body"]["requests"]) == 10
    # only the retryable failures go again; the rejected request stays failed (pending), not a score
    assert sorted(r["custom_id"] for r in second["body"]["requests"]) == sorted(bad[:2])
    failed = [f for j in made for f in j.failed_runs]
    assert len(failed) == 1 and "invalid_request_error" in failed[0]["error"]
    assert sum(j.n_ok for j in made) == 9


def test_split_keeps_within_both_limits():
    items = [{"custom_id": f"c{i}", "params": {"x": "y" * 100}} for i in range(10)]
    assert [len(c) for c in split(items, max_requests=4)] == [4, 4, 2]
    size = len(json.dumps(items[0])) + 2
    assert [len(c) for c in split(items, max_bytes=int(3 * size / 0.95) + 1)] == [3, 3, 3, 1]


def _score_cmd(url: str, run_id: str) -> list[str]:
    return [sys.executable, "-m", "locomo_kit", "score", "--sample", "conv-26", "--run-id", run_id,
            "--judge-model", "anthropic/claude-sonnet-4-6", "--judge-base-url", url,
            "--batch", "--batch-poll", "0.1", "--yes", "--calibration-size", "0", "--gold", "original"]


def _answer_records(dataset) -> list[dict]:
    conv = next(c for c in dataset if c.sample_id == "conv-26")
    out = []
    for q in conv.questions:
        if q.category == 5:
            continue
        out.append({"sample_id": "conv-26", "question_index": q.index, "question": q.question, "category": q.category,
                    "category_name": q.category_name, "gold": q.answer, "adversarial_answer": None,
                    "evidence": list(q.evidence), "prediction": str(q.answer), "status": "ok", "source": "memory",
                    "answerer": "anthropic/claude-opus-4-6", "answerer_label": "anthropic/claude-opus-4-6",
                    "prompt_version": "answer-v1", "config_key": "k1", "top_k": 8, "retrieved": []})
    return out


def test_killed_while_the_batch_runs_a_rerun_resumes_the_same_batch(tmp_path, dataset, dataset_path):
    """Judging conv-26 (152 questions x 10 runs) with --batch: one submission; a real SIGKILL of the
    command while it polls, and the rerun polls the recorded batch id instead of submitting again."""
    s = AnthropicStandin()
    s.hold_batches = True
    run = RunFolder("killed", root=tmp_path / "runs")
    for rec in _answer_records(dataset):
        run.append("answers.jsonl", rec)
    run.update_manifest(parameters={"sample": "conv-26"})
    env = dict(os.environ, LOCOMO_OUTPUTS_DIR=str(tmp_path), ANTHROPIC_API_KEY="sk-test", CI="1",
               LOCOMO_DATASET=str(dataset_path))
    with running(s) as url:
        proc = subprocess.Popen(_score_cmd(url, "killed"), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            wait_until(lambda: open_batches(run, "judging (playbook)") and any(
                r["path"].startswith("/v1/messages/batches/msgbatch_") for r in s.requests), timeout=60)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        (submitted,) = open_batches(run, "judging (playbook)")
        assert len(creates(s)) == 1 and len(submitted["custom_ids"]) == 1520
        assert [r["body"]["max_tokens"] for r in s.message_calls()] == [1]  # the preflight, no message calls
        s.hold_batches = False
        rerun = subprocess.run(_score_cmd(url, "killed"), env=env, capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert f"resuming Message Batch {submitted['batch_id']}" in rerun.stdout
    assert len(creates(s)) == 1  # no second submission
    judgements = load_judgements(run)
    assert len(judgements) == 152 and all(j["n_ok"] == 10 and j["status"] == "complete" for j in judgements)
    assert [r["body"]["max_tokens"] for r in s.message_calls()] == [1, 1]  # one preflight per process, nothing else


def test_answering_with_batch_makes_one_submission(tmp_path, monkeypatch, capsys):
    """`answer --batch`: the Worker is searched for every question, then all answer calls go as one batch, and the
    answerer's no-memory floor (the same questions with an empty context) as another."""
    from locomo_kit.cli import main

    monkeypatch.setenv("LOCOMO_OUTPUTS_DIR", str(tmp_path))
    monkeypatch.setenv("LOCOMO_EMBEDDER", "hashing")
    monkeypatch.setenv("CI", "1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    s = AnthropicStandin()
    argv = ["answer", "--sample", "conv-30", "--run-id", "ab", "--answer-model", "anthropic/claude-opus-4-6",
            "--batch", "--batch-poll", "0.05", "--yes"]
    with running(s) as url:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
        assert main(["ingest", "--sample", "conv-30", "--run-id", "ab"]) == 0
        assert main(argv + ["--answer-base-url", url]) == 0
        create, floor = creates(s)
        assert len(create["body"]["requests"]) == len(floor["body"]["requests"]) == 81
        empty = format_context([]) + "\n\nQuestion: "
        assert not any(r["params"]["messages"][0]["content"].startswith(empty) for r in create["body"]["requests"])
        assert all(r["params"]["messages"][0]["content"].startswith(empty) for r in floor["body"]["requests"])
        assert main(argv + ["--answer-base-url", url]) == 0  # a rerun: nothing left to do
    assert len(creates(s)) == 2 and [r["body"]["max_tokens"] for r in s.message_calls()] == [1]
    records = [json.loads(line) for line in (tmp_path / "runs" / "ab" / "answers.jsonl").read_text().splitlines()]
    assert len(records) == 81 and all(r["status"] == "ok" and r["prediction"].startswith("stand-in answer")
                                      for r in records)
    out = capsys.readouterr().out
    assert "answering: all" not in out  # the rerun had no calls to plan or make
    # the floor's calls are planned, priced and counted like the answers' (--max-cost, the confirmation)
    assert "no-memory floor: 81 calls to anthropic/claude-opus-4-6 still needed (0 already done)" in out
    assert out.count("at the 50% batch price") == 2


def test_batch_needs_an_anthropic_model(tmp_path):
    from locomo_kit.llm import ScriptedLLM
    from locomo_kit.llm.base import LLMConfigError

    llm = ScriptedLLM(['{"score": 5}'], model="local")
    with pytest.raises(LLMConfigError, match="--batch needs an anthropic/<model>"):
        judge_answers(RunFolder("r", root=tmp_path), Judge(llm, "playbook", runs=1), answers(2), settings=BATCH, **QUIET)


def test_a_stage_above_the_batch_limit_is_split_and_every_part_recorded_before_polling(tmp_path, monkeypatch):
    import locomo_kit.llm.batches as batches

    monkeypatch.setattr(batches, "MAX_REQUESTS", 5)
    s = AnthropicStandin()
    s.hold_batches = True
    run = RunFolder("r", root=tmp_path)
    polled_with_all_recorded = []

    def release_when_all_recorded(seconds):
        polled_with_all_recorded.append(len(open_batches(run, "judging (playbook)")) == 3)
        s.hold_batches = False

    with running(s) as url:
        judge = judge_for(url, tmp_path, runs=2)
        reqs = [judge.request(a, r) for a in answers(6) for r in range(2)]
        from locomo_kit.llm.cache import request_key

        pending = {request_key(judge.llm.llm, r): r for r in reqs}
        got = {}
        ids = batches.run_batches(judge.llm.llm, pending, run, "judging (playbook)", lambda k, c: None,
                                  lambda k, c, e, n: got.__setitem__(k, c), poll_interval=0.01, log=lambda line: None,
                                  progress=False, sleep=release_when_all_recorded)
    assert [len(c["body"]["requests"]) for c in creates(s)] == [5, 5, 2] and len(set(ids)) == 3
    assert polled_with_all_recorded and polled_with_all_recorded[0]  # all three submitted before the first poll
    assert len(got) == 12 and all(c is not None for c in got.values())
