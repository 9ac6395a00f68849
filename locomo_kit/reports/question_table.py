"""Every question across several runs: one row per question, one cell per run (did it get it right, did the
evidence reach its context, its answer, scores, judge verdicts and retrieved context).

Each run's cells come from :func:`locomo_kit.reports.questions.explorer_data` (the data of that run's own
``report.html``), so a question reads the same in both pages. Across runs a question is *right* on one
common basis, stated with the table: the judge, when every run was judged by the same judge setup
(protocol, model, prompt) on every question, else official F1 ≥ 0.5. A wrong answer is *the memory lost
it* when none of its evidence turns reached the context the answerer saw (evidence recall 0), *the
answerer missed it* when some did. Categories 1-4 only, as in ``compare``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from locomo_kit.dataset import Conversation, DatasetError, load_dataset
from locomo_kit.paths import default_dataset_path
from locomo_kit.reports.errors import correctness, failure
from locomo_kit.reports.question_records import GOLD_KEYS
from locomo_kit.reports.questions import explorer_data
from locomo_kit.runs import ANSWERS_FILE, RunFolder
from locomo_kit.scoring.rules import DEFAULT_BASIS

PROTOCOL_ORDER = ("mem0", "strict", "playbook")  # the judge basis preferred when several are shared
QUESTION_FIELDS = ("sample_id", "question_index", "category", "category_name", "question", "gold", "gold_audited",
                   "gold_changed", "audit_error", "adversarial_answer", "evidence", "evidence_audited")


@dataclass(frozen=True)
class RunRef:
    """A run as a cross-run page names it: ``name`` (e.g. ``bm25 0.3.16 · 1,000``) heads its column group."""

    name: str
    folder: RunFolder
    system: str = ""
    budget: int | None = None


def conversations_for(runs: Sequence[RunFolder], dataset_path: str | Path | None = None) -> list[Conversation]:
    """The conversations the runs answered (for the evidence turns' text); empty when the dataset is not on disk."""

    samples = {r["sample_id"] for run in runs for r in run.records(ANSWERS_FILE)}
    try:
        return [c for c in load_dataset(dataset_path or default_dataset_path()) if c.sample_id in samples]
    except (OSError, DatasetError):
        return []


def _judged_setups(row: dict, gold: str) -> set[tuple[str, str, str]]:
    judgements = row["judgements"]["audited"] if gold == "audited" and row["gold_changed"] else row["judgements"]["original"]
    return {(j["protocol"], j["judge_model"], j["prompt_version"]) for j in judgements if j and j.get("n_ok")}


def _basis(per_run: list[dict[tuple[str, int], dict]], gold_keys: list[str]) -> tuple[str, str, str] | None:
    """The judge setup that graded every question of every run under every gold key, or None (F1 basis)."""
    common: set | None = None
    for rows in per_run:
        for row in rows.values():
            for g in gold_keys:
                setups = _judged_setups(row, g)
                common = setups if common is None else common & setups
                if not common:
                    return None
    if not common:
        return None
    return sorted(common, key=lambda s: (PROTOCOL_ORDER.index(s[0]) if s[0] in PROTOCOL_ORDER else 9, s))[0]


def basis_label(basis: tuple[str, str, str] | None) -> str:
    if basis is None:
        return f"official {DEFAULT_BASIS.label}"
    protocol, model, prompt = basis
    rule = "playbook J ≥ 50" if protocol == "playbook" else "mem0 label (majority of runs)"
    return f"{rule}, judged by {model} ({prompt})"


def _outcome(row: dict, gold: str, basis: tuple[str, str, str] | None) -> dict | None:
    score = row["scores"].get(gold)
    if score is None:
        return None
    judgement = None
    if basis is not None:
        judgements = row["judgements"]["audited"] if gold == "audited" and row["gold_changed"] else row["judgements"]["original"]
        judgement = next((j for j in judgements if j and (j["protocol"], j["judge_model"], j["prompt_version"]) == basis), None)
    answer = {"prediction": row.get("prediction"), "category": row.get("category"),
              "gold": row.get("gold_audited") if gold == "audited" and row.get("gold_changed") else row.get("gold")}
    ok, _ = correctness(score, judgement, answer)
    reach = score.get("evidence_recall")
    if reach is None:
        reach = score.get("coverage")
    return {"correct": ok, "reached": reach, "failure": failure(ok, reach)}


def build_question_table(runs: Sequence[RunRef], conversations: list[Conversation] | None = None) -> dict[str, Any]:
    """The cross-run table: ``{"runs", "gold_keys", "basis", "questions", "memories", "turns"}``.

    ``questions``: one entry per question of categories 1-4 any run answered (sorted by sample and index),
    with its ``cells`` (one per run, in order; None where that run did not answer it). Each cell holds the
    run's prediction, scores and judgements per gold key, its retrieved context (positions in ``memories``,
    which holds each distinct memory once across all runs) and ``outcome`` per gold key
    (``correct``, ``reached``: evidence recall in the context, ``failure``: memory / answerer / None).
    """
    if conversations is None:
        conversations = conversations_for([r.folder for r in runs])
    memories: list[dict] = []
    memory_at: dict[tuple, int] = {}
    turns: dict[str, dict] = {}
    per_run: list[dict[tuple[str, int], dict]] = []
    run_keys: list[list[str]] = []
    for ref in runs:
        data = explorer_data(ref.folder, conversations)
        turns.update(data["turns"])
        rows = {}
        for row in data["rows"]:
            if int(row["category"]) == 5:
                continue
            for r in row["retrieved"]:  # one list of memories for the whole page
                m = data["memories"][r["m"]]
                ident = (m["content"], tuple(m["source_turns"]), m.get("session"), m.get("date"))
                if ident not in memory_at:
                    memory_at[ident] = len(memories)
                    memories.append(m)
                r["m"] = memory_at[ident]
            rows[(row["sample_id"], int(row["question_index"]))] = row
        per_run.append(rows)
        run_keys.append(data["gold_keys"])
    gold_keys = [g for g in GOLD_KEYS if all(g in keys for keys in run_keys)] or ["original"]
    basis = _basis(per_run, gold_keys)
    questions = []
    for q in sorted(set().union(*per_run), key=lambda k: (k[0], k[1])):
        first = next(rows[q] for rows in per_run if q in rows)
        entry = {k: first.get(k) for k in QUESTION_FIELDS}
        cells = []
        for rows in per_run:
            row = rows.get(q)
            if row is None:
                cells.append(None)
                continue
            cells.append({"prediction": row["prediction"], "search_ms": row["search_ms"],
                          "context_tokens": row["context_tokens"], "scores": row["scores"],
                          "judgements": row["judgements"], "retrieved": row["retrieved"],
                          "outcome": {g: _outcome(row, g, basis) for g in gold_keys}})
        entry["cells"] = cells
        questions.append(entry)
    return {"runs": [{"name": r.name, "run_id": r.folder.run_id, "system": r.system, "budget": r.budget,
                      "questions": len(rows)} for r, rows in zip(runs, per_run)],
            "gold_keys": gold_keys, "basis": basis_label(basis),
            "judge": list(basis) if basis else None, "questions": questions, "memories": memories, "turns": turns}


def correct_vector(table: dict[str, Any], run: int, gold: str = "original") -> list[bool | None]:
    """Right (True), wrong (False) or not answered (None) for each question of the table, for one run."""
    out = []
    for q in table["questions"]:
        cell = q["cells"][run]
        outcome = cell and cell["outcome"].get(gold)
        out.append(None if not outcome else bool(outcome["correct"]))
    return out


def question_frame(table: dict[str, Any], gold: str = "original"):
    """The table as a pandas DataFrame (one row per question) to filter in a notebook: the question's
    columns, then per run ``<name> correct``, ``<name> evidence reached`` (evidence recall in the context),
    ``<name> failure`` (memory / answerer), ``<name> F1`` and ``<name> answer``."""
    import pandas as pd  # deferred: a heavy import (most processes of the kit never make a frame)


    records = []
    for q in table["questions"]:
        rec: dict[str, Any] = {"sample_id": q["sample_id"], "question_index": q["question_index"],
                               "category": q["category"], "question": q["question"], "gold": q["gold"],
                               "gold_audited": q["gold_audited"] if q["gold_changed"] else None}
        for run, cell in zip(table["runs"], q["cells"]):
            outcome = cell["outcome"].get(gold) if cell else None
            score = cell["scores"].get(gold) if cell else None
            rec[f"{run['name']} correct"] = None if not outcome else outcome["correct"]
            rec[f"{run['name']} evidence reached"] = None if not outcome else outcome["reached"]
            rec[f"{run['name']} failure"] = None if not outcome else outcome["failure"]
            rec[f"{run['name']} F1"] = None if not score else score["locomo_f1"]
            rec[f"{run['name']} answer"] = None if not cell else cell["prediction"]
        records.append(rec)
    frame = pd.DataFrame.from_records(records)
    return frame.set_index(["sample_id", "question_index"]) if records else frame
