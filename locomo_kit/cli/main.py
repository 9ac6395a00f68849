"""The ``locomo-kit`` parser, made of every command module's ``add_parser``, and ``main``: one line per expected
error, exit 130 on Ctrl-C."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable, Sequence

from locomo_kit import __version__
from locomo_kit.cli import (
    answer,
    compare,
    data,
    export,
    imports,
    ingest,
    judges,
    leaderboard,
    report,
    run,
    score,
    stats,
    systems,
    verify,
)
from locomo_kit.cli.common import CliError
from locomo_kit.dataset import DatasetError, with_sessions
from locomo_kit.worker.client import WorkerError

COMMANDS = (data, stats, systems, ingest, verify, answer, score, report, export, run, compare, leaderboard, imports, judges)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="locomo-kit", description="Evaluate memory systems on LoCoMo.")
    parser.add_argument("--version", action="version", version=f"locomo-kit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        if getattr(args, "sessions", None) is not None:
            args.sample = with_sessions(sample=args.sample, sessions=args.sessions)
        return func(args)
    except (CliError, DatasetError, KeyError, WorkerError, RuntimeError, ValueError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        print(f"locomo-kit: error: {message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("locomo-kit: interrupted; rerun the same command to resume.", file=sys.stderr)
        if argv is None:  # the command line: every record is already on disk (fsynced), so leave now, without
            sys.stdout.flush()  # waiting for calls still in flight or a slow interpreter teardown
            sys.stderr.flush()
            os._exit(130)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
