"""The paid path against a loopback stand-in of the Messages API (tests/support/anthropic_standin.py),
through the real Anthropic SDK: shared pool, throttling, failures that stay pending, plan and
preflight, cache keyed by server. Behaviour is checked, never time."""

from __future__ import annotations

import json
import re

import pytest

from locomo_kit.costs import plan, prompt_tokens
from locomo_kit.llm import CachedLLM, CompletionCache
from locomo_kit.llm.anthropic_llm import AnthropicLLM
from locomo_kit.llm.base import LLMRequest
from locomo_kit.llm.execute import CallSettings, PreflightError, SpendRefused, execute, preflight
from locomo_kit.llm.pool import Throttle
from locomo_kit.reports.pending import pending_calls
from locomo_kit.runs import RunFolder
from locomo_kit.runs.records import load_judgements
from locomo_kit.scoring.judge import PLAYBOOK_VERSION, Judge, judge_answers

from support.anthropic_standin import AnthropicStandin, running

QUIET = {"log": lambda line: None, "progress": False}


def answers(n: int) -> list[dict]:
    return [{"sample_id": "conv-26", "question_index": i, "question": f"What did Caroline do on day {i}?",
             "gold": f"thing {i}", "prediction": f"thing {i}", "category": 1 + i % 4, "category_name": "single-hop",
             "config_key": "k1", "answerer": "anthropic/claude-opus-4-6"} for i in range(n)]


def anthropic(url: str, tmp_path, key: str = "sk-test", model: str = "claude-sonnet-4-6") -> CachedLLM:
    return CachedLLM(AnthropicLLM(model, api_key=key, base_url=url), CompletionCache(tmp_path / "llm.sqlite"))


def test_one_pool_across_questions_fills_the_concurrency(tmp_path):
    s = AnthropicStandin(latency=0.3)
    with running(s) as url:
        judge = Judge(anthropic(url, tmp_path), "playbook", runs=4)
        made = judge_answers(RunFolder("r", root=tmp_path), judge, answers(12), settings=CallSettings(concurrency=12),
                             **QUIET)
    assert len(made) == 12 and all(j.status == "complete" and j.n_ok == 4 for j in made)
    assert len(s.message_calls(200)) == 48 + 1  # + the preflight
    # calls of different questions overlap: not waves of 3 per question
    assert s.peak_in_flight == 12


def test_a_server_allowing_one_call_at_a_time_gets_few_extra_requests(tmp_path):
    s = AnthropicStandin(latency=0.01, max_in_flight=1, retry_after=0.05)
    requests = [LLMRequest([{"role": "user", "content": f"q{i}"}], max_tokens=5) for i in range(60)]
    outcomes = []
    with running(s) as url:
        execute(anthropic(url, tmp_path), requests, outcomes.append, stage="t",
                settings=CallSettings(concurrency=16, preflight=False), **QUIET)
    assert len(outcomes) == 60 and all(o.ok for o in outcomes)
    total = len(s.message_calls())
    assert len(s.message_calls(200)) == 60
    assert total <= 60 * 1.5, f"{total} requests for 60 calls"  # the unthrottled audit saw 1.9x


def test_throttle_cuts_once_per_generation_and_pauses_everyone():
    now = [0.0]
    t = Throttle(32, clock=lambda: now[0])
    assert t.limit == 4  # slow start
    tickets = [t.acquire() for _ in range(4)]
    for ticket in tickets:
        t.release(ticket, ok=True)
    assert t.limit == 8  # doubled in one round of successes
    tickets = [t.acquire() for _ in range(8)]
    for ticket in tickets:  # all eight were sent before anyone heard 429: one cut, not eight
        t.release(ticket, ok=False, throttled=True, retry_after=2.0)
    assert t.limit == 4 and t.paused_until == 2.0 and t.throttled == 8


