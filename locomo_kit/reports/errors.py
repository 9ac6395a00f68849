"""Error analysis: best and worst answers, why answers fail, and accuracy by how far back the evidence lies."""

from __future__ import annotations

import statistics
from typing import Any

from locomo_kit.dataset import CATEGORY_NAMES, Conversation
from locomo_kit.scoring.rules import DEFAULT_BASIS, default_verdict

CORRECT_F1 = 0.5
DISTANCE_BUCKETS = ((0, 2), (3, 5), (6, 10), (11, 20), (21, 1000))
COVERAGE_K = "@8"


def correctness(score: dict, judgement: dict | None, answer: dict | None = None) -> tuple[bool, str]:
    """(correct?, basis): the judge when there is one, else the default rule-based basis on the answer and the
    gold (``answer``: ``prediction``, ``gold``, ``category``), else official F1 ≥ 0.5 when no answer is given."""
    if judgement and judgement.get("n_ok"):
        if judgement["protocol"] == "playbook":
            return judgement["mean"] >= 50, "playbook J ≥ 50"
        return judgement["mean"] >= 0.5, "mem0 label (majority of runs)"
    category = int(answer["category"]) if answer is not None and answer.get("category") is not None else 5
    if answer is not None and answer.get("gold") is not None and category != 5:
        ok = default_verdict(answer.get("prediction") or "", answer["gold"], category, score.get("locomo_f1"))
        return ok, f"official {DEFAULT_BASIS.label}"
    return score["locomo_f1"] >= CORRECT_F1, f"official F1 ≥ {CORRECT_F1}"


def evidence_coverage(score: dict) -> float | None:
    """Coverage at 8 retrieved memories, or at the widest k that was retrieved when fewer were."""
    cov = score["evidence_coverage"].get(COVERAGE_K)
    if cov is None:
        cov = next((score["evidence_coverage"][k] for k in ("@5", "@3", "@1")
                    if score["evidence_coverage"].get(k) is not None), None)
    return cov


def failure(correct: bool, coverage: float | None) -> str | None:
    """Why a wrong answer is wrong: ``memory`` (no evidence retrieved: the memory lost it) or ``answerer``
    (some evidence retrieved: the answerer missed it); None for a correct answer or without evidence ids."""
    if correct or coverage is None:
        return None
    return "memory" if coverage == 0 else "answerer"


def analyse(summary: dict[str, Any], conversations: list[Conversation], examples: int = 5) -> dict[str, Any]:
    scores = [s for s in summary["_scores"] if s["category"] != 5]
    answers = summary["_answers"]
    judged = {(j["sample_id"], j["question_index"]): j for j in summary["_judgements"]}
    last_session = {c.sample_id: c.sessions[-1].number for c in conversations}

    rows = []
    for s in scores:
        key = (s["sample_id"], s["question_index"])
        ok, basis = correctness(s, judged.get(key), answers[key])
        cov = evidence_coverage(s)
        rows.append({"score": s, "answer": answers[key], "correct": ok, "basis": basis, "coverage": cov})

    examples_by_cat = {}
    for cat in sorted({r["score"]["category"] for r in rows}):
        rs = sorted((r for r in rows if r["score"]["category"] == cat), key=lambda r: (r["score"]["locomo_f1"], -r["score"]["question_index"]))
        pick = lambda xs: [{"sample_id": r["score"]["sample_id"], "question_index": r["score"]["question_index"],
                            "question": r["answer"]["question"], "gold": r["answer"]["gold"],
                            "prediction": r["answer"]["prediction"], "f1": r["score"]["locomo_f1"],
                            "memories": [m["content"][:160] for m in r["answer"].get("retrieved", [])[:3]]} for r in xs]
        examples_by_cat[cat] = {"name": CATEGORY_NAMES[cat], "top": pick(rs[::-1][:examples]), "bottom": pick(rs[:examples])}

    wrong = [r for r in rows if not r["correct"] and r["coverage"] is not None]
    split = {"memory did not retrieve the evidence": sum(1 for r in wrong if failure(False, r["coverage"]) == "memory"),
             "evidence retrieved but answer wrong": sum(1 for r in wrong if failure(False, r["coverage"]) == "answerer"),
             "wrong answers": len(wrong), "coverage_k": COVERAGE_K}

    by_distance = []
    for lo, hi in DISTANCE_BUCKETS:
        rs = [r for r in rows if r["score"]["evidence_sessions"] and
              lo <= last_session.get(r["score"]["sample_id"], 0) - max(r["score"]["evidence_sessions"]) <= hi]
        label = f"{lo}-{hi}" if hi < 1000 else f"{lo}+"
        by_distance.append({"sessions_back": label, "count": len(rs),
                            "accuracy": 100 * statistics.mean(r["correct"] for r in rs) if rs else None,
                            "mean_f1": 100 * statistics.mean(r["score"]["locomo_f1"] for r in rs) if rs else None})
    matrix = {(hit, ok): sum(1 for r in rows if r["coverage"] is not None and (r["coverage"] > 0) == hit and r["correct"] == ok)
              for hit in (True, False) for ok in (True, False)}
    return {"basis": rows[0]["basis"] if rows else "", "examples": examples_by_cat, "failure_split": split,
            "by_distance": by_distance, "hit_correct_matrix": matrix,
            "wrong": [{"sample_id": r["score"]["sample_id"], "evidence": r["answer"].get("evidence") or [],
                       "coverage": r["coverage"]} for r in wrong]}
