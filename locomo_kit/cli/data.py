"""``locomo-kit data fetch``: the pinned LoCoMo file and its gold-answer audit, verified by sha256."""

from __future__ import annotations

import argparse
import os

from locomo_kit.cli.common import CliError
from locomo_kit.data_fetch import (
    AUDIT_SHA256,
    LOCOMO_SHA256,
    DataFetchError,
    default_audit_path,
    fetch_audit,
    fetch_dataset,
    kept_note,
    sha256_file,
)
from locomo_kit.paths import default_dataset_path


def add_parser(sub: argparse._SubParsersAction) -> None:
    data = sub.add_parser("data", help="get the LoCoMo dataset", description="Get the LoCoMo dataset.")
    data_sub = data.add_subparsers(dest="data_command", required=True)
    fetch = data_sub.add_parser(
        "fetch",
        help="download or copy locomo10.json and the gold-answer audit into data/ and verify their sha256",
        description="Download the pinned locomo10.json into data/, or copy it from LOCOMO_SOURCE "
        "(a path or URL); likewise the pinned LoCoMo audit (dial481/locomo-audit errors.json) from "
        "LOCOMO_AUDIT_SOURCE. The sha256 is verified either way.",
    )
    fetch.add_argument("--source", help="path or URL (default: $LOCOMO_SOURCE, else the upstream URL)")
    fetch.add_argument("--audit-source", help="path or URL of the audit's errors.json (default: $LOCOMO_AUDIT_SOURCE, "
                       "else a copy beside a local LOCOMO_SOURCE, else the pinned URL)")
    fetch.add_argument("--force", action="store_true", help="replace an existing file")
    fetch.set_defaults(func=handle_fetch)


def handle_fetch(args: argparse.Namespace) -> int:
    # a verified copy is kept and its source goes unused: said for a source given by option or by variable
    given = ((args.source and "--source", args.source or os.environ.get("LOCOMO_SOURCE"), "LOCOMO_SOURCE",
              default_dataset_path(), LOCOMO_SHA256),
             (args.audit_source and "--audit-source", args.audit_source or os.environ.get("LOCOMO_AUDIT_SOURCE"),
              "LOCOMO_AUDIT_SOURCE", default_audit_path(), AUDIT_SHA256))
    kept = [(option or variable, source, path, sha) for option, source, variable, path, sha in given
            if source and path.exists() and not args.force]
    try:
        path = fetch_dataset(source=args.source, force=args.force)
        print(f"{path} ok (sha256 {sha256_file(path)})")
        audit = fetch_audit(source=args.audit_source, force=args.force)
        print(f"{audit} ok (sha256 {sha256_file(audit)})")
        for origin, source, kept_path, sha in kept:
            print(kept_note(kept_path, source, sha, origin))
    except DataFetchError as exc:
        raise CliError(str(exc)) from None
    return 0
