"""``locomo-kit leaderboard``: every system on one footing (see :mod:`locomo_kit.pipeline.leaderboard`)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from locomo_kit.cli.common import (
    CliError,
    answerer_options,
    call_settings,
    int_in,
    judge_options,
    pct,
    retrieval_options,
    say_auto,
)
from locomo_kit.cli.options import add_answer_options, add_call_options, add_judge_options, add_sessions_option
from locomo_kit.pipeline.leaderboard import DEFAULT_SYSTEMS, ImportedRuns, LeaderboardError, run_leaderboard
from locomo_kit.pipeline.parallel import ParallelError, PlanAnswer


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("leaderboard", help="run every memory system on the same questions and write one table",
                       description="Run each memory system of --systems through the whole pipeline with the same "
                       "answerer, context budget(s) and judge (reusing every run already complete), then write "
                       "outputs/leaderboards/<id>/leaderboard.md, .csv, .json and .png (and curve.png with several "
                       "budgets): recall within the budget, recall@10, session-level recall with its chance level, "
                       "official and Mem0 F1, J when judged, ingest time, search p50/p95, context tokens, the paired "
                       "difference against the first system, and the published rows, quoted. Exits 1 when any "
                       "system failed.")
    p.add_argument("--systems", default=DEFAULT_SYSTEMS,
                   help="comma-separated systems, the first is the baseline of the paired differences: memworker, "
                   "bm25, dense, mempalace, mem0, claude-mem=URL (default " + DEFAULT_SYSTEMS + ")")
    p.add_argument("--sample", default="conv-26", help="a sample id, a comma-separated list, or 'all' (default conv-26)")
    add_sessions_option(p)
    add_answer_options(p, budgets=True)
    add_judge_options(p)
    add_call_options(p)
    p.add_argument("--imported", default="", metavar="RUN,…", help="imported runs (locomo-kit import) to show in their "
                   "own section, answered elsewhere, scored here (never paired with the measured rows)")
    p.add_argument("--judge", metavar="NAME", help="with --imported: show the imported runs' J under this one judge, a "
                   "verdict set's name as `locomo-kit judges RUN` lists it (e.g. 'gpt-5 mem0 prompt' or rule:f1), for "
                   "every imported run that has it, and name the runs that lack it (default: every judge they share)")
    p.add_argument("--out", help="folder for the leaderboard (default outputs/leaderboards/<id>)")
    p.add_argument("--jobs", type=int_in(1, 64), default=None, metavar="N",
                   help="systems run at once, each in a process of its own (the last to start, where it keeps a store "
                   "per conversation as MemPalace and Mem0 do, runs its conversations in N processes), with the "
                   "same runs and results as one after another (default: the machine's cores, capped by its "
                   "available memory)")
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    if args.query_strategy != "question":
        raise CliError("the leaderboard asks every system the question itself (--query-strategy question)")
    if args.judge_protocol and not args.judge_model:
        raise CliError(f"--judge-protocol {args.judge_protocol} needs --judge-model (e.g. anthropic/claude-sonnet-4-6)")
    say_auto("answer", args.answer_model)
    say_auto("judge", args.judge_model)
    calls = call_settings(args)
    if args.yes:  # the same answer, in a form a parallel job's process can take
        calls = replace(calls, confirm=PlanAnswer(yes=True))
    try:
        result = run_leaderboard(args.systems, sample=args.sample,
                                 budgets=[retrieval_options(args, b) for b in args.context_budget or [None]],
                                 answerer=answerer_options(args), judge=judge_options(args),
                                 imported=ImportedRuns(tuple(r for r in args.imported.split(",") if r.strip()),
                                                       judge=args.judge), out=args.out,
                                 calls=replace(calls, jobs=args.jobs))
    except (LeaderboardError, ParallelError) as exc:
        raise CliError(str(exc)) from None
    for r in result.rows:
        print(f"{r['system']:<28} budget {r['budget'] or 0:>6,}: evidence recall {pct(r['evidence_recall'])}, "
              f"official F1 {pct(r['locomo_f1'])}" + ("" if r["status"] == "ok" else f" ({r['status']})"))
    for o in result.systems:
        if not o.ok:
            why = o.error or "; ".join(p for r in o.runs for p in r.problems) or "partial results (see its report)"
            print(f"locomo-kit: error: {o.entry.spec}: {why}", file=sys.stderr)
    print(f"leaderboard: {result.paths['markdown']} (+ report.html, leaderboard.csv, leaderboard.json"
          + (", leaderboard.png" if "figure" in result.paths else "") + (", curve.png" if "curve" in result.paths else "")
          + ")")
    return 0 if result.ok else 1
