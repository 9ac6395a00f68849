"""What a run's answerer scores with no memory at all: every question answered from an empty context.

The extractive answerer is measured here, free and deterministic, once per conversation and cached
under ``outputs/floors/`` (keyed by the answerer's rules version and the conversation's questions).
An LLM answerer's floor would cost one call per question: the report says it was not measured rather
than guessing. An imported run's answerer ran elsewhere: its floor cannot be measured here.
"""

from __future__ import annotations

import hashlib
import json
import statistics
from typing import Any

from locomo_kit.dataset import CATEGORY_NAMES, Conversation
from locomo_kit.paths import outputs_dir, write_atomic
from locomo_kit.qa.extractive import ExtractiveAnswerer
from locomo_kit.reports.numbers import num
from locomo_kit.scoring.locomo_f1 import locomo_f1

FLOOR_VERSION = "floor-v1"  # bump when the extractive answerer changes what it says with no memories


def _cache_key(conv: Conversation) -> str:
    blob = json.dumps([FLOOR_VERSION, conv.sample_id, [(q.index, q.question, q.answer) for q in conv.questions]],
                      default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def extractive_floor_scores(conv: Conversation) -> dict[int, float]:
    """Official F1 per question index of ``conv`` when the extractive answerer gets an empty context (cached)."""
    folder = outputs_dir() / "floors"
    path = folder / f"extractive-{conv.sample_id}-{_cache_key(conv)}.json"
    if path.is_file():
        return {int(k): v for k, v in json.loads(path.read_text(encoding="utf-8")).items()}
    answerer = ExtractiveAnswerer()
    scores = {q.index: locomo_f1(answerer.answer(q.question, []), q.answer if q.category != 5 else "", q.category)
              for q in conv.questions}
    write_atomic(path, json.dumps(scores))
    return scores


def floor_rows(answerer: str, answers: list[dict], conversations: list[Conversation],
               run_f1: dict[Any, dict]) -> dict[str, Any]:
    """Per category of the run's answered questions: the floor's official F1 (%) beside the run's; or why not."""
    if answerer != "extractive":
        return {"measured": False, "why": f"the answerer {answerer} is an LLM: its floor costs one call per question "
                "with an empty context, so it is not measured by the report"}
    by_conv = {c.sample_id: c for c in conversations}
    per_q: dict[tuple[str, int], float] = {}
    for sid in sorted({a["sample_id"] for a in answers}):
        if sid in by_conv:
            for i, v in extractive_floor_scores(by_conv[sid]).items():
                per_q[(sid, i)] = v
    rows = []
    for cat in sorted({a["category"] for a in answers}) + ["overall"]:
        qs = [(a["sample_id"], int(a["question_index"])) for a in answers if cat == "overall" or a["category"] == cat]
        vals = [per_q[q] for q in qs if q in per_q]
        rows.append({"category": cat, "name": CATEGORY_NAMES.get(cat, "overall") if cat != "overall" else "overall",
                     "n": len(vals), "floor": 100 * statistics.mean(vals) if vals else None,
                     "run": (run_f1.get(cat) or {}).get("mean")})
    return {"measured": True, "rows": rows}


def floor_lines(floor: dict[str, Any]) -> list[str]:
    """The floor beside the run, per category, as markdown."""
    if not floor["measured"]:
        return [f"**No-memory floor.** Not measured: {floor['why']}.", ""]
    lines = ["**No-memory floor.** What this run's answerer scores with no memory at all (an empty context, every "
             "question; measured once per conversation and cached), official F1 % beside the run's own:", ""]
    lines += ["| category | n | no memory | this run |", "|---|---|---|---|"]
    for r in floor["rows"]:
        name = f"{r['category']} {r['name']}" if r["category"] != "overall" else "overall"
        fl, run = num(r["floor"]), num(r["run"])
        lines.append(f"| {name} | {r['n']} | {fl} | {run} |")
    return lines + [""]
