"""``locomo-kit`` command line: thin wrappers over the library functions the notebooks call."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Callable, Sequence

from locomo_kit import __version__


class CliError(Exception):
    """An expected failure: printed as one line, exit code 1."""


def _cmd_data_fetch(args: argparse.Namespace) -> int:
    from locomo_kit.data_fetch import DataFetchError, fetch_dataset, sha256_file

    try:
        path = fetch_dataset(source=args.source, force=args.force)
    except DataFetchError as exc:
        raise CliError(str(exc)) from None
    print(f"{path} ok (sha256 {sha256_file(path)})")
    return 0


def _cmd_stats(args: argparse.Namespace) -> int:
    from locomo_kit.dataset import dataset_stats, load_dataset, select

    stats = dataset_stats(select(load_dataset(args.dataset), args.sample))
    print(json.dumps(stats, indent=2))
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    from locomo_kit.notebook_run import run_notebooks

    out = run_notebooks(["01_dataset.ipynb"], parameters={"sample": args.sample})
    print(f"Executed notebooks are in {out}")
    return 0


def _worker_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sample", default="conv-26", help="a sample id, a comma-separated list, or 'all' (default conv-26)")
    p.add_argument("--worker-url", default=os.environ.get("LOCOMO_WORKER_URL", "embedded"),
                   help="Worker base URL, or 'embedded' to start memworker for the run "
                   "(default: $LOCOMO_WORKER_URL, else embedded); token from $LOCOMO_WORKER_TOKEN")
    p.add_argument("--mode", choices=["transcript", "turns"], default="transcript",
                   help="transcript: one Read per session (default); turns: each turn saved via memory/save")
    p.add_argument("--run-id", help="run folder name under outputs/runs (default: derived from sample, mode, worker)")


def _cmd_ingest(args: argparse.Namespace) -> int:
    from locomo_kit.ingest import print_summary
    from locomo_kit.pipeline import run_ingest

    run, summary = run_ingest(args.sample, args.worker_url, args.mode, args.run_id, force=args.force,
                              session_timeout=args.session_timeout, poll_interval=args.poll_interval)
    print_summary(summary)
    print(f"run folder: {run.path}")
    return 1 if summary.failed or summary.zero_observation_sessions else 0


def _cmd_verify(args: argparse.Namespace) -> int:
    from locomo_kit.ingest import format_verification, verify
    from locomo_kit.pipeline import connect, load, resolve_run

    conversations, _ = load(args.sample)
    run = resolve_run(args.sample, args.mode, args.worker_url, args.run_id)
    if args.worker_url == "embedded" and not run.exists():
        raise CliError(f"No run at {run.path}: ingest first (locomo-kit ingest --sample {args.sample})")
    with connect(args.worker_url, run) as client:
        counts = []
        for conv in conversations:
            report = verify(client, conv)
            print(format_verification(report))
            counts.append(report["observations"])
    return 0 if all(counts) else 1


def _add_data(sub: argparse._SubParsersAction) -> None:
    data = sub.add_parser("data", help="get the LoCoMo dataset", description="Get the LoCoMo dataset.")
    data_sub = data.add_subparsers(dest="data_command", required=True)
    fetch = data_sub.add_parser(
        "fetch",
        help="download or copy locomo10.json into data/ and verify its sha256",
        description="Download the pinned locomo10.json into data/, or copy it from LOCOMO_SOURCE "
        "(a path or URL); the sha256 is verified either way.",
    )
    fetch.add_argument("--source", help="path or URL (default: $LOCOMO_SOURCE, else the upstream URL)")
    fetch.add_argument("--force", action="store_true", help="replace an existing file")
    fetch.set_defaults(func=_cmd_data_fetch)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="locomo-kit", description="Evaluate memory systems on LoCoMo.")
    parser.add_argument("--version", action="version", version=f"locomo-kit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_data(sub)
    stats = sub.add_parser("stats", help="validate the dataset and print its statistics",
                           description="Validate the dataset and print its statistics as JSON.")
    stats.add_argument("--dataset", help="path to locomo10.json (default data/locomo10.json)")
    stats.add_argument("--sample", default="all", help="'all', a sample id, or a comma-separated list")
    stats.set_defaults(func=_cmd_stats)
    ing = sub.add_parser("ingest", help="ingest conversations into a Worker (resumable)",
                         description="Ingest LoCoMo conversations into a Worker over the claude-mem API. "
                         "Resumable: a rerun skips sessions already ingested.")
    _worker_options(ing)
    ing.add_argument("--force", action="store_true", help="forget the project in the Worker and ingest again")
    ing.add_argument("--session-timeout", type=float, default=180.0, help="seconds to wait per session (180)")
    ing.add_argument("--poll-interval", type=float, default=3.0, help="longest pause between queue polls (3 s)")
    ing.set_defaults(func=_cmd_ingest)
    ver = sub.add_parser("verify", help="count a project's observations and probe search",
                         description="Count the observations of each sample's project and show the top 3 "
                         "results for one single-hop, one multi-hop and one temporal question.")
    _worker_options(ver)
    ver.set_defaults(func=_cmd_verify)
    run = sub.add_parser("run", help="run the main job headless (papermill) into outputs/",
                         description="Run the kit's main job: notebooks executed headless into outputs/.")
    run.add_argument("--sample", default="all", help="'all', a sample id, or a comma-separated list")
    run.set_defaults(func=_cmd_run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from locomo_kit.dataset import DatasetError
    from locomo_kit.worker_client import WorkerError

    args = build_parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except (CliError, DatasetError, KeyError, WorkerError, RuntimeError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        print(f"locomo-kit: error: {message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("locomo-kit: interrupted; rerun the same command to resume.", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
