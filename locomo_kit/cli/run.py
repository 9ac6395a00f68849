"""``locomo-kit run``: the whole pipeline (ingest, answer, score, judge, report) for one configuration, or one
run per context budget followed by the accuracy-against-context curve."""

from __future__ import annotations

import argparse
from pathlib import Path

from locomo_kit.cli.common import (
    CliError,
    config_run,
    finish,
    ingest_status,
    paid_models,
    pct,
    print_run,
    run_one,
    say_auto,
)
from locomo_kit.cli.options import (
    add_answer_options,
    add_call_options,
    add_consistency_option,
    add_judge_options,
    add_session_timeout_option,
    add_source_option,
    add_worker_options,
)
from locomo_kit.paths import outputs_dir
from locomo_kit.pipeline.budgets import run_budgets
from locomo_kit.reports.curve import curve_points, write_curve
from locomo_kit.runs import slug, worker_slug


def add_parser(sub: argparse._SubParsersAction) -> None:
    run = sub.add_parser("run", help="the whole pipeline: ingest, answer, score, (judge), report",
                         description="Run the whole pipeline on the embedded Worker offline by default; --paid runs "
                         "the paid protocol (answerer claude-opus-4-6, judge claude-sonnet-4-6) with ANTHROPIC_API_KEY.")
    add_worker_options(run)
    add_answer_options(run, budgets=True)
    add_judge_options(run)
    add_call_options(run)
    add_consistency_option(run)
    add_session_timeout_option(run)
    add_source_option(run)
    run.add_argument("--paid", action="store_true", help="use the Anthropic answerer and judge (needs ANTHROPIC_API_KEY)")
    run.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    answer_model, judge_model = paid_models(args)
    say_auto("answer", answer_model)
    say_auto("judge", judge_model)
    budgets = args.context_budget or [None]
    if len(budgets) > 1:
        return run_budget_list(args, budgets, answer_model, judge_model)
    return print_run(run_one(args, budget=budgets[0], answer_model=answer_model, judge_model=judge_model))


def curve_folder(name: str) -> Path:
    return outputs_dir() / "curves" / slug(name)


def run_budget_list(args: argparse.Namespace, budgets: list[int], answer_model: str, judge_model: str | None) -> int:
    """Run (or reuse) one configuration per budget, print each run's result, write the curve; the exit
    status is the worst of the runs' (a failed budget makes it non-zero)."""
    if args.run_id:
        raise CliError("--run-id names one run; with several context budgets each budget's run is named by its "
                       "configuration: leave --run-id out")
    protocol = (args.judge_protocol or "playbook") if judge_model else None
    done = run_budgets(budgets, run_one=lambda b: run_one(args, budget=b, answer_model=answer_model, judge_model=judge_model),
                       config_run=lambda b: config_run(args, budget=b, answer_model=answer_model),
                       judge_protocol=protocol, sample=args.sample)
    codes = []
    for item in done:
        if item.result is not None:
            codes.append(print_run(item.result))
        else:
            codes.append(max(finish([], item.run), ingest_status(item.run)))
    points = curve_points(runs=[(None, item.run) for item in done])
    model = answer_model.split("/")[-1]
    where = getattr(args, "system", None) or f"{args.mode}-{worker_slug(args.worker_url)}"
    folder = curve_folder(f"{args.sample}-{where}-{model}-b" + "-".join(str(b) for b in sorted(budgets)))
    failed = [f"context budget {i.budget:,} ({i.run.run_id})" for i, c in zip(done, codes) if c]
    notes = [f"**Not every run succeeded**: {', '.join(failed)}; see each run's report."] if failed else []
    paths = write_curve(points=points, folder=folder, notes=notes,
                        title=f"Accuracy against context: {args.sample}, {points[0]['system']}, {model}")
    for p in points:
        print(f"context budget {p['budget']:>7,}: evidence recall {pct(p['evidence_recall'])}, official F1 "
              f"{pct(p['locomo_f1'])} ({p['run_id']})")
    print(f"curve:   {paths['markdown']} (+ curve.json, curve.png)")
    return max(codes)
