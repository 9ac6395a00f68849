"""What every command shares: the one-line error, argument types, how a run's outcome becomes an exit
status and console lines, the paid-call settings, and finding a run from its options."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Callable

from locomo_kit.dataset import partial_note
from locomo_kit.llm import DEFAULT_ANSWER_MODEL, DEFAULT_JUDGE_MODEL, resolve_auto
from locomo_kit.llm.execute import CallSettings
from locomo_kit.outcome import first_error
from locomo_kit.pipeline.budgets import parse_budgets
from locomo_kit.pipeline.stages import PipelineResult, resolve_run, run_all, run_config
from locomo_kit.reports.pending import pending_calls
from locomo_kit.runs import RunFolder, known_runs, run_problems, slug
from locomo_kit.settings import Answerer, Judge, Retrieval, SystemSpec
from locomo_kit.systems.options import parse_pairs


class CliError(Exception):
    """An expected failure: printed as one line, exit code 1."""


def int_in(lo: int, hi: int) -> Callable[[str], int]:
    """An argparse type: an integer from ``lo`` to ``hi`` (a clear error otherwise)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"must be from {lo} to {hi}, got {value}")
        return value
    parse.__name__ = "integer"
    return parse


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, got {text}")
    return value


def budget_list(text: str) -> list[int]:
    """An argparse type: one context budget or a comma-separated list (``250,500,1000``)."""
    try:
        budgets = parse_budgets(text) or []
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if any(b > 1_000_000 for b in budgets):
        raise argparse.ArgumentTypeError(f"must be from 1 to 1000000, got {text}")
    return budgets


def finish(outcomes, run: RunFolder | None = None, ok_code: int = 0) -> int:
    """Exit status for a command whose stages ended with ``outcomes``: non-zero, with the first
    failure's reason and a count of the rest, when any is not ok, or while ``run`` has answer or
    judge calls pending."""
    message = first_error(outcomes)
    if message:
        print(f"locomo-kit: error: {message}", file=sys.stderr)
    pending = pending_calls(run) if run is not None else []
    for line in pending:
        print(f"locomo-kit: {line}", file=sys.stderr)
    return 1 if message or pending else ok_code


def say_auto(role: str, spec: str | None) -> None:
    """Say what ``auto`` chose, and why: it falls back to the free extractive answerer without a key."""
    if spec != "auto":
        return
    chosen = resolve_auto(spec, DEFAULT_ANSWER_MODEL if role == "answer" else DEFAULT_JUDGE_MODEL)
    why = "ANTHROPIC_API_KEY is set" if os.environ.get("ANTHROPIC_API_KEY") else "ANTHROPIC_API_KEY is not set"
    if chosen == "extractive" and role == "judge":
        chosen = "no judge (F1 only)"  # there is no extractive judge
    print(f"{role} model: auto → {chosen} ({why})")


def paid_models(args: argparse.Namespace) -> tuple[str, str | None]:
    answer_model, judge_model = args.answer_model, args.judge_model
    if args.paid:
        answer_model = answer_model if answer_model != "extractive" else "anthropic/claude-opus-4-6"
        judge_model = judge_model or "anthropic/claude-sonnet-4-6"
    return answer_model, judge_model


def call_settings(args: argparse.Namespace) -> CallSettings:
    """The paid-call options as CallSettings: on a terminal the plan is confirmed unless --yes;
    elsewhere spending needs --yes."""

    def confirm(plan_line: str) -> bool:
        if args.yes:
            return True
        if not sys.stdin.isatty():
            raise CliError("not on a terminal, so the plan above cannot be confirmed: pass --yes to spend "
                           "(and --max-cost USD to cap it)")
        return input("Spend this? [y/N] ").strip().lower() in ("y", "yes")

    return CallSettings(concurrency=args.concurrency, rpm=args.rpm, tpm=args.tpm, retries=args.retries, batch=args.batch,
                        poll_interval=args.batch_poll, max_cost=args.max_cost, confirm=confirm)


def system_options(args: argparse.Namespace) -> dict[str, str] | None:
    """``--system-option NAME=VALUE`` (repeatable) as a dict (None without any)."""
    return parse_pairs(getattr(args, "system_option", None) or []) or None


def system_spec(args: argparse.Namespace) -> SystemSpec:
    """The memory system the options name: ``--system``, ``--system-option``, ``--worker-url``, ``--mode``,
    ``--ingest-id`` and the Worker's timings."""
    return SystemSpec(name=getattr(args, "system", None), options=system_options(args), worker_url=args.worker_url,
                      mode=args.mode, ingest_id=getattr(args, "ingest_id", None),
                      session_timeout=getattr(args, "session_timeout", 180.0),
                      poll_interval=getattr(args, "poll_interval", 3.0),
                      consistency_timeout=getattr(args, "consistency_timeout", 1200.0))


