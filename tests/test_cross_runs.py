"""Questions across runs: the cross-run table, flip counts and the exact McNemar test, the compare page's
embedded data, the notebooks' DataFrame; checked against the runs' own records (no browser here: see
tests/test_leaderboard.py)."""

from __future__ import annotations

import json
import math
from itertools import combinations
from pathlib import Path

import pytest

from locomo_kit.cli import main
from locomo_kit.reports.flips import flip_counts, flip_lines, mcnemar_exact
from locomo_kit.reports.question_table import RunRef, build_question_table, question_frame
from locomo_kit.reports.runs_explorer import decode_payload, encode_payload, page_payload
from locomo_kit.runs import RunFolder
from locomo_kit.runs.records import load_answers
from locomo_kit.scoring.rules import default_verdict


def binomial_two_sided(k: int, n: int) -> float:
    """Exact two-sided binomial test at p = ½ the long way: sum the probabilities no larger than P(k)."""
    if n == 0:
        return 1.0
    probs = [math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) - n * math.log(2))
             for i in range(n + 1)]
    return min(1.0, sum(p for p in probs if p <= probs[k] * (1 + 1e-9)))


@pytest.mark.parametrize("b,c", [(0, 0), (0, 5), (5, 0), (3, 10), (10, 10), (7, 21), (40, 61), (0, 1), (120, 90)])
def test_mcnemar_exact_is_the_two_sided_binomial_test(b, c):
    assert mcnemar_exact(b, c) == pytest.approx(binomial_two_sided(b, b + c), rel=1e-9, abs=1e-15)


def test_mcnemar_known_values_and_large_counts():
    assert mcnemar_exact(0, 5) == pytest.approx(2 / 32)
    assert mcnemar_exact(4, 4) == 1.0 and mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(1, 9) == pytest.approx(2 * 11 / 1024)
    assert 0 < mcnemar_exact(600, 800) < 1e-6  # 1,400 discordant questions: no float overflow
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 3)


def _write_run(root: Path, run_id: str, outcomes: list[tuple[float, float | None]], judged: list[float] | None = None,
               skip: set[int] = frozenset()) -> RunFolder:
    """A run folder as the pipeline writes it: per question (F1, evidence recall); contexts with source turns."""
    folder = root / run_id
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps({"run_id": run_id, "worker": {"name": "memworker"}}))
    key = f"cfg-{run_id}"
    answers, scores, judgements = [], [], []
    for i, (f1, recall) in enumerate(outcomes):
        if i in skip:
            continue
        cat = 1 + i % 4
        evidence = [f"D1:{i + 1}"] if recall is not None else []
        retrieved = [{"id": f"m{i}", "content": f"memory {i} of {run_id}", "source_turns": evidence if recall else ["D9:9"],
                      "score": 0.5}]
        answers.append({"status": "ok", "sample_id": "conv-26", "question_index": i, "category": cat,
                        "config_key": key, "answerer": "extractive", "answerer_label": "extractive", "top_k": 8,
                        "question": f"question {i}?", "gold": f"gold {i}", "prediction": f"{run_id} says {i}",
                        "evidence": evidence, "retrieved": retrieved, "search_latency_ms": 1.0})
        scores.append({"sample_id": "conv-26", "question_index": i, "category": cat, "config_key": key,
                       "gold_key": "original", "locomo_f1": f1, "mem0_f1": f1, "evidence_recall": recall,
                       "evidence_coverage": {"@1": recall, "@8": recall}})
        if judged is not None:
            judgements.append({"sample_id": "conv-26", "question_index": i, "category": cat, "protocol": "mem0",
                               "judge_model": "openai/j", "prompt_version": "v1", "answer_config_key": key,
                               "n_runs": 1, "n_ok": 1, "mean": judged[i], "runs": [{"run": 0, "score": judged[i]}]})
    answers.append(dict(answers[0], question_index=900, category=5))  # adversarial: not in the table
    scores.append(dict(scores[0], question_index=900, category=5))
    for name, recs in (("answers.jsonl", answers), ("scores.jsonl", scores), ("judgements.jsonl", judgements)):
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in recs))
    return RunFolder(run_id, root=root)


def test_the_table_joins_runs_question_by_question(tmp_path):
    a = _write_run(tmp_path, "a", [(1.0, 1.0), (0.0, 0.0), (0.0, 0.5), (1.0, None), (0.2, 1.0)])
    b = _write_run(tmp_path, "b", [(0.0, 0.0), (1.0, 1.0), (0.0, 0.0), (1.0, None), (0.9, 1.0)], skip={4})
    table = build_question_table([RunRef("A", a), RunRef("B", b)], conversations=[])
    assert [q["question_index"] for q in table["questions"]] == [0, 1, 2, 3, 4]  # category 5 left out
    assert table["basis"] == "official F1 ≥ 0.5, yes/no polarity" and table["gold_keys"] == ["original"]
    outcome = [[c and c["outcome"]["original"] for c in q["cells"]] for q in table["questions"]]
    assert [o[0]["correct"] for o in outcome] == [True, False, False, True, False]
    assert [o[0]["failure"] for o in outcome] == [None, "memory", "answerer", None, "answerer"]
    assert outcome[4][1] is None  # b did not answer question 4
    assert [r["questions"] for r in table["runs"]] == [5, 4]
    flips = flip_counts(table)
    assert len(flips) == 1
    f = flips[0]
    assert (f["n"], f["both"], f["only_a"], f["only_b"], f["neither"]) == (4, 1, 1, 1, 1)
    assert f["mcnemar_p"] == 1.0 and f["diff"] == 0.0
    lines = flip_lines(flips, table)
    assert "| A | B | 4 | 1 | 1 | 1 | 1 |" in "\n".join(lines) and "exact McNemar" in lines[0]
    frame = question_frame(table)
    assert list(frame.index[:2]) == [("conv-26", 0), ("conv-26", 1)]
    assert frame["A correct"].tolist() == [True, False, False, True, False]
    assert frame.loc[("conv-26", 2), "A failure"] == "answerer" and frame.loc[("conv-26", 1), "B answer"] == "b says 1"
    # each distinct memory is kept once for the whole page
    contents = [m["content"] for m in table["memories"]]
    assert len(contents) == len(set(contents)) == 9


