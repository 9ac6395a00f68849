"""Judging: exact requests through the real SDKs, parsing, aggregation, resumability."""

from __future__ import annotations

import json
import math
import statistics

import pytest

from locomo_kit.llm import ScriptedLLM
from locomo_kit.llm.anthropic_llm import AnthropicLLM
from locomo_kit.llm.execute import CallSettings
from locomo_kit.llm.openai_llm import OpenAICompatibleLLM
from locomo_kit.runs import RunFolder
from locomo_kit.runs.records import load_judgements
from locomo_kit.scoring.judge import (
    PLAYBOOK_SYSTEM,
    Judge,
    aggregate_runs,
    judge_answers,
    mem0_j_by_run,
    parse_mem0,
    parse_playbook,
)

from support.claude_mem_standin import serve
from support.llm_standins import Script, anthropic_app, anthropic_message, openai_app, openai_completion

ANSWER = {"sample_id": "conv-26", "question_index": 3, "question": "When did Caroline go to the LGBTQ support group?",
          "gold": "7 May 2023", "prediction": "7 May 2023", "category": 2, "category_name": "temporal",
          "config_key": "abc", "answerer": "anthropic/claude-opus-4-6"}
RUN_SCORES = [70, 72, 68, 71, 73, 69, 70, 72, 71, 70]


def test_aggregation_of_ten_runs():
    agg = aggregate_runs(RUN_SCORES)
    assert agg["mean"] == pytest.approx(70.6)
    assert agg["std"] == pytest.approx(1.5055453054, abs=1e-9)  # sample std (ddof=1); population std is 1.4283
    assert agg["n_ok"] == 10 and agg["warning"] is None


def test_failed_runs_are_excluded_with_a_warning():
    agg = aggregate_runs([70, -1, 72, 68, -1, 71, 73, 69, 70, 72])
    assert agg["n_ok"] == 8 and agg["mean"] == pytest.approx(statistics.mean([70, 72, 68, 71, 73, 69, 70, 72]))
    assert agg["warning"] == "2 of 10 judge runs failed and were excluded"
    few = aggregate_runs([80, -1, -1, -1, -1, -1, 90, -1, -1, -1])
    assert "only 2 judge run(s) succeeded (fewer than 5)" in few["warning"]
    assert math.isnan(aggregate_runs([-1, -1])["mean"])


@pytest.mark.parametrize("reply, score, error", [
    ('{"score": 85, "explanation": "Right date."}', 85, None),
    ('Sure! ```json\n{"score": 40, "explanation": "partly"}\n```', 40, None),
    ("I would give this 90 out of 100.", 90, None),
    ("The answer is wrong.", -1, "unparseable"),
    ('{"score": "high"}', -1, "unparseable"),
])
def test_parse_playbook(reply, score, error):
    s, _, err = parse_playbook(reply)
    assert s == score and (err is None if error is None else error in err)


@pytest.mark.parametrize("reply, label", [
    ('{"explanation": "same day", "label": "CORRECT"}', 1), ('{"label": "WRONG"}', 0),
    ("Reasoning... so it is CORRECT", 1), ("This is INCORRECT, i.e. WRONG", 0), ("no idea", -1),
])
def test_parse_mem0(reply, label):
    assert parse_mem0(reply)[0] == label


def _replies(scores):
    return [(200, anthropic_message(json.dumps({"score": s, "explanation": "ok"}), 300, 20)) for s in scores]


def test_playbook_judge_through_the_anthropic_sdk():
    script = Script(_replies(RUN_SCORES))
    with serve(anthropic_app(script)) as url:
        llm = AnthropicLLM("claude-sonnet-4-6", api_key="k", base_url=url, sleep=lambda s: None)
        with pytest.warns(UserWarning, match="temperature"):
            j = Judge(llm, "playbook").judge(ANSWER)
    assert len(script.requests) == 10
    body = script.requests[0]["body"]
    assert body["model"] == "claude-sonnet-4-6" and body["max_tokens"] == 256 and body["system"] == PLAYBOOK_SYSTEM
    assert "temperature" not in body and script.requests[0]["headers"]["anthropic-version"] == "2026-10-21"
    user = body["messages"][0]["content"]
    assert "Question category: temporal" in user and "Gold answer: 7 May 2023" in user and "Candidate answer: 7 May 2023" in user
    assert j.mean == pytest.approx(70.6) and j.n_ok == 10 and j.warning is None
    assert sorted(r["score"] for r in j.runs) == sorted(RUN_SCORES)
    assert j.params["api_version"] == "sdk-default"


