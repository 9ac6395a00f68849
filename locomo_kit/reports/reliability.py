"""Banners for the top of report.md about what the numbers can be trusted for: a run limited to
the first N questions or to the first N sessions of each conversation, J numbers a judge cannot vouch for (:mod:`locomo_kit.reports.judge_findings`),
and a compressing Worker that kept little of the conversation
(:mod:`locomo_kit.scoring.compression`)."""

from __future__ import annotations

from typing import Sequence

from locomo_kit.dataset import Conversation, questions
from locomo_kit.reports.judge_findings import concerns
from locomo_kit.runs import RunFolder
from locomo_kit.scoring.compression import compression_banner


def partial_conversations(conversations: Sequence[Conversation], include_adversarial: bool = False) -> str | None:
    """The banner of a run over the first sessions of each conversation (``--sessions N``), or None."""
    partial = [c for c in conversations if c.partial]
    if not partial:
        return None
    parts = []
    for c in partial:
        total_sessions, _ = c.whole or (len(c.sessions), 0)
        parts.append(f"{c.sample_id}: sessions 1-{len(c.sessions)} of {total_sessions}, "
                     f"{len(questions(c, include_adversarial))} questions")
    n = len(partial[0].sessions)
    return (f"> **Partial conversations: only the first {n} sessions of each conversation were given to the memory, "
            f"and only the questions whose evidence lies wholly in them are asked** (`--sessions {n}`; "
            + "; ".join(parts) + "). A smoke test of ingestion and retrieval on a small memory, not comparable to a "
            "run over whole conversations.")


def reliability_banners(run: RunFolder, summary: dict, conversations: Sequence[Conversation] = ()) -> list[str]:
    m = summary["manifest"]
    out: list[str] = []
    partial = partial_conversations(conversations, bool(m.get("answer", {}).get("include_adversarial")))
    if partial:
        out.append(partial)
    limit = m.get("answer", {}).get("limit")
    if limit:
        out.append(f"> **Limited run: only the first {limit} questions of each sample** (`--limit {limit}`, in the "
                   "dataset's order): a smoke test of the configuration, not a benchmark result.")
    reasons = concerns(summary)
    if reasons:
        out.append("> **The J numbers below are unreliable:** " + "; ".join(reasons) + ". Judge with another model "
                   "(`--judge-model`) and read the calibration (section 2b) before quoting J.")

    out += compression_banner(run)
    return [line for pair in zip(out, [""] * len(out)) for line in pair]
