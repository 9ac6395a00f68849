"""A run's scores at a glance, for a notebook: one row per category with official F1 and its interval, Mem0 F1,
evidence recall (how much of each question's evidence reached the answerer's context), answer in context and J
per judged protocol; and where the run's report is."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd


def category_table(summary: dict[str, Any]) -> pd.DataFrame:
    """Per category (and overall) of a run summary (:func:`locomo_kit.reports.summary.summarize_run`): ``n``,
    ``official F1 %`` with ``95% CI low``/``high``, ``Mem0 F1 %``, ``evidence recall %`` (within the context the
    answerer saw), ``answer in context %`` and ``J <protocol>`` for each judged protocol; missing figures are NaN."""
    import pandas as pd  # deferred: a heavy import

    def by_cat(rows: list[dict]) -> dict:
        return {r["category"]: r for r in rows or []}

    f1, mf1, diag = by_cat(summary["locomo_f1"]), by_cat(summary["mem0_f1"]), by_cat(summary["diagnostics"])
    judged = {p: by_cat(summary["judge"].get(p)) for p in ("mem0", "strict", "playbook") if summary["judge"].get(p)}
    records = []
    for c, row in f1.items():
        rec = {"category": c, "name": row["name"], "n": row["count"], "official F1 %": row["mean"],
               "95% CI low": row["ci_low"], "95% CI high": row["ci_high"],
               "Mem0 F1 %": mf1.get(c, {}).get("mean"), "evidence recall %": diag.get(c, {}).get("recall_all"),
               "answer in context %": diag.get(c, {}).get("answer_in_context")}
        for protocol, rows in judged.items():
            rec[f"J {protocol}" + (" (0-100)" if protocol == "playbook" else " %")] = rows.get(c, {}).get("mean")
        records.append(rec)
    return pd.DataFrame.from_records(records).astype({"n": int}, errors="ignore")


def report_lines(report: Path) -> list[str]:
    """Where a run's report is: ``report.md``, and ``report.html`` (with the question explorer) beside it."""
    return [f"report: {report}", f"html:   {report.with_suffix('.html')} (with the question explorer)"]