def retrieval_options(args: argparse.Namespace, budget: int | None = None) -> Retrieval:
    """``--context-budget`` (or ``budget``: one of its list) and ``--top-k``, ``--query-strategy``: a budget of 1,000
    tokens by default, ``--top-k`` alone means top-k."""
    budget = budget if budget is not None else args.context_budget
    if budget is not None and budget < 1:
        raise CliError("--context-budget must be a positive number of tokens")
    if args.top_k is not None and args.top_k < 1:
        raise CliError("--top-k must be at least 1")
    try:
        return Retrieval(context_budget=budget, top_k=args.top_k,
                         query_strategy=getattr(args, "query_strategy", "question"))
    except ValueError as exc:
        raise CliError(str(exc)) from None


def answerer_options(args: argparse.Namespace, model: str | None = None) -> Answerer:
    """The answerer the options name: ``--answer-model`` (or ``model``, e.g. what ``--paid`` chose), its server,
    ``--source``, ``--include-adversarial``, ``--limit``, ``--timeout``."""
    return Answerer(model=model or args.answer_model, base_url=getattr(args, "answer_base_url", None),
                    source=getattr(args, "source", "memory"),
                    include_adversarial=getattr(args, "include_adversarial", False),
                    limit=getattr(args, "limit", None), timeout=getattr(args, "timeout", None))


def judge_options(args: argparse.Namespace, model: str | None = None) -> Judge:
    """The judge the options name: ``--judge-model`` (or ``model``), ``--judge-protocol``, ``--judge-runs``,
    ``--judge-base-url``, ``--calibration-size``, ``--timeout``."""
    return Judge(model=model if model is not None else args.judge_model, protocol=args.judge_protocol or "playbook",
                 runs=args.judge_runs, base_url=args.judge_base_url, calibration_size=args.calibration_size,
                 timeout=getattr(args, "timeout", None))


def run_one(args: argparse.Namespace, budget: int | None, answer_model: str, judge_model: str | None) -> PipelineResult:
    """One configuration through the whole pipeline (``budget``: this run's context budget, or None)."""
    return run_all(args.sample, system=system_spec(args), retrieval=retrieval_options(args, budget),
                   answerer=answerer_options(args, answer_model), judge=judge_options(args, judge_model),
                   run_id=args.run_id, calls=call_settings(args))


def config_run(args: argparse.Namespace, budget: int | None = None, answer_model: str | None = None) -> RunFolder:
    """The run folder the options name (``budget``: one of ``--context-budget``'s list), as :func:`run_one` makes it."""
    config = run_config(args.sample, system=system_spec(args), retrieval=retrieval_options(args, budget),
                        answerer=answerer_options(args, answer_model))
    return resolve_run(config, run_id=getattr(args, "run_id", None))


def print_run(result: PipelineResult) -> int:
    """The run's one-line result, its report's path, and the exit status of its outcomes."""
    summary, report = result.summary, result.report
    f1 = next(r for r in summary["locomo_f1"] if r["category"] == "overall")
    done = "" if result.ok else "PARTIAL: "
    print(f"{done}official F1 {f1['mean']:.1f}% over {summary['questions']} questions "
          f"({result.run.manifest().get('config_label', summary['answerer_label'])})")
    print(f"report:  {report}")
    print(f"html:    {report.with_suffix('.html')} (with the question explorer)")
    print(f"figures: {report.parent / 'figures'} ({len(result.figures)} PNG)")
    return max(finish(result.outcomes, result.run), ingest_status(result.run))


def ingest_status(run: RunFolder) -> int:
    """1 (with the reason on stderr) when the run's ingestion or retrieval failed: the report says so too."""
    problems = run_problems(run)
    for p in problems:
        print(f"locomo-kit: error: {p}; see the banner at the top of the report", file=sys.stderr)
    return 1 if problems else 0


def existing_run(args: argparse.Namespace) -> RunFolder:
    """The run a command reads: ``args.run`` (an id or a folder's path), else the one its options select."""
    if getattr(args, "run", None):
        run = RunFolder(args.run) if "/" not in args.run else RunFolder(Path(args.run).name, root=Path(args.run).parent)
        if not run.exists():
            known = known_runs()
            raise CliError(f"No run at {run.path}." + (f" Known runs: {', '.join(known[:12])}" if known else ""))
        return run
    config = run_config(args.sample, system=system_spec(args), retrieval=retrieval_options(args),
                        answerer=answerer_options(args))
    run = resolve_run(config, run_id=args.run_id)
    if not run.exists():
        others = known_runs(f"{slug(args.sample)}-")
        hint = f" Runs for {args.sample}: {', '.join(others[:8])} (select one with --run-id)." if others else ""
        raise CliError(f"No run at {run.path} for configuration {config.label()}: run `locomo-kit run --sample "
                       f"{args.sample}` (with the same options) first.{hint}")
    return run


def print_partial(conversations) -> None:
    for conv in conversations:
        if note := partial_note(conv):
            print(note)


def pct(v: float | None) -> str:
    return "–" if v is None else f"{v:.1f}%"
