"""`locomo-kit compare`: paired differences, paired bootstrap intervals, MDD, verdicts, over run folders."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from locomo_kit.cli import main
from locomo_kit.reports.comparison import (
    CompareError,
    compare,
    minimal_detectable_difference,
    paired_bootstrap,
    statements,
)


def _write_run(root: Path, run_id: str, f1: list[float], top_k: int = 8, judge: tuple | None = None,
               recall: list[float] | None = None, audited: dict[int, float] | None = None,
               context_budget: int | None = None) -> Path:
    """A run folder as the pipeline writes it: manifest, answers, scores (and judgements)."""
    folder = root / run_id
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps({"run_id": run_id, "worker": {"name": "memworker"}}))
    key = f"cfg-{run_id}"
    answers, scores, judgements = [], [], []
    for i, v in enumerate(f1):
        cat = 1 + i % 4
        answers.append({"status": "ok", "sample_id": "conv-26", "question_index": i, "category": cat,
                        "config_key": key, "answerer": "extractive", "answerer_label": "extractive", "top_k": top_k,
                        "context_budget": context_budget, "source": "memory", "search_latency_ms": 10.0 + i, "answer_latency_ms": 1.0,
                        "input_tokens": 0, "output_tokens": 0, "gold": "g", "prediction": "p"})
        scores.append({"sample_id": "conv-26", "question_index": i, "category": cat, "config_key": key,
                       "gold_key": "original", "locomo_f1": v, "mem0_f1": v / 2,
                       "evidence_coverage": {"@1": 0.0}, "evidence_recall": None if recall is None else recall[i]})
        if judge:
            judgements.append({"sample_id": "conv-26", "question_index": i, "category": cat, "protocol": "mem0",
                               "judge_model": judge[0], "prompt_version": judge[1], "answer_config_key": key,
                               "n_runs": 1, "runs": [{"run": 0, "score": float(v >= 0.5)}]})
    # an adversarial answer and a question only this run answered are left out of the comparison
    answers.append(dict(answers[0], question_index=900, category=5))
    scores.append(dict(scores[0], question_index=900, category=5))
    if audited is not None:  # the audited key: new F1 and a re-judgement for changed questions
        scores += [dict(s, gold_key="audited", gold_changed=s["question_index"] in audited,
                        locomo_f1=audited.get(s["question_index"], s["locomo_f1"])) for s in list(scores)]
        if judge:
            judgements += [dict(judgements[i], answer_config_key=f"{key}#gold=audited",
                                runs=[{"run": 0, "score": float(v >= 0.5)}]) for i, v in audited.items()]
    for name, recs in (("answers.jsonl", answers), ("scores.jsonl", scores), ("judgements.jsonl", judgements)):
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in recs))
    return folder


def test_paired_bootstrap_and_mdd():
    rng = np.random.default_rng(1)
    a = rng.random(200)
    b = a + 0.1 + rng.normal(0, 0.05, 200)
    low, high = paired_bootstrap(a, b)
    assert low < float(np.mean(b - a)) < high and low > 0
    assert paired_bootstrap(a, b) == (low, high)  # fixed seed
    d = b - a
    assert minimal_detectable_difference(a, b) == pytest.approx((1.959964 + 0.841621) * d.std(ddof=1) / math.sqrt(200), rel=1e-5)
    # pairing matters: the paired interval is far narrower than the spread of either run
    assert high - low < 0.05 < np.std(a)
    assert paired_bootstrap([1, 2], [1, 2]) == (0.0, 0.0)


def test_compare_two_runs_distinguishable_or_not(tmp_path):
    rng = np.random.default_rng(7)
    base = rng.random(80).round(3)
    noise = np.clip(base + rng.normal(0, 0.02, 80), 0, 1).round(3)
    better = np.clip(base + 0.25, 0, 1).round(3)
    a = _write_run(tmp_path, "a", list(base), judge=("openai/j", "judge-mem0-paraphrase-v1"), recall=list(base))
    b = _write_run(tmp_path, "b", list(noise), judge=("openai/j", "judge-mem0-paraphrase-v1"), recall=list(base))
    c = _write_run(tmp_path, "c", list(better) + [0.5], top_k=100, judge=("openai/other", "judge-mem0-paraphrase-v1"),
                   context_budget=1000)
    result = compare([a, b, c])
    labels = [r["label"] for r in result["runs"]]
    assert "top_k 8" in labels[0] and "context budget 1,000 tokens (≤ 100 results)" in labels[2]
    assert result["runs"][2]["config"]["context_budget"] == 1000
    assert result["shared_questions"] == 80
    row = next(r for r in result["rows"] if r["category"] == "overall" and r["metric"] == "locomo_f1")
    assert row["means"] == pytest.approx([100 * base.mean(), 100 * noise.mean(), 100 * better.mean()])
    vs_b, vs_c = row["comparisons"]
    assert vs_b["diff"] == pytest.approx(100 * (noise.mean() - base.mean()))
    assert vs_b["verdict"] == "not distinguishable" and vs_b["ci_low"] < 0 < vs_b["ci_high"]
    assert vs_c["verdict"] == "distinguishable" and vs_c["ci_low"] > 0
    assert vs_b["mdd"] == pytest.approx(minimal_detectable_difference(100 * base, 100 * noise))
    # J differs in judge model for run c: not compared, and said so
    assert not any(r["metric"].startswith("J mem0") for r in result["rows"])
    assert any("J mem0 is not compared" in n for n in result["notes"])
    assert not any(r["metric"] == "evidence_recall" for r in result["rows"])  # run c reports none
    cats = {r["category"] for r in result["rows"]}
    assert cats == {1, 2, 3, 4, "overall"}
    text = "\n".join(statements(result))
    assert "b vs a, official F1 % over 80 shared questions" in text and "**not distinguishable**" in text
    assert "c vs a, official F1 %" in text and "**distinguishable**;" in text
    two = compare([a, b])
    assert any(r["metric"] == "J mem0 (openai/j, judge-mem0-paraphrase-v1)" for r in two["rows"])  # same judge
    recall = next(r for r in two["rows"] if r["category"] == "overall" and r["metric"] == "evidence_recall")
    assert recall["comparisons"][0]["verdict"] == "identical" and "identical on every question" in "\n".join(statements(two))


def test_compare_cli_writes_table_figure_and_verdict(tmp_path, capsys):
    rng = np.random.default_rng(3)
    base = rng.random(40).round(3)
    a = _write_run(tmp_path / "runs", "a", list(base))
    b = _write_run(tmp_path / "runs", "b", list(np.clip(base + rng.normal(0, 0.05, 40), 0, 1).round(3)))
    out = tmp_path / "cmp"
    assert main(["compare", str(a), str(b), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| overall | official F1 % | 40 |" in printed and "not distinguishable" in printed
    # run ids (long in practice) are named once, above the table; the columns use letters
    assert "Runs: **A** = `a` (baseline); **B** = `b`." in printed
    assert "| category | metric | n | A | B | B − A [95% CI] | MDD | verdict |" in printed
    assert {p.name for p in out.iterdir()} == {"compare.md", "compare.html", "compare.json", "compare.png", "questions.png"}
    assert (out / "compare.png").stat().st_size > 5000
    assert json.loads((out / "compare.json").read_text())["shared_questions"] == 40


def test_compare_errors_are_clear(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LOCOMO_OUTPUTS_DIR", str(tmp_path))
    a = _write_run(tmp_path / "runs", "a", [0.1, 0.2])
    assert main(["compare", "a", "nope"]) == 1
    err = capsys.readouterr().err
    assert "No run folder 'nope'" in err and "Known runs: a" in err
    with pytest.raises(CompareError, match="at least two runs"):
        compare([a])
    with pytest.raises(CompareError, match="named twice"):
        compare([a, "a"])
    (a / "scores.jsonl").write_text("")
    b = _write_run(tmp_path / "runs", "b", [0.1, 0.2])
    with pytest.raises(CompareError, match="not scored"):
        compare([b, a])


def test_runs_parameter_as_papermill_passes_it():
    from locomo_kit.reports.comparison import parse_runs

    assert parse_runs('["a", "b"]') == ["a", "b"] and parse_runs("a, b") == ["a", "b"] and parse_runs(["a"]) == ["a"]
    with pytest.raises(CompareError, match="not a JSON list"):
        parse_runs("[a, b")


def test_compare_under_the_audited_key(tmp_path):
    judge = ("openai/j", "judge-mem0-paraphrase-v1")
    base = [0.0, 1.0, 0.0, 1.0] * 5
    a = _write_run(tmp_path, "a", base, judge=judge, audited={0: 1.0, 1: 0.0})
    b = _write_run(tmp_path, "b", base, judge=judge, audited={0: 1.0, 1: 0.0})
    c = _write_run(tmp_path, "c", base, judge=judge)  # never scored under the audited key
    original = compare([a, b])
    audited = compare([a, b], gold="audited")
    row = lambda r, m: next(x for x in r["rows"] if x["category"] == "overall" and x["metric"].startswith(m))
    assert row(original, "locomo_f1")["means"][0] == pytest.approx(50.0)
    assert row(audited, "locomo_f1")["means"][0] == pytest.approx(50.0)  # one question up, one down
    assert row(audited, "J mem0")["n"] == 20 and audited["gold"] == "audited"
    j1 = lambda r: next(x for x in r["rows"] if x["category"] == 1 and x["metric"].startswith("J mem0"))["means"][0]
    assert j1(original) == 0.0 and j1(audited) == pytest.approx(20.0)  # the re-judgement of question 0 counts
    by_cat = {x["category"]: x for x in audited["rows"] if x["metric"] == "locomo_f1"}
    assert by_cat[1]["means"][0] == pytest.approx(100 * (1 + 0 + 0 + 0 + 0) / 5)  # question 0 (category 1) now right
    with pytest.raises(CompareError, match="not scored under the audited gold key.*--gold both"):
        compare([a, c], gold="audited")