def test_the_judge_is_the_basis_only_when_every_run_was_judged_alike(tmp_path):
    f1 = [(1.0, 1.0), (1.0, 1.0), (0.0, 1.0)]
    a = _write_run(tmp_path, "a", f1, judged=[0.0, 1.0, 1.0])
    b = _write_run(tmp_path, "b", f1, judged=[1.0, 1.0, 0.0])
    c = _write_run(tmp_path, "c", f1)
    judged = build_question_table([RunRef("A", a), RunRef("B", b)], conversations=[])
    assert judged["basis"].startswith("mem0 label") and "openai/j" in judged["basis"]
    f = flip_counts(judged)[0]
    assert (f["only_a"], f["only_b"], f["both"]) == (1, 1, 1)  # by the judge, not by F1
    mixed = build_question_table([RunRef("A", a), RunRef("C", c)], conversations=[])
    assert mixed["basis"] == "official F1 ≥ 0.5, yes/no polarity"
    assert flip_counts(mixed)[0]["only_a"] == flip_counts(mixed)[0]["only_b"] == 0


def test_the_payload_round_trips_and_is_deterministic():
    data = {"questions": [{"q": "é" * 100, "n": i} for i in range(200)]}
    text = encode_payload(data)
    assert decode_payload(text) == data and encode_payload(data) == text
    assert len(text) < len(json.dumps(data)) / 5


def _direct_flips(runs: list[RunFolder]) -> dict[tuple[int, int], tuple[int, int, int, int]]:
    """(both, only A, only B, neither) per pair straight from scores.jsonl: the latest config, original key,
    categories 1-4, right by the default rule-based basis (the runs are not judged)."""
    right = []
    for run in runs:
        recs = [json.loads(line) for line in (run.path / "scores.jsonl").read_text().splitlines() if line.strip()]
        key = recs[-1]["config_key"]
        f1 = {(r["sample_id"], r["question_index"]): r["locomo_f1"] for r in recs
              if r["config_key"] == key and r.get("gold_key", "original") == "original" and r["category"] != 5}
        right.append({q: default_verdict(a["prediction"], a["gold"], a["category"], f1[q]) for a in load_answers(run)
                      if (q := (a["sample_id"], a["question_index"])) in f1})
    out = {}
    for i, j in combinations(range(len(runs)), 2):
        shared = set(right[i]) & set(right[j])
        out[(i, j)] = (sum(right[i][q] and right[j][q] for q in shared), sum(right[i][q] and not right[j][q] for q in shared),
                       sum(right[j][q] and not right[i][q] for q in shared),
                       sum(not right[i][q] and not right[j][q] for q in shared))
    return out


def test_compare_writes_the_flips_and_the_explorer_from_the_records(report_runs, tmp_path, capsys):
    runs = [report_runs.default, report_runs.top_k]
    out = tmp_path / "cmp"
    assert main(["compare", str(runs[0].path), str(runs[1].path), "--out", str(out)]) == 0
    assert "questions.png" in capsys.readouterr().out
    result = json.loads((out / "compare.json").read_text())
    direct = _direct_flips(runs)
    assert len(result["flips"]) == 1
    for f in result["flips"]:
        both, only_a, only_b, neither = direct[(f["a"], f["b"])]
        assert (f["both"], f["only_a"], f["only_b"], f["neither"]) == (both, only_a, only_b, neither)
        assert f["n"] == 152 and f["mcnemar_p"] == pytest.approx(binomial_two_sided(only_a, only_a + only_b), rel=1e-9)
    md = (out / "compare.md").read_text()
    f = result["flips"][0]
    assert f"| A | B | 152 | {f['both']} | {f['only_a']} | {f['only_b']} | {f['neither']} |" in md
    assert "## Which runs answer which questions" in md and (out / "questions.png").stat().st_size > 10_000
    data = page_payload((out / "compare.html").read_text())
    assert len(data["questions"]) == 152 and [r["run_id"] for r in data["runs"]] == [r.run_id for r in runs]
    assert all(len(q["cells"]) == 2 and all(q["cells"]) for q in data["questions"])
    # each cell is the run's own answer, with its retrieved context
    answers = {(a["sample_id"], a["question_index"]): a for a in
               map(json.loads, (runs[1].path / "answers.jsonl").read_text().splitlines()) if a.get("status") == "ok"}
    q = data["questions"][7]
    cell = q["cells"][1]
    a = answers[(q["sample_id"], q["question_index"])]
    assert cell["prediction"] == a["prediction"] and len(cell["retrieved"]) == len(a["retrieved"])
    assert [data["memories"][r["m"]]["content"] for r in cell["retrieved"]] == [m["content"] for m in a["retrieved"]]
