"""``locomo-kit verify``: count what a memory system holds of each sample and probe its search."""

from __future__ import annotations

import argparse
import sys

from locomo_kit.cli.common import CliError, system_options
from locomo_kit.cli.options import add_query_strategy_option, add_worker_options
from locomo_kit.ingestion.verify import format_verification, verify_system, verify_worker_project
from locomo_kit.pipeline.stages import load, resolve_ingestion
from locomo_kit.systems.registry import is_worker, system_name
from locomo_kit.worker.connect import connect


def add_parser(sub: argparse._SubParsersAction) -> None:
    ver = sub.add_parser("verify", help="count a project's observations and probe search",
                         description="Count the observations of each sample's project and show the top 3 "
                         "results for one single-hop, one multi-hop and one temporal question.")
    add_worker_options(ver, run_id=False)
    add_query_strategy_option(ver)
    ver.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    conversations, _ = load(sample=args.sample)
    name = system_name(args.system, args.worker_url)
    if not is_worker(name):
        return verify_system(name=name, conversations=conversations, ingest_id=args.ingest_id,
                             options=system_options(args))
    run = resolve_ingestion(sample=args.sample, mode=args.mode, worker_url=args.worker_url, ingest_id=args.ingest_id)
    if args.worker_url == "embedded" and not run.exists():
        raise CliError(f"No ingestion at {run.path}: ingest first (locomo-kit ingest --sample {args.sample})")
    with connect(worker_url=args.worker_url, folder=run) as client:
        ok = True
        for conv in conversations:
            report = verify_worker_project(client=client, conv=conv, query_strategy=args.query_strategy)
            print(format_verification(report))
            empty = [p for p in report["probes"] if not p["results"]]
            if not report["observations"] or empty:
                ok = False
                print(f"locomo-kit: error: {report['project']}: {report['observations']} observations; "
                      f"{len(empty)} of {len(report['probes'])} probes found nothing"
                      + (" (a keyword-only Worker? try --query-strategy keywords)"
                         if empty and args.query_strategy == "question" and report["observations"] else ""),
                      file=sys.stderr)
    return 0 if ok else 1