def test_outage_failures_stay_pending_and_a_rerun_makes_exactly_those_calls(tmp_path):
    s = AnthropicStandin()
    served = []

    def responder(body):  # the outage starts after 25 calls have been answered
        served.append(1)
        if len(served) == 25:
            s.outage = 529
        return json.dumps({"score": 70, "explanation": "fine"})

    s.responder = responder
    run = RunFolder("r", root=tmp_path)
    settings = CallSettings(concurrency=4, retries=1, base_delay=0.01, preflight=False)
    with running(s) as url:
        judge = Judge(anthropic(url, tmp_path), "playbook", runs=10)
        with pytest.warns(UserWarning, match="judge calls failed"):
            first = judge_answers(run, judge, answers(6), settings=settings, **QUIET)
        assert len(first) == 6
        failed = sum(len(j.failed_runs) for j in first)
        assert 0 < failed < 60 and all(r["score"] == 70 for j in first for r in j.runs)  # no failure became a score
        assert any(j.status == "incomplete" for j in first)
        lines = pending_calls(run)
        assert any(f"{failed} call(s) failed and are pending" in line for line in lines)

        s.outage = None
        before = len(s.message_calls())
        second = judge_answers(run, judge, answers(6), settings=settings, **QUIET)
        assert len(s.message_calls()) - before == failed  # exactly the failed calls, nothing else
        assert {j.question_index for j in second} == {j.question_index for j in first if j.failed_runs}
    final = load_judgements(run)
    assert len(final) == 6 and all(j["status"] == "complete" and j["n_ok"] == 10 for j in final)
    assert sorted(r["run"] for r in final[0]["runs"]) == list(range(10))
    assert pending_calls(run) == []


def test_legacy_failed_runs_stored_as_minus_one_are_retried(tmp_path):
    """Judgements written before failures were kept apart: a -1 run with an API error is a pending call."""
    run = RunFolder("r", root=tmp_path)
    a = answers(1)[0]
    runs = [{"run": i, "score": 50.0, "explanation": "", "error": None} for i in range(9)]
    runs.append({"run": 9, "score": -1.0, "explanation": "", "error": "LLMError: anthropic 529: overloaded"})
    run.append("judgements.jsonl", {"sample_id": "conv-26", "question_index": 0, "category": a["category"],
                                    "protocol": "playbook", "judge_model": "anthropic/claude-sonnet-4-6",
                                    "prompt_version": PLAYBOOK_VERSION,
                                    "answer_config_key": "k1", "answerer": a["answerer"], "runs": runs, "mean": 50.0,
                                    "std": 0.0, "n_ok": 9, "n_runs": 10, "warning": "x"})
    s = AnthropicStandin()
    with running(s) as url:
        judge = Judge(anthropic(url, tmp_path), "playbook", runs=10)
        made = judge_answers(run, judge, [a], settings=CallSettings(preflight=False), **QUIET)
    assert len(s.message_calls()) == 1 and made[0].n_ok == 10 and made[0].status == "complete"


def test_preflight_stops_a_bad_key_before_any_work(tmp_path):
    s = AnthropicStandin(api_keys={"sk-good"})
    run = RunFolder("r", root=tmp_path)
    with running(s) as url:
        judge = Judge(anthropic(url, tmp_path, key="sk-bad"), "playbook", runs=10)
        with pytest.raises(PreflightError, match="refused, nothing was done: anthropic 401"):
            judge_answers(run, judge, answers(20), **QUIET)
    assert len(s.requests) == 1 and s.requests[0]["body"]["max_tokens"] == 1  # one tiny call, not 200 doomed ones
    assert list(run.records("judgements.jsonl")) == []


def test_preflight_stops_an_unknown_model(tmp_path):
    s = AnthropicStandin(models={"claude-sonnet-4-6"})
    with running(s) as url:
        with pytest.raises(PreflightError, match="rejected \\(404\\)"):
            preflight(anthropic(url, tmp_path, model="claude-sonnet-9"))
    assert len(s.requests) == 1


