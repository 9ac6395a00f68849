"""Session-level recall and its chance level (scoring.session_recall), in scores, the report and the export."""

from __future__ import annotations

import itertools
import json
import random
import statistics
from math import comb

import pandas as pd
import pytest

from locomo_kit.cli import main
from locomo_kit.scoring.session_recall import chance_hit, chance_recall, ranked_sessions, session_recall, session_sets

WORDS = "apple river candle violin garden rocket pepper marble window cactus lantern meadow tiger copper island".split()
TURNS = {f"D{s}:{t}": f"{WORDS[(s - 1) * 3 + t - 1]} {WORDS[(s * 3 + t) % 15]}x{s}{t} story" for s in range(1, 6)
         for t in range(1, 4)}


def test_distinct_sessions_are_taken_best_first_from_turn_ids():
    retrieved = [{"source_turns": ["D3:1", "D3:2"]}, {"source_turns": ["D3:3"]}, {"source_turns": ["D1:1", "D5:2"]},
                 {"source_turns": ["D2:1"]}]
    order, method = ranked_sessions(retrieved, TURNS)
    assert order == [3, 1, 5, 2] and method == "turn-ids"
    r = session_recall(["D5:3", "D2:2"], retrieved, TURNS, n_sessions=5, ks=(1, 3, 4))
    assert r["recall"] == {"@1": 0.0, "@3": 0.5, "@4": 1.0}
    assert r["hit"] == {"@1": 0.0, "@3": 1.0, "@4": 1.0}
    assert r["sessions_retrieved"] == 4 and r["evidence_sessions"] == 2 and r["sessions_total"] == 5


def test_sessions_from_the_session_field_or_from_the_text():
    by_field = [{"content": "x", "session": "locomo-conv-26-s4"}, {"content": "y", "session": 2}]
    assert ranked_sessions(by_field, TURNS) == ([4, 2], "session-field")
    by_text = [{"content": TURNS["D2:3"]}, {"content": "nothing matches this"}, {"content": TURNS["D4:1"]}]
    assert ranked_sessions(by_text, TURNS) == ([2, 4], "text")
    assert session_recall([], by_text, TURNS, 5) is None  # no evidence: no figure


def test_chance_levels_are_the_expectation_over_every_draw_of_k_sessions():
    """Enumerate all C(N, k) draws: the closed forms are exactly their mean."""
    for n, k, evidence in ((7, 3, {2, 5}), (5, 1, {1}), (6, 4, {1, 2, 3}), (4, 10, {2})):
        draws = list(itertools.combinations(range(1, n + 1), min(k, n)))
        recall = statistics.mean(len(evidence & set(d)) / len(evidence) for d in draws)
        hit = statistics.mean(bool(evidence & set(d)) for d in draws)
        assert chance_recall(k, n) == pytest.approx(recall)
        assert chance_hit(k, n, len(evidence)) == pytest.approx(hit)
    assert chance_hit(5, 27, 1) == pytest.approx(1 - comb(26, 5) / comb(27, 5))


def test_a_random_ranking_scores_its_chance_level_on_average():
    """The measured figure and its chance level are one quantity: random rankings average to chance."""
    rng = random.Random(7)
    n = 12
    turns = {f"D{s}:1": f"t{s}" for s in range(1, n + 1)}
    scores = []
    for _ in range(4000):
        evidence = [f"D{s}:1" for s in rng.sample(range(1, n + 1), rng.choice((1, 2, 3)))]
        order = rng.sample(range(1, n + 1), n)
        scores.append({"session_recall": session_recall(evidence, [{"source_turns": [f"D{s}:1"]} for s in order],
                                                        turns, n)})
    agg = session_sets(scores)
    for k in ("@1", "@3", "@5", "@10"):
        assert agg["recall"][k] == pytest.approx(agg["chance_recall"][k], abs=0.02)
        assert agg["hit"][k] == pytest.approx(agg["chance_hit"][k], abs=0.02)


@pytest.fixture(scope="module")
def run_with_sessions(offline_run):
    return offline_run("--sample", "conv-30", run_id="sess")


def test_scores_report_and_export_carry_session_recall_with_chance(run_with_sessions, dataset, capsys):
    run = run_with_sessions
    scores = [json.loads(l) for l in (run.path / "scores.jsonl").read_text().splitlines()]
    answers = {(a["sample_id"], a["question_index"]): a
               for a in map(json.loads, (run.path / "answers.jsonl").read_text().splitlines())}
    conv = next(c for c in dataset if c.sample_id == "conv-30")
    with_evidence = [s for s in scores if s["gold_key"] == "original" and s["session_recall"]]
    assert with_evidence and all(s["session_recall"]["sessions_total"] == len(conv.sessions) for s in with_evidence)
    # recomputed from the saved answers: the first 5 distinct sessions of the retrieved spans
    recall5 = []
    for s in with_evidence:
        order = []
        for m in answers[(s["sample_id"], s["question_index"])]["retrieved"]:
            for sess in sorted({int(t[1:].split(":")[0]) for t in m["source_turns"]}):
                order.append(sess) if sess not in order else None
        wanted = set(s["evidence_sessions"])
        recall5.append(len(wanted & set(order[:5])) / len(wanted))
        assert s["session_recall"]["recall"]["@5"] == pytest.approx(recall5[-1])
    text = (run.path / "report.md").read_text()
    assert "Session-level recall (%)" in text and "1 - C(N-e, k)/C(N, k)" in text
    overall = next(l for l in text.splitlines() if l.startswith("| overall |") and "R@" not in l
                   and l.count("|") == 20)
    cells = [c.strip() for c in overall.strip("|").split("|")]
    assert float(cells[7]) == pytest.approx(100 * statistics.mean(recall5), abs=0.051)  # R@5
    assert float(cells[8]) == pytest.approx(100 * 5 / len(conv.sessions), abs=0.051)  # its chance
    out = run.path / "q.csv"
    assert main(["export", "sess", "--output", str(out)]) == 0
    frame = pd.read_csv(out)
    for col in ("session_recall@5", "session_hit@5", "session_recall_chance@5", "session_hit_chance@5",
                "sessions_retrieved", "sessions_total", "session_method"):
        assert col in frame.columns, col
    assert frame["session_recall@5"].mean() == pytest.approx(statistics.mean(recall5))
