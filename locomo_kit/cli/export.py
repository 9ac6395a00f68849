"""``locomo-kit export``: one row per question with every score, as CSV or Parquet."""

from __future__ import annotations

import argparse

from locomo_kit.cli.common import existing_run
from locomo_kit.cli.options import add_answer_options, add_source_options, add_worker_options
from locomo_kit.reports.export_rows import export_run


def add_parser(sub: argparse._SubParsersAction) -> None:
    exp = sub.add_parser("export", help="write one row per question with every score (CSV or Parquet)",
                         description="Export a run's questions, answers and scores (official F1, Mem0 F1, BLEU-1, "
                         "evidence coverage, J per protocol) as one row per question.")
    exp.add_argument("run", nargs="?", help="run id (a folder under outputs/runs) or a run folder's path; "
                     "default: the run the options below select")
    add_worker_options(exp)
    add_answer_options(exp, server=False)
    add_source_options(exp)
    exp.add_argument("--format", choices=["csv", "parquet"], default="csv", help="(csv)")
    exp.add_argument("--output", help="file to write (default: questions.csv / questions.parquet in the run folder)")
    exp.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    path, rows = export_run(run=existing_run(args), fmt=args.format, output=args.output)
    print(f"{path}: {rows} rows (one per question)")
    return 0
