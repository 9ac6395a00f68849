"""Banners for the top of report.md about what the numbers can be trusted for: a run limited to
the first N questions, J numbers a judge cannot vouch for (:mod:`locomo_kit.scoring.judge_findings`),
and a compressing Worker that kept little of the conversation
(:mod:`locomo_kit.scoring.compression`)."""

from __future__ import annotations

from locomo_kit.runs import RunFolder
from locomo_kit.scoring.judge_findings import concerns


def reliability_banners(run: RunFolder, summary: dict) -> list[str]:
    m = summary["manifest"]
    out: list[str] = []
    limit = m.get("answer", {}).get("limit")
    if limit:
        out.append(f"> **Limited run: only the first {limit} questions of each sample** (`--limit {limit}`, in the "
                   "dataset's order): a smoke test of the configuration, not a benchmark result.")
    reasons = concerns(summary)
    if reasons:
        out.append("> **The J numbers below are unreliable:** " + "; ".join(reasons) + ". Judge with another model "
                   "(`--judge-model`) and read the calibration (section 2b) before quoting J.")
    from locomo_kit.scoring.compression import compression_banner

    out += compression_banner(run)
    return [line for pair in zip(out, [""] * len(out)) for line in pair]
