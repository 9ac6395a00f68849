"""``locomo-kit`` command line: thin wrappers over the library functions the notebooks call."""

from __future__ import annotations

import argparse
import json
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
    run = sub.add_parser("run", help="run the main job headless (papermill) into outputs/",
                         description="Run the kit's main job: notebooks executed headless into outputs/.")
    run.add_argument("--sample", default="all", help="'all', a sample id, or a comma-separated list")
    run.set_defaults(func=_cmd_run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from locomo_kit.dataset import DatasetError

    args = build_parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except (CliError, DatasetError, KeyError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        print(f"locomo-kit: error: {message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("locomo-kit: interrupted; rerun the same command to resume.", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
