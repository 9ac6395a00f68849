"""What a run's answerer scores with no memory at all: every question answered from an empty context.

The extractive answerer is measured here, free and deterministic, once per conversation and cached
under ``outputs/floors/`` (keyed by the answerer's rules version and the conversation's questions).
An LLM answerer's floor costs one call per question: the answer stage measures it (:mod:`locomo_kit.qa.floor`,
cached per answerer and question set) into the run's ``floor.jsonl``, which this module reads; a run answered
before that existed says so and how to measure it. An imported run's answerer ran elsewhere: its floor
cannot be measured here.
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
from locomo_kit.reports.pending import floor_gaps
from locomo_kit.runs import RunFolder, load_floor
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


def llm_floor_scores(run: RunFolder) -> tuple[dict[tuple[str, int], float], int]:
    """The LLM floor's official F1 per question the answer stage measured into ``run``, and how many of the
    questions it set out to measure have no floor answer (their calls failed, or were never made)."""
    return {q: r["f1"] for q, r in load_floor(run).items() if r.get("status") == "ok"}, floor_gaps(run)


def floor_rows(answerer: str, answers: list[dict], conversations: list[Conversation],
               run_f1: dict[Any, dict], *, run: RunFolder | None = None) -> dict[str, Any]:
    """Per category of the run's answered questions: the floor's official F1 (%) beside the run's; or why not.
    ``run``: the run folder, where an LLM answerer's floor was measured (see module doc)."""
    per_q: dict[tuple[str, int], float] = {}
    missing = 0
    if answerer == "extractive":
        by_conv = {c.sample_id: c for c in conversations}
        for sid in sorted({a["sample_id"] for a in answers}):
            if sid in by_conv:
                for i, v in extractive_floor_scores(by_conv[sid]).items():
                    per_q[(sid, i)] = v
    elif run is None or not (run.manifest().get("answer", {}).get("floor") or {}).get("keys"):
        return {"measured": False, "why": f"the answers of {answerer} were made before the answer stage measured an "
                "LLM answerer's floor: rerun the same `locomo-kit answer` (or `run`) command to measure it (one call "
                "per question with an empty context, once per answerer and question set; the answers are kept)"}
    else:
        per_q, missing = llm_floor_scores(run)
    rows = []
    for cat in sorted({a["category"] for a in answers}) + ["overall"]:
        qs = [(a["sample_id"], int(a["question_index"])) for a in answers if cat == "overall" or a["category"] == cat]
        vals = [per_q[q] for q in qs if q in per_q]
        rows.append({"category": cat, "name": CATEGORY_NAMES.get(cat, "overall") if cat != "overall" else "overall",
                     "n": len(vals), "floor": 100 * statistics.mean(vals) if vals else None,
                     "run": (run_f1.get(cat) or {}).get("mean")})
    return {"measured": True, "rows": rows, "answerer": answerer, "llm": answerer != "extractive", "missing": missing}


def floor_lines(floor: dict[str, Any]) -> list[str]:
    """The floor beside the run, per category, as markdown."""
    if not floor["measured"]:
        return [f"**No-memory floor.** Not measured: {floor['why']}.", ""]
    if floor.get("llm"):
        lines = [f"**No-memory floor.** What this run's answerer ({floor['answerer']}) scores with no memory at all "
                 "(every question asked with the same prompt and an empty context; measured by the answer stage once "
                 "per answerer and question set, and cached), official F1 % beside the run's own:", ""]
    else:
        lines = ["**No-memory floor.** What this run's answerer scores with no memory at all (an empty context, "
                 "every question; measured once per conversation and cached), official F1 % beside the run's own:", ""]
    if floor.get("missing"):
        lines += [f"> **The floor is incomplete: {floor['missing']} question(s) have no floor answer** (their "
                  "empty-context calls failed); the no-memory column is over the others. Rerun the same command to "
                  "retry exactly those.", ""]
    lines += ["| category | n | no memory | this run |", "|---|---|---|---|"]
    for r in floor["rows"]:
        name = f"{r['category']} {r['name']}" if r["category"] != "overall" else "overall"
        fl, run = num(r["floor"]), num(r["run"])
        lines.append(f"| {name} | {r['n']} | {fl} | {run} |")
    return lines + [""]
