"""The report's session-level recall table: measured beside its chance level, per category."""

from __future__ import annotations

from typing import Any

from locomo_kit.reports.numbers import num, pct
from locomo_kit.scoring.session_recall import SESSION_KS

EXPLANATION = (
    "Session-level recall, in the units MemPalace, engram and memory-core-eval publish: the retrieved results, "
    "best first, are mapped to the sessions they came from and the first k *distinct* sessions kept. "
    "**R@k** = mean share of a question's evidence sessions among them (MemPalace's session R@10); **hit@k** = share "
    "of questions with any evidence session among them (engram's \"within the first 5\"). **Chance** = the same "
    "figure for k sessions drawn uniformly at random from the conversation's N sessions, per question then "
    "averaged over the same questions: min(k, N)/N for R@k, 1 - C(N-e, k)/C(N, k) for hit@k with e evidence "
    "sessions. A system that retrieves fewer than k distinct sessions (a small context budget) is scored on what "
    "it retrieved; the table gives the mean number of distinct sessions retrieved.")


def session_lines(diagnostics: list[dict[str, Any]]) -> list[str]:
    """Markdown lines: one row per category (and overall) with measured R@k/hit@k and chance beside each."""
    rows = [d for d in diagnostics if (d.get("sessions") or {}).get("n")]
    if not rows:
        return []
    header = ["category", "n", "sessions retrieved"]
    for k in SESSION_KS:
        header += [f"R@{k}", "chance"]
    for k in SESSION_KS:
        header += [f"hit@{k}", "chance"]
    out = ["Session-level recall (%), beside the turn-level evidence recall above.", "", EXPLANATION, "",
           "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for d in rows:
        s = d["sessions"]
        cells = [f"{d['category']} {d['name']}" if d["category"] != "overall" else "overall", str(s["n"]),
                 num(s["sessions_retrieved"])]
        for k in SESSION_KS:
            cells += [pct(s["recall"][f"@{k}"]), pct(s["chance_recall"][f"@{k}"])]
        for k in SESSION_KS:
            cells += [pct(s["hit"][f"@{k}"]), pct(s["chance_hit"][f"@{k}"])]
        out.append("| " + " | ".join(cells) + " |")
    return out + [""]
