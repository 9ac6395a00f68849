"""What a report covers, compared with what was asked for: the banners at the top of report.md.

A report over partial data says so before any number: questions not answered (with the first
error and a count of the rest). Sessions not ingested and empty retrievals are announced by
:mod:`locomo_kit.reports.run_warnings`, judge calls still pending by
:func:`locomo_kit.reports.markdown.pending_banner`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from locomo_kit.dataset import Conversation, questions
from locomo_kit.runs import RunFolder, ingestion_folder
from locomo_kit.runs.records import ANSWERS_FILE
from locomo_kit.worker.identity import ingestion_state


def _failed_answers(run: RunFolder, key: str, answered: set[tuple[str, int]]) -> list[dict]:
    """Failed answer records of questions never answered ok (the latest failure per question)."""
    latest: dict[tuple[str, int], dict] = {}
    for r in run.records(ANSWERS_FILE):
        if r.get("config_key") == key and r.get("status") == "failed":
            q = (r["sample_id"], int(r["question_index"]))
            if q not in answered:
                latest[q] = r
    return [latest[q] for q in sorted(latest)]


def completeness(run: RunFolder, conversations: list[Conversation], summary: dict[str, Any]) -> dict[str, Any]:
    """Counts of what was asked for and what the report covers, stage by stage."""
    m = summary["manifest"]
    include_adv = bool(m.get("answer", {}).get("include_adversarial"))
    limit = m.get("answer", {}).get("limit")
    expected = {(c.sample_id, q.index) for c in conversations for q in questions(c, include_adv)[:limit]}
    answered = set(summary["_answers"])
    failed = _failed_answers(run, summary["config_key"], answered)
    out: dict[str, Any] = {"questions_expected": len(expected), "questions_answered": len(answered & expected),
                           "answer_failures": failed}
    ingestion_id = m.get("ingestion", {}).get("id")
    if ingestion_id and summary["source"] == "memory":
        folder = ingestion_folder(ingestion_id)
        mode = m.get("parameters", {}).get("mode", "transcript")
        states = [ingestion_state(folder, c, mode) for c in conversations]
        out["sessions_ingested"] = sum(d for d, _ in states)
        out["sessions_expected"] = sum(t for _, t in states)
    judgeable = sum(1 for a in summary["_answers"].values() if a["category"] != 5 and a.get("gold"))
    judged = Counter(p for p, _, _ in {(j["protocol"], j["sample_id"], int(j["question_index"]))
                                       for j in summary["_judgements"] if j.get("n_ok")})
    out["judged"] = {p: (judged.get(p, 0), judgeable) for p in {j["protocol"] for j in summary["_judgements"]}}
    return out


def banners(run: RunFolder, conversations: list[Conversation], summary: dict[str, Any]) -> list[str]:
    """Markdown lines for the top of the report; empty when the report covers everything asked for."""
    c = completeness(run, conversations, summary)
    lines = []
    if c["questions_answered"] < c["questions_expected"]:
        missing = c["questions_expected"] - c["questions_answered"]
        failures = c["answer_failures"]
        first = f" First error: {failures[0]['error']}" + (f" (and {len(failures) - 1} more)." if len(failures) > 1
                                                           else ".") if failures else ""
        lines.append(f"> **PARTIAL RESULTS: {c['questions_answered']} of {c['questions_expected']} questions were "
                     f"answered; {missing} failed or were not attempted.**{first} Every number below covers the "
                     f"{c['questions_answered']} answered questions only.")
    return lines + [""] if lines else []
