"""``locomo-kit ingest``: conversations into a memory system, resumable."""

from __future__ import annotations

import argparse

from locomo_kit.cli.common import finish, positive_float, print_partial, system_spec
from locomo_kit.cli.options import add_consistency_option, add_session_timeout_option, add_worker_options
from locomo_kit.ingestion.summary import ingest_outcome, print_summary
from locomo_kit.pipeline.stages import load, run_ingest


def add_parser(sub: argparse._SubParsersAction) -> None:
    ing = sub.add_parser("ingest", help="ingest conversations into a memory system (resumable)",
                         description="Ingest LoCoMo conversations into the memory system (--system; a Worker over "
                         "the claude-mem API). "
                         "Resumable: a rerun skips sessions already ingested.")
    add_worker_options(ing, run_id=False)
    ing.add_argument("--force", action="store_true", help="forget the conversations in the memory system and ingest again")
    add_session_timeout_option(ing)
    ing.add_argument("--poll-interval", type=positive_float, default=3.0, help="longest pause between queue polls (3 s)")
    add_consistency_option(ing)
    ing.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    conversations, _ = load(args.sample)
    print_partial(conversations)
    folder, summary = run_ingest(args.sample, system=system_spec(args), force=args.force)
    for note in getattr(summary, "notes", []):
        print(note)
    print_summary(summary)
    outcome = ingest_outcome(summary, sum(len(c.sessions) for c in conversations))
    print(outcome.line(reason=False))  # the failures are listed above
    print(f"run folder: {folder.path}")
    return finish([outcome], ok_code=0 if summary.succeeded else 1)
