"""``locomo-kit run --context-budget 250,500,1000``: one run per budget, then the accuracy-against-context curve."""

from __future__ import annotations

import argparse
from pathlib import Path

from locomo_kit.budgets import curve_points, run_budgets, write_curve
from locomo_kit.runs import RunFolder, slug, worker_slug


def curve_folder(name: str) -> Path:
    from locomo_kit.paths import outputs_dir

    return outputs_dir() / "curves" / slug(name)


def run_budget_list(args: argparse.Namespace, budgets: list[int], answer_model: str, judge_model: str | None) -> int:
    """Run (or reuse) one configuration per budget, print each run's result, write the curve; the exit
    status is the worst of the runs' (a failed budget makes it non-zero)."""
    from locomo_kit.cli import CliError, _finish, _ingest_outcome, _print_run, _run_one
    from locomo_kit.pipeline import _strategy_key, resolve_run, retrieval, run_config

    if args.run_id:
        raise CliError("--run-id names one run; with several context budgets each budget's run is named by its "
                       "configuration: leave --run-id out")
    if args.top_k is not None and args.top_k < 1:
        raise CliError("--top-k must be at least 1")

    def config_run(budget: int) -> RunFolder:
        top_k, b = retrieval(args.top_k, budget)
        return resolve_run(run_config(args.sample, args.worker_url, args.mode, answer_model, top_k,
                                      getattr(args, "source", "memory"), system=getattr(args, "system", None),
                                      context_budget=b, query_strategy=_strategy_key(args.query_strategy)))

    protocol = (args.judge_protocol or "playbook") if judge_model else None
    done = run_budgets(budgets, lambda b: _run_one(args, b, answer_model, judge_model), config_run, protocol,
                       sample=args.sample)
    codes = []
    for item in done:
        if item.result is not None:
            codes.append(_print_run(item.result))
        else:
            codes.append(max(_finish([], item.run), _ingest_outcome(item.run)))
    points = curve_points([(None, item.run) for item in done])
    model = answer_model.split("/")[-1]
    where = getattr(args, "system", None) or f"{args.mode}-{worker_slug(args.worker_url)}"
    folder = curve_folder(f"{args.sample}-{where}-{model}-b" + "-".join(str(b) for b in sorted(budgets)))
    failed = [f"context budget {i.budget:,} ({i.run.run_id})" for i, c in zip(done, codes) if c]
    notes = [f"**Not every run succeeded**: {', '.join(failed)}; see each run's report."] if failed else []
    paths = write_curve(points, folder, f"Accuracy against context: {args.sample}, {points[0]['system']}, "
                        f"{model}", notes)
    for p in points:
        print(f"context budget {p['budget']:>7,}: evidence recall {_pct(p['evidence_recall'])}, official F1 "
              f"{_pct(p['locomo_f1'])} ({p['run_id']})")
    print(f"curve:   {paths['markdown']} (+ curve.json, curve.png)")
    return max(codes)


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{v:.1f}%"