def test_malformed_replies_and_two_failures_through_the_sdk():
    replies = _replies([70, 72, 68, 71, 73, 69, 70, 72])
    replies[2:2] = [(200, anthropic_message("I cannot grade this.")),
                    (400, {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}})]
    script = Script(replies)
    with serve(anthropic_app(script)) as url:
        llm = AnthropicLLM("claude-sonnet-4-6", api_key="k", base_url=url, api_version="2023-06-01", sleep=lambda s: None)
        j = Judge(llm, "playbook").judge(ANSWER)
    assert script.requests[0]["body"]["temperature"] == 0.5  # legacy opt-in sends it
    (unparseable,) = [r for r in j.runs if r["score"] == -1]  # a judge reply: the protocol's sentinel
    assert "unparseable" in unparseable["error"]
    (failed,) = j.failed_runs  # a failed call: pending, never a score
    assert "400" in failed["error"] and failed["run"] not in [r["run"] for r in j.runs]
    assert j.status == "incomplete" and len(j.runs) == 9 and j.n_ok == 8
    assert j.warning == ("1 of 10 judge calls failed (pending: rerun to retry them); "
                         "1 of 9 judge runs failed and were excluded")
    assert j.mean == pytest.approx(statistics.mean([70, 72, 68, 71, 73, 69, 70, 72]))


def test_judge_through_an_openai_compatible_server():
    replies = [(200, openai_completion(json.dumps({"score": s, "explanation": "x"}))) for s in RUN_SCORES[:8]]
    replies += [(200, openai_completion("no score here")), (200, openai_completion("garbage"))]
    script = Script(replies)
    with serve(openai_app(script)) as url:
        llm = OpenAICompatibleLLM("judge-model", base_url=f"{url}/v1", sleep=lambda s: None)
        j = Judge(llm, "playbook").judge(ANSWER)
    body = script.requests[0]["body"]
    assert body["temperature"] == 0.5 and body["max_tokens"] == 256 and body["messages"][0]["role"] == "system"
    assert j.n_ok == 8 and j.warning == "2 of 10 judge runs failed and were excluded"


def test_mem0_protocol_and_j_across_runs(tmp_path):
    answers = [dict(ANSWER, question_index=i, question=f"Question {i}?", prediction="x") for i in range(4)]
    labels = iter(["CORRECT", "WRONG", "CORRECT"] * 4)
    llm = ScriptedLLM(lambda system, prompt: json.dumps({"label": next(labels), "explanation": "e"}), model="judge")
    run = RunFolder("r", root=tmp_path)
    judge = Judge(llm, "mem0", runs=3, batch=1)
    one_at_a_time = CallSettings(concurrency=1)  # calls in submission order: question by question, run by run
    made = judge_answers(run, judge, answers, progress=False, settings=one_at_a_time)
    assert len(made) == 4 and llm.calls[0]["temperature"] == 0.0
    assert "Be generous" in llm.calls[0]["messages"][0]["content"]
    j = mem0_j_by_run(load_judgements(run, "mem0"))
    assert j["runs"] == [100.0, 0.0, 100.0] and j["mean"] == pytest.approx(200 / 3)
    assert judge_answers(run, judge, answers, progress=False) == []  # already judged: nothing re-asked
    assert len(llm.calls) == 12


def test_self_judging_warns_and_adversarial_is_skipped(tmp_path):
    llm = ScriptedLLM(['{"score": 50}'], model="claude-opus-4-6")
    llm.provider = "anthropic"
    adversarial = dict(ANSWER, question_index=9, category=5, gold=None)
    said: list[str] = []
    made = judge_answers(RunFolder("r", root=tmp_path), Judge(llm, "playbook", runs=2), [ANSWER, adversarial],
                         progress=False, log=said.append)
    assert any("is also the answerer" in line for line in said)
    assert [j.question_index for j in made] == [3]
