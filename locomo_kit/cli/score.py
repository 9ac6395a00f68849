"""``locomo-kit score``: a run's saved answers scored (F1s, diagnostics), and judged when a judge is named."""

from __future__ import annotations

import argparse

from locomo_kit.cli.common import CliError, call_settings, existing_run, finish, judge_options, say_auto
from locomo_kit.cli.options import (
    add_answer_options,
    add_call_options,
    add_judge_options,
    add_source_options,
    add_worker_options,
)
from locomo_kit.outcome import Outcome
from locomo_kit.pipeline.stages import run_judge, run_score
from locomo_kit.reports.judge_findings import console_lines, run_summary
from locomo_kit.runs import load_scores
from locomo_kit.scoring import by_category
from locomo_kit.scoring.gold import keys_for

LLM_BASE_URL = ("--llm-base-url names the answerer's server (answer, run); score has no answerer: give the judge's "
                "server as --judge-base-url")


def add_parser(sub: argparse._SubParsersAction) -> None:
    sc = sub.add_parser("score", help="score saved answers (F1s, diagnostics) and optionally judge them",
                        description="Score a run's saved answers: official LoCoMo F1, Mem0 F1 and BLEU-1, retrieval "
                        "diagnostics; with --judge-model also LLM-as-a-Judge. Never queries the memory system.")
    add_worker_options(sc)
    add_answer_options(sc, server=False)
    add_source_options(sc)
    add_judge_options(sc)
    add_call_options(sc)
    sc.add_argument("--llm-base-url", dest="llm_base_url", help=argparse.SUPPRESS)  # refused with LLM_BASE_URL
    sc.add_argument("--gold", choices=["original", "audited", "both"], default="both",
                    help="gold key: original (the released answers, comparable to published numbers), audited "
                    "(the LoCoMo audit's corrected answers and evidence ids), or both (default)")
    sc.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    if args.llm_base_url:
        raise CliError(LLM_BASE_URL)
    if args.judge_protocol and not args.judge_model:
        raise CliError(f"--judge-protocol {args.judge_protocol} needs --judge-model (e.g. anthropic/claude-sonnet-4-6)")
    run = existing_run(args)
    key = run_score(run, sample=args.sample, gold=args.gold)[0].config_key
    for gold_key in keys_for(args.gold):
        print(f"gold key: {gold_key}")
        scores = load_scores(run, key, gold_key)
        for row in by_category([(s["category"], s["locomo_f1"]) for s in scores]):
            print(f"{str(row.category):>8} {row.name:<12} n={row.count:<5} official F1 {100 * row.mean:5.1f}% "
                  f"[{100 * row.ci_low:.1f}, {100 * row.ci_high:.1f}]")
    outcomes = []
    if args.judge_model:
        protocol = args.judge_protocol or "playbook"
        say_auto("judge", args.judge_model)
        run_judge(run, judge=judge_options(args), gold=args.gold, calls=call_settings(args))
        record = run.manifest().get("judge", {}).get(protocol, {}).get("outcome")
        if record:
            outcomes.append(Outcome(**{k: v for k, v in record.items() if k not in ("ok", "not_attempted")}))
            print(outcomes[-1].line())
        for line in console_lines(run_summary(run)):  # J with its interval, the calibration, what to distrust
            print(line)
    print(f"run folder: {run.path}")
    return finish(outcomes, run if args.judge_model else None)