def test_plan_counts_only_calls_still_needed_and_max_cost_refuses(tmp_path):
    s = AnthropicStandin()
    run = RunFolder("r", root=tmp_path)
    lines: list[str] = []
    with running(s) as url:
        judge = Judge(anthropic(url, tmp_path), "playbook", runs=2)
        with pytest.raises(SpendRefused, match="above --max-cost"):
            judge_answers(run, judge, answers(10), settings=CallSettings(max_cost=0.0001), log=lines.append,
                          progress=False)
        assert s.requests == [] and "20 calls to anthropic/claude-sonnet-4-6 still needed (0 already done)" in lines[0]
        asked = []
        with pytest.raises(SpendRefused, match="not confirmed"):
            judge_answers(run, judge, answers(10), settings=CallSettings(confirm=lambda p: asked.append(p) or False),
                          **QUIET)
        assert len(asked) == 1 and s.requests == []
        judge_answers(run, judge, answers(4), settings=CallSettings(preflight=False), **QUIET)
        lines.clear()
        judge_answers(run, judge, answers(10), settings=CallSettings(preflight=False), log=lines.append, progress=False)
        assert "12 calls to anthropic/claude-sonnet-4-6 still needed (8 already done)" in lines[0]
        lines.clear()
        assert judge_answers(run, judge, answers(10), log=lines.append, progress=False) == []
        assert not any("still needed" in line for line in lines)  # a rerun with nothing to do prints no plan


def test_plan_estimates_tokens_from_the_actual_prompts():
    r = LLMRequest([{"role": "user", "content": "x" * 700}], system="y" * 350, max_tokens=256)
    assert prompt_tokens(r.system, r.messages) == 308
    p = plan("judging", "anthropic/claude-sonnet-4-6", [r] * 10, 5, output_per_call=45)
    assert (p.input_tokens, p.output_tokens, p.max_output_tokens) == (3080, 450, 2560)
    assert p.usd == pytest.approx(3080 * 3e-6 + 450 * 15e-6) and p.max_usd > p.usd
    assert plan("judging", "anthropic/claude-sonnet-4-6", [r], 0, 45, batch=True).usd == pytest.approx(
        (308 * 3e-6 + 45 * 15e-6) / 2)


def test_cache_key_includes_the_server(tmp_path):
    a, b = AnthropicStandin(), AnthropicStandin()
    request = LLMRequest([{"role": "user", "content": "same"}], max_tokens=5)
    with running(a) as url_a, running(b) as url_b:
        for url in (url_a, url_b, url_a):
            execute(anthropic(url, tmp_path), [request], lambda o: None, stage="t",
                    settings=CallSettings(preflight=False), **QUIET)
    assert len(a.message_calls()) == 1 and len(b.message_calls()) == 1  # b's reply never served as a's


