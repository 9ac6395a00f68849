"""``locomo-kit leaderboard``: every system on one footing (see :mod:`locomo_kit.leaderboard`)."""

from __future__ import annotations

import argparse

from locomo_kit.leaderboard import DEFAULT_SYSTEMS


def add_parser(sub: argparse._SubParsersAction) -> None:
    from locomo_kit.cli import _answer_options, _call_options, _judge_options, _sessions_option

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
    _sessions_option(p)
    _answer_options(p, budgets=True)
    _judge_options(p)
    _call_options(p)
    p.add_argument("--imported", default="", metavar="RUN,…", help="imported runs (locomo-kit import) to show in their "
                   "own section, answered elsewhere, scored here (never paired with the measured rows)")
    p.add_argument("--out", help="folder for the leaderboard (default outputs/leaderboards/<id>)")
    p.set_defaults(func=_cmd_leaderboard)


def _cmd_leaderboard(args: argparse.Namespace) -> int:
    import sys

    from locomo_kit.cli import CliError, _call_settings, _say_auto
    from locomo_kit.leaderboard import LeaderboardError, run_leaderboard

    if args.query_strategy != "question":
        raise CliError("the leaderboard asks every system the question itself (--query-strategy question)")
    if args.judge_protocol and not args.judge_model:
        raise CliError(f"--judge-protocol {args.judge_protocol} needs --judge-model (e.g. anthropic/claude-sonnet-4-6)")
    _say_auto("answer", args.answer_model)
    _say_auto("judge", args.judge_model)
    try:
        result = run_leaderboard(args.systems, args.sample, args.context_budget, args.answer_model, args.judge_model,
                                 args.judge_protocol or "playbook", args.top_k, args.out,
                                 judge_runs=args.judge_runs, llm_base_url=args.answer_base_url,
                                 judge_base_url=args.judge_base_url, calibration_size=args.calibration_size,
                                 calls=_call_settings(args), timeout=args.timeout,
                                 imported=[r for r in args.imported.split(",") if r.strip()])
    except LeaderboardError as exc:
        raise CliError(str(exc)) from None
    for r in result.rows:
        print(f"{r['system']:<28} budget {r['budget'] or 0:>6,}: evidence recall {_pct(r['evidence_recall'])}, "
              f"official F1 {_pct(r['locomo_f1'])}" + ("" if r["status"] == "ok" else f" ({r['status']})"))
    for o in result.systems:
        if not o.ok:
            why = o.error or "partial results (see its report)"
            print(f"locomo-kit: error: {o.entry.spec}: {why}", file=sys.stderr)
    print(f"leaderboard: {result.paths['markdown']} (+ report.html, leaderboard.csv, leaderboard.json"
          + (", leaderboard.png" if "figure" in result.paths else "") + (", curve.png" if "curve" in result.paths else "")
          + ")")
    return 0 if result.ok else 1


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{v:.1f}%"
