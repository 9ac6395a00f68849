"""Per-question export: one row per question with the answer, its configuration and every score."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from locomo_kit.reports.numbers import missing
from locomo_kit.reports.question_records import QuestionRecords, RunQuestions, run_questions
from locomo_kit.runs import RunFolder
from locomo_kit.scoring.session_recall import session_columns

FORMATS = ("csv", "parquet")


def question_rows(run: RunFolder) -> list[dict[str, Any]]:
    """One flat row per answered question of the run's configuration, with every score it has (the export's
    rows, from :func:`locomo_kit.reports.question_records.run_questions`)."""
    read = run_questions(run)
    if not read.questions:
        raise RuntimeError(f"No answers in {run.path}: nothing to export")
    return [flat_row(read, q) for q in read.questions]


def flat_row(read: RunQuestions, q: QuestionRecords) -> dict[str, Any]:
    """One question as a flat row: its answer's fields, its scores (the audited key's beside the original's
    when scored with ``--gold both``) and, per judge protocol, the mean of its valid runs under the original key."""
    a, s = q.answer, q.scores.get("original", {})
    row = {"run_id": read.run.run_id, "config_id": read.manifest.get("config_id"), "sample_id": a["sample_id"],
           "question_index": a["question_index"], "category": a["category"], "category_name": a["category_name"],
           "question": a["question"], "gold": a.get("gold"), "prediction": a["prediction"],
           "answerer": a["answerer"], "source": a["source"], "top_k": a.get("top_k"),
           "context_budget": a.get("context_budget"),
           "prompt_version": a["prompt_version"], "memories_used": a.get("memories_used"),
           "search_latency_ms": a.get("search_latency_ms"), "answer_latency_ms": a.get("answer_latency_ms"),
           "input_tokens": a.get("input_tokens"), "output_tokens": a.get("output_tokens"),
           "context_tokens": a.get("context_tokens"),
           "locomo_f1": s.get("locomo_f1"), "mem0_f1": s.get("mem0_f1"), "bleu1": s.get("bleu1"),
           "answer_in_context": s.get("answer_in_context"), "coverage_method": s.get("coverage_method"),
           "evidence_recall": s.get("evidence_recall")}
    for k, v in (s.get("evidence_coverage") or {}).items():
        row[f"evidence_coverage{k}"] = v
    row.update(session_columns(s.get("session_recall")))
    if "audited" in q.scores:  # scored with --gold both: the audited key's scores beside the original's
        t = q.scores["audited"]
        row.update({"audit_changed_gold": t.get("gold_changed"), "locomo_f1_audited": t.get("locomo_f1"),
                    "mem0_f1_audited": t.get("mem0_f1"), "bleu1_audited": t.get("bleu1")})
    for j in q.judgements.get("original", []):  # one setup per protocol: the latest recorded wins
        mean = j["mean"] if j["n_ok"] and not missing(j["mean"]) else None
        row[f"j_{j['protocol']}"] = mean
        row[f"j_{j['protocol']}_judge"] = j["judge_model"]
        row[f"j_{j['protocol']}_valid_runs"] = j["n_ok"]
    return row


def export_run(run: RunFolder, fmt: str = "csv", output: str | Path | None = None) -> tuple[Path, int]:
    """Write the run's per-question rows as CSV or Parquet; returns the path and the row count."""
    import pandas as pd  # deferred: a heavy import

    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")
    frame = pd.DataFrame(question_rows(run))
    path = Path(output) if output else run.path / f"questions.{fmt}"
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "csv":
        frame.to_csv(path, index=False)
    else:
        try:
            frame.to_parquet(path, index=False)
        except ImportError as exc:
            raise RuntimeError(f"Parquet needs pyarrow: `.venv/bin/pip install -r requirements.txt` ({exc})") from None
    return path, len(frame)
