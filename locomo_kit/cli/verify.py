"""``locomo-kit verify``: count what a memory system holds of each sample and probe its search."""

from __future__ import annotations

import argparse

from locomo_kit.cli.common import system_spec
from locomo_kit.cli.options import add_query_strategy_option, add_worker_options
from locomo_kit.ingestion.verify import verify_system
from locomo_kit.pipeline.stages import load


def add_parser(sub: argparse._SubParsersAction) -> None:
    ver = sub.add_parser("verify", help="count what a memory system holds of each sample and probe its search",
                         description="Count the memories a system holds of each sample (a Worker's project, any "
                         "other system's store) and show the top 3 results for one single-hop, one multi-hop and "
                         "one temporal question; exit 1 when it holds nothing or a probe finds nothing.")
    add_worker_options(ver, run_id=False)
    add_query_strategy_option(ver)
    ver.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    conversations, _ = load(args.sample)
    return verify_system(system_spec(args), conversations=conversations, sample=args.sample,
                         query_strategy=args.query_strategy)
