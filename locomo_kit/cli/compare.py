"""``locomo-kit compare``: runs compared over the questions they share, per category, with intervals."""

from __future__ import annotations

import argparse
from pathlib import Path

from locomo_kit.paths import outputs_dir
from locomo_kit.reports.comparison import compare, statements, table_lines, write_comparison
from locomo_kit.runs import slug


def add_parser(sub: argparse._SubParsersAction) -> None:
    cmp_ = sub.add_parser("compare", help="paired comparison of runs per category, with intervals",
                          description="Compare runs over the questions they share: per category, each run's official "
                          "F1, Mem0 F1, J (same judge only), evidence recall, latency, tokens and cost; the paired "
                          "difference with the first run, a paired-bootstrap 95% interval, the minimal detectable "
                          "difference, and whether the runs are distinguishable. Reads run folders only.")
    cmp_.add_argument("runs", nargs="+", metavar="RUN", help="run ids under outputs/runs, or paths to run folders "
                      "(the first is the baseline)")
    cmp_.add_argument("--gold", choices=["original", "audited"], default="original",
                      help="gold key the runs are compared under (original)")
    cmp_.add_argument("--out", help="folder for compare.md/.json/.png (default outputs/compare/<runs>)")
    cmp_.add_argument("--no-write", action="store_true", help="print only")
    cmp_.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    result = compare(runs=args.runs, gold=args.gold)
    print(f"{result['shared_questions']} shared questions (categories 1-4, {args.gold} gold key); differences vs "
          f"{result['runs'][0]['run_id']}; "
          f"{result['method']['interval']}")
    print("\n".join(table_lines(result)))
    for line in statements(result) + result["notes"]:
        print(line.replace("**", ""))
    if not args.no_write:
        folder = Path(args.out) if args.out else outputs_dir() / "compare" / slug(
            "__vs__".join(r["run_id"] for r in result["runs"]) + ("__audited" if args.gold == "audited" else ""))
        paths = write_comparison(result, folder)
        print(f"comparison: {paths['markdown']} (+ compare.html with the questions across runs, compare.json, "
              "compare.png, questions.png)")
    return 0
