"""Judge calibration set (no LLM), its rates through the scripted fake judge, the strict prompt,
and the interval/std fixes of J."""

from __future__ import annotations

import json
import math
import re
import statistics
from collections import Counter

import pytest

from locomo_kit.llm import ScriptedLLM
from locomo_kit.reports.summary import mem0_j
from locomo_kit.runs import RunFolder
from locomo_kit.runs.records import load_judgements
from locomo_kit.scoring.aggregate import wilson_ci
from locomo_kit.scoring.calibration import build_calibration_set, calibration_rates, topic_of
from locomo_kit.scoring.diagnostics import evidence_ranks, ndcg, reciprocal_rank
from locomo_kit.scoring.judge import Judge, judge_answers, mem0_j_by_run
from locomo_kit.scoring.judge_prompts import STRICT_VERSION
from locomo_kit.scoring.locomo_f1 import stemmed_tokens


def test_calibration_set_is_deterministic_and_wrong_by_construction(dataset):
    items = build_calibration_set(dataset)
    assert items == build_calibration_set(dataset)
    kinds = Counter(i.kind for i in items)
    assert kinds["gold"] == 100 and kinds["specific-wrong"] == 100 and 50 <= kinds["vague-topical"] <= 100
    by_q = {}
    for i in items:
        by_q.setdefault((i.sample_id, i.question_index), {})[i.kind] = i
    questions = {(q.sample_id, q.index): q for c in dataset for q in c.questions}
    for key, group in by_q.items():
        q = questions[key]
        assert q.category != 5 and group["gold"].prediction == q.answer
        if "specific-wrong" in group:
            other = group["specific-wrong"].prediction
            same = [o for o in dataset if o.sample_id == q.sample_id][0].questions
            assert any(o.answer == other and o.category == q.category and o.index != q.index for o in same)
            assert not set(stemmed_tokens(other)) & set(stemmed_tokens(q.answer))
        if "vague-topical" in group:
            assert topic_of(q.question) in group["vague-topical"].prediction
    assert build_calibration_set(dataset, seed=1) != items
    assert topic_of("When did Caroline go to the LGBTQ support group?") == "Caroline go to the LGBTQ support group"


def _lenient(system: str, prompt: str) -> str:
    """A judge that accepts an exact answer, or anything sharing a word of the question (topical)."""
    q = re.search(r"Question: (.*)\n", prompt).group(1)
    gold = re.search(r"Gold answer: (.*)\n", prompt).group(1)
    gen = re.search(r"Generated answer: (.*)\n", prompt).group(1)
    topical = set(stemmed_tokens(q)) & set(stemmed_tokens(gen))
    return json.dumps({"label": "CORRECT" if gen == gold or topical else "WRONG"})


def test_calibration_rates_through_the_scripted_judge(dataset, tmp_path):
    conv = [c for c in dataset if c.sample_id == "conv-26"]
    items = build_calibration_set(conv, 30)
    run = RunFolder("cal", root=tmp_path)
    judge_answers(run, Judge(ScriptedLLM(_lenient, model="lenient"), "mem0", runs=2, batch=1),
                  [i.as_answer() for i in items], progress=False)
    rows = {r["kind"]: r for r in calibration_rates(load_judgements(run))}
    assert rows["gold"]["rate"] == 100.0 and rows["gold"]["rate_name"] == "true-accept"
    assert rows["vague-topical"]["rate"] == 100.0 and rows["vague-topical"]["rate_name"] == "false-accept"
    vague = [i for i in items if i.kind == "vague-topical"]
    assert rows["vague-topical"]["items"] == len(vague)
    assert (rows["vague-topical"]["ci_low"], rows["vague-topical"]["ci_high"]) == pytest.approx(
        tuple(100 * x for x in wilson_ci(len(vague), len(vague))))
    specific = [i for i in items if i.kind == "specific-wrong"]
    expected = statistics.mean(1.0 if set(stemmed_tokens(i.question)) & set(stemmed_tokens(i.prediction)) else 0.0
                               for i in specific)
    assert rows["specific-wrong"]["rate"] == pytest.approx(100 * expected)
    assert rows["vague-topical"]["published_false_accept"] == 62.8


def test_strict_protocol_is_named_versioned_and_binary(tmp_path):
    llm = ScriptedLLM(['{"label": "WRONG", "explanation": "vague"}'], model="j")
    judge = Judge(llm, "strict", runs=2, batch=1)
    assert judge.prompt_version == STRICT_VERSION and judge.runs == 2
    record = {"sample_id": "s", "question_index": 1, "category": 4, "category_name": "single-hop", "question": "Q?",
              "gold": "G", "prediction": "P", "config_key": "k", "answerer": "a"}
    j = judge.judge(record)
    assert j.mean == 0.0 and "Grade strictly" in llm.calls[0]["messages"][0]["content"]
    assert Judge(llm, "mem0").runs == 10  # the Mem0 paper judged 10 runs


def test_mem0_j_interval_is_over_questions_and_both_stds_are_named():
    # 40 questions, 10 runs, each question judged identically in every run (as judges nearly are)
    judgements = [{"category": 4, "runs": [{"run": r, "score": float(q < 24)} for r in range(10)]} for q in range(40)]
    row = next(r for r in mem0_j(judgements) if r["category"] == "overall")
    low, high = wilson_ci(24, 40)  # n = questions, not 400 pooled labels
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((100 * low, 100 * high))
    assert row["questions"] == 40 and row["mean"] == pytest.approx(60.0)
    js = [{"sample_id": "s", "question_index": 0, "category": 1, "runs": [{"run": r, "score": s} for r, s in enumerate(v)]}
          for v in ([1, 1, 0], [1, 0, 0])]
    per_run = [100.0, 50.0, 0.0]
    j = mem0_j_by_run(js)
    assert j["std"] == pytest.approx(statistics.stdev(per_run)) and j["std_population"] == pytest.approx(statistics.pstdev(per_run))
    row = next(r for r in mem0_j(js) if r["category"] == "overall")
    assert row["std_sample"] == pytest.approx(50.0) and row["std_population"] == pytest.approx(math.sqrt(5000 / 3))


def test_mrr_and_ndcg_of_evidence_turns():
    retrieved = [{"source_turns": ["D1:1"]}, {"source_turns": ["D2:5"]}, {"source_turns": ["D2:5"]},
                 {"source_turns": ["D3:1", "D1:1"]}]
    ranks = evidence_ranks(["D2:5", "D3:1"], retrieved, {}, k=4)
    assert ranks == [2, 4] and reciprocal_rank(ranks) == 0.5
    ideal = 1 + 1 / math.log2(3)
    assert ndcg(ranks, 2, 4) == pytest.approx((1 / math.log2(3) + 1 / math.log2(5)) / ideal)
    assert ndcg(ranks, 2, 2) == pytest.approx((1 / math.log2(3)) / ideal)
    assert reciprocal_rank(evidence_ranks(["D9:9"], retrieved, {})) == 0.0
    assert evidence_ranks([], retrieved, {}) is None and ndcg(None, 0, 5) is None
    perfect = evidence_ranks(["D1:1"], retrieved, {})
    assert reciprocal_rank(perfect) == 1.0 and ndcg(perfect, 1, 5) == 1.0
    # without source turn ids, a memory holds a turn when it covers 80% of its words
    text = {"D1:1": "I went to the pottery class yesterday"}
    assert evidence_ranks(["D1:1"], [{"content": "Nothing"}, {"content": "Mel went to a pottery class yesterday"}], text) == [2]