def test_cli_routes_answerer_and_judge_apart_and_exits_non_zero_while_calls_fail(tmp_path, monkeypatch, capsys):
    """`run` with a local OpenAI-compatible answerer and an Anthropic judge, each on its own server; the
    judge's server is down: exit 1, the report says so at its top; a rerun retries and exits 0."""
    from locomo_kit.cli import main

    from support.claude_mem_standin import serve
    from support.llm_standins import Script, openai_app, openai_completion

    monkeypatch.setenv("LOCOMO_OUTPUTS_DIR", str(tmp_path))
    monkeypatch.setenv("LOCOMO_EMBEDDER", "hashing")
    monkeypatch.setenv("CI", "1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    judge = AnthropicStandin()
    answerer = Script([(200, openai_completion("7 May 2023"))])
    argv = ["run", "--sample", "conv-30", "--run-id", "split", "--answer-model", "openai/local-model",
            "--judge-model", "anthropic/claude-sonnet-4-6", "--judge-runs", "2", "--yes", "--retries", "0",
            "--calibration-size", "0"]
    with serve(openai_app(answerer)) as answer_url, running(judge) as judge_url:
        argv += ["--answer-base-url", f"{answer_url}/v1", "--judge-base-url", judge_url]
        first = judge.responder

        def down_after_the_preflight(body):
            judge.outage = 529
            return first(body)

        judge.responder = down_after_the_preflight
        with pytest.warns(UserWarning):
            assert main(argv) == 1
        err = capsys.readouterr().err
        failed = int(re.search(r"judge \(playbook\): (\d+) call\(s\) failed and are pending", err).group(1))
        assert failed >= 162  # 81 questions x 2 runs, and the questions whose gold the audited key changes
        report = (tmp_path / "runs" / "split" / "report.md").read_text()
        assert "J (playbook) is over partial data: 81 question(s) have fewer valid judge runs" in report.split("##")[0]
        assert {r["path"] for r in judge.requests} == {"/v1/messages"}  # never /v1/v1/messages
        assert all(r["body"]["model"] == "local-model" for r in answerer.requests)
        judge.outage, judge.responder = None, first
        before = len(judge.message_calls())
        assert main(argv) == 0
    assert len(judge.message_calls()) - before == failed
    assert "fewer valid judge runs" not in (tmp_path / "runs" / "split" / "report.md").read_text()


def test_score_judge_protocol_without_a_judge_model_is_an_error(tmp_path, monkeypatch, capsys):
    from locomo_kit.cli import main

    monkeypatch.setenv("LOCOMO_OUTPUTS_DIR", str(tmp_path))
    assert main(["score", "--sample", "conv-26", "--judge-protocol", "mem0"]) == 1
    assert "--judge-protocol mem0 needs --judge-model" in capsys.readouterr().err


def test_rate_buckets_space_requests_and_tokens():
    now = [0.0]
    t = Throttle(100, rpm=60, tpm=600, clock=lambda: now[0])
    t.limit = 100
    for _ in range(5):  # the request bucket holds 5 seconds' worth at 1 a second
        t.release(t.acquire(tokens=10), ok=True)
    assert t._requests.wait_for(1, now[0]) == pytest.approx(1.0)
    assert t._tokens.wait_for(10, now[0]) == pytest.approx(1.0)  # 50 of 50 tokens spent, 10 come back a second
    now[0] = 1.0
    assert t._requests.wait_for(1, now[0]) == 0.0 and t._tokens.wait_for(10, now[0]) == 0.0


def test_the_timeout_is_configurable_and_a_timed_out_call_stays_pending(tmp_path):
    s = AnthropicStandin(latency=2.0)
    outcomes = []
    with running(s) as url:
        llm = CachedLLM(AnthropicLLM("m", api_key="k", base_url=url, timeout=0.3), CompletionCache(tmp_path / "c.sqlite"))
        execute(llm, [LLMRequest([{"role": "user", "content": "x"}], max_tokens=5)], outcomes.append, stage="t",
                settings=CallSettings(retries=1, base_delay=0.01, preflight=False), **QUIET)
    (o,) = outcomes
    assert not o.ok and "timed out" in o.error.lower() and "gave up after 2 attempts" in o.error


def test_on_a_terminal_the_plan_is_confirmed_before_spending(tmp_path):
    """`score` in a real pseudo-terminal: answering "n" spends nothing, "y" spends."""
    import os
    import pty
    import subprocess
    import sys

    run = RunFolder("tty", root=tmp_path / "runs")
    for a in answers(3):
        run.append("answers.jsonl", dict(a, sample_id="conv-26", status="ok", evidence=[], retrieved=[], source="memory",
                                         top_k=8, prompt_version="v", answerer_label="x", adversarial_answer=None))
    run.update_manifest(parameters={"sample": "conv-26"})
    env = dict(os.environ, LOCOMO_OUTPUTS_DIR=str(tmp_path), ANTHROPIC_API_KEY="sk-test", CI="1")
    s = AnthropicStandin()

    def score(reply: str) -> tuple[int, str]:
        primary, secondary = pty.openpty()
        cmd = [sys.executable, "-m", "locomo_kit", "score", "--sample", "conv-26", "--run-id", "tty", "--judge-model",
               "anthropic/claude-sonnet-4-6", "--judge-base-url", url, "--judge-runs", "2", "--calibration-size", "0",
               "--gold", "original"]
        proc = subprocess.Popen(cmd, stdin=secondary, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
        os.close(secondary)
        os.write(primary, reply.encode() + b"\n")
        out, _ = proc.communicate(timeout=120)
        os.close(primary)
        return proc.returncode, out.decode()

    with running(s) as url:
        code, out = score("n")
        assert code == 1 and "6 calls to anthropic/claude-sonnet-4-6 still needed" in out and "not confirmed" in out
        assert s.requests == [] and list(run.records("judgements.jsonl")) == []
        code, out = score("y")
        assert code == 0, out
    assert len(s.message_calls()) == 1 + 6 and len(list(run.records("judgements.jsonl"))) == 3
