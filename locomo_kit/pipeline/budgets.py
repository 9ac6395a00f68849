"""Accuracy against context: one run per context budget, then recall (and F1 / J when answered) per budget.

``--context-budget 250,500,1000,2000`` on ``run`` (and ``leaderboard``) makes one run per budget:
each budget is its own configuration with its own run id, exactly as a single ``--context-budget``
makes it. A budget whose run is already complete (answered, scored, reported, judged when a judge is
asked for, every recorded outcome ok) is not run again; an incomplete one resumes as any rerun does.
The points of the curve are read back from the run folders and written as a page by
:mod:`locomo_kit.reports.curve`, so the curve never holds a number that a run's own report does not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from locomo_kit.pipeline.stages import run_report, run_score
from locomo_kit.reports.curve import curve_points, run_point, write_curve  # noqa: F401  (the curve's page, re-exported)
from locomo_kit.reports.pending import pending_calls
from locomo_kit.runs import RunFolder, run_problems
from locomo_kit.runs.records import SCORES_FILE


def parse_budgets(value: str | int | Sequence[int] | None) -> list[int] | None:
    """Budgets as the CLI and notebooks give them: ``"250,500,1000"``, ``1000``, ``[500, 1000]`` or None.

    Each must be a positive integer; duplicates are dropped; the order given is kept."""
    if value is None or value == "":
        return None
    if isinstance(value, int):
        items: list[Any] = [value]
    elif isinstance(value, str):
        text = value.strip().strip("[]")
        items = [v.strip() for v in text.split(",") if v.strip()]
    else:
        items = list(value)
    out: list[int] = []
    for item in items:
        try:
            n = int(str(item).replace("_", ""))
        except ValueError:
            raise ValueError(f"context budget {item!r} is not a whole number of tokens (e.g. 250,500,1000)") from None
        if n < 1:
            raise ValueError(f"context budget {n} must be a positive number of tokens")
        if n not in out:
            out.append(n)
    if not out:
        raise ValueError(f"no context budget in {value!r} (e.g. 250,500,1000)")
    return out


def run_is_complete(run: RunFolder, *, judge_protocol: str | None = None) -> bool:
    """Whether ``run`` already holds everything a ``run`` command makes: answers (none failed),
    scores, a report, and (``judge_protocol``) that judge's judgements, each stage's outcome ok."""
    if not run.exists():
        return False
    m = run.manifest()
    answer = m.get("answer", {})
    stages = [answer.get("outcome"), m.get("scoring", {}).get("outcome")]
    if judge_protocol:
        stages.append(m.get("judge", {}).get(judge_protocol, {}).get("outcome"))
    if not m.get("report") or not all(isinstance(o, dict) and o.get("ok") for o in stages):
        return False
    if answer.get("failed") or not answer.get("answered", 0) + answer.get("skipped", 0):
        return False

    return not pending_calls(run)


@dataclass
class BudgetRun:
    budget: int
    run: RunFolder
    reused: bool  # complete before this call: nothing was run
    ok: bool  # every stage ended ok and the run is a result (no :func:`~locomo_kit.runs.run_problems`)
    result: Any = None  # the PipelineResult when it was run now
    problems: list[str] = field(default_factory=list)  # why a run whose stages ended is still not a result


def refresh_scores(run: RunFolder, *, sample: str, dataset_path: str | None = None) -> bool:
    """Score and report a complete run again when its scores predate session-level recall (scoring reads
    saved answers only: cheap, and never touches the memory system); True when it did."""

    if all("session_recall" in r for r in run.records(SCORES_FILE)):
        return False

    gold = run.manifest().get("scoring", {}).get("gold_keys") or ["original", "audited"]
    run_score(run, sample=sample, dataset_path=dataset_path, gold="both" if len(gold) > 1 else gold[0])
    run_report(run, sample=sample, dataset_path=dataset_path)
    return True


def run_budgets(budgets: Sequence[int], *, run_one: Callable[[int], Any], config_run: Callable[[int], RunFolder],
                judge_protocol: str | None = None, log: Callable[[str], None] = print,
                sample: str | None = None, dataset_path: str | None = None) -> list[BudgetRun]:
    """Run ``run_one(budget)`` (a :class:`~locomo_kit.pipeline.stages.PipelineResult`) for each budget whose run
    (``config_run(budget)``) is not complete yet; returns one :class:`BudgetRun` per budget, in order.
    A complete run of ``sample`` scored before session-level recall existed is scored again."""
    out = []
    for budget in budgets:
        folder = config_run(budget)
        if run_is_complete(folder, judge_protocol=judge_protocol):
            again = sample is not None and refresh_scores(folder, sample=sample, dataset_path=dataset_path)
            log(f"context budget {budget:,}: already done ({folder.run_id}), not run again"
                + ("; scored again for session-level recall" if again else ""))
            problems = run_problems(folder)
            out.append(BudgetRun(budget=budget, run=folder, reused=True, ok=not problems, problems=problems))
            continue
        log(f"context budget {budget:,}: {folder.run_id}")
        result = run_one(budget)
        problems = run_problems(result.run)
        out.append(BudgetRun(budget=budget, run=result.run, reused=False, ok=bool(result.ok) and not problems,
                             result=result, problems=problems))
    return out
