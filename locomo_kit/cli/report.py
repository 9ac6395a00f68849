"""``locomo-kit report``: report.md, report.html and figures for a run, from its records."""

from __future__ import annotations

import argparse

from locomo_kit.cli.common import existing_run
from locomo_kit.cli.options import add_answer_options, add_source_options, add_worker_options
from locomo_kit.pipeline.stages import run_report


def add_parser(sub: argparse._SubParsersAction) -> None:
    rep = sub.add_parser("report", help="write report.md, report.html and figures for a run",
                         description="Write report.md, report.html (with the question explorer) and figures/*.png into the run folder from its records.")
    add_worker_options(rep)
    add_answer_options(rep, server=False)
    add_source_options(rep)
    rep.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    report, figures, _ = run_report(existing_run(args), sample=args.sample)
    print(f"report:  {report}")
    print(f"html:    {report.with_suffix('.html')} (with the question explorer)")
    print(f"figures: {report.parent / 'figures'} ({len(figures)} PNG)")
    return 0
