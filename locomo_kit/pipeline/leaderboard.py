"""A measured leaderboard: every memory system on the same questions, answerer, context budget and judge.

``run_leaderboard(["memworker", "bm25", "dense"], "conv-26")`` runs each system through the whole
pipeline (:func:`locomo_kit.pipeline.stages.run_all`) once per context budget, reusing every run that is
already complete (:mod:`locomo_kit.pipeline.budgets`), then writes under ``outputs/leaderboards/<id>/``:

- ``leaderboard.md`` / ``.csv`` / ``.json``: per system (named with its version) and budget, evidence
  recall within the budget, recall@10, session-level R@10 and hit@5 with their chance levels, official
  F1 and Mem0 F1, J when judged, ingest time, search p50/p95, context tokens; the paired difference of
  each system against the first one with its 95% interval (:func:`locomo_kit.reports.comparison.compare`, the one
  place for those statistics); and the published rows (:mod:`locomo_kit.reports.baselines`) beside
  them, marked "quoted, not measured here";
- ``leaderboard.png`` (the measured figures per system) and, with several budgets, ``curve.png``
  (accuracy against context, :func:`locomo_kit.reports.curve.write_curve`);
- ``report.html``: the same page in the kit's self-contained HTML shell (figures inline), ending with the
  question explorer across the runs; ``questions.png`` and the flips of every two systems at the same
  budget (:mod:`locomo_kit.reports.runs_explorer`, :mod:`locomo_kit.reports.flips`).

A system that fails (its package missing, its ingestion stopped, answers failed) does not stop the
others: it is listed as failed at the top of the table, and ``result.ok`` is False (the command exits 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

from locomo_kit.llm import DEFAULT_ANSWER_MODEL, resolve_auto
from locomo_kit.llm.execute import CallSettings
from locomo_kit.paths import outputs_dir
from locomo_kit.pipeline.budgets import parse_budgets, run_budgets
from locomo_kit.pipeline.stages import resolve_run, run_all, run_config
from locomo_kit.reports.imported_board import imported_rows
from locomo_kit.reports.leaderboard_page import measured_row, run_label, write_leaderboard
from locomo_kit.runs import RunFolder, slug
from locomo_kit.settings import DEFAULT_CONTEXT_BUDGET, Answerer, Judge, Retrieval, SystemSpec, as_answerer, as_judge
from locomo_kit.systems.registry import resolve, spec

DEFAULT_SYSTEMS = "memworker,bm25,dense"


class LeaderboardError(ValueError):
    """A leaderboard that cannot be run as asked (an unknown system, a system named twice)."""


@dataclass(frozen=True)
class Entry:
    """One system as the ``--systems`` list names it: ``bm25``, or ``claude-mem=http://127.0.0.1:37777``."""

    name: str
    worker_url: str = "embedded"

    @property
    def spec(self) -> str:
        return f"{self.name}={self.worker_url}" if self.worker_url != "embedded" else self.name

    def system(self) -> SystemSpec:
        """The system :func:`~locomo_kit.pipeline.stages.run_all` / ``run_config`` run for this entry."""
        if self.name in ("memworker", "claude-mem"):  # a Worker URL other than embedded means claude-mem
            return SystemSpec(worker_url=self.worker_url)
        return SystemSpec(name=self.name)


def parse_systems(value: str | Sequence[str]) -> list[Entry]:
    """``"memworker,bm25,claude-mem=http://…"`` (or a list) as entries, in order; each name known, none twice."""
    items = [v.strip() for v in (value.split(",") if isinstance(value, str) else value) if str(v).strip()]
    if not items:
        raise LeaderboardError("no system named: pass --systems memworker,bm25,dense (a comma-separated list)")
    out: list[Entry] = []
    for item in items:
        name, _, url = item.partition("=")
        name = name.strip()
        try:
            spec(name)  # a registered name, an entry point, mcp:NAME or a profile's path, package.module:Class
        except ValueError as exc:
            raise LeaderboardError(f"in --systems: {exc}") from None
        if name == "claude-mem" and not url:
            raise LeaderboardError("claude-mem needs its Worker's URL in the list: claude-mem=http://127.0.0.1:37777")
        if url and name not in ("claude-mem", "memworker"):
            raise LeaderboardError(f"{name} runs without a URL: name it alone, not {item!r}")
        entry = Entry(name=name, worker_url=url.strip() or "embedded")
        if entry in out:
            raise LeaderboardError(f"{entry.spec} is named twice in --systems")
        out.append(entry)
    return out


@dataclass
class SystemOutcome:
    entry: Entry
    runs: list[Any] = field(default_factory=list)  # budgets.BudgetRun, one per budget run
    error: str | None = None  # the reason the system failed outright (no run to show)

    @property
    def ok(self) -> bool:
        return self.error is None and all(r.ok for r in self.runs)


@dataclass
class LeaderboardResult:
    folder: Path
    rows: list[dict[str, Any]]
    systems: list[SystemOutcome]
    paths: dict[str, Path]
    ok: bool


def leaderboard_id(sample: str, *, entries: Sequence[Entry], answer_model: str, budgets: Sequence[int],
                   judge_model: str | None, limit: int | None = None) -> str:
    names = "-".join(e.name for e in entries)
    judge = f"-j{judge_model.split('/')[-1]}" if judge_model else ""
    first = f"-q{limit}" if limit else ""
    return slug(f"{sample}{first}-{answer_model.split('/')[-1]}-b{'-'.join(str(b) for b in sorted(budgets))}"
                f"{judge}-{names}")


def retrievals(budgets: str | Sequence[int | Retrieval] | None) -> list[Retrieval]:
    """One :class:`~locomo_kit.settings.Retrieval` per budget: ``"500,1000"``, ``[500, 1000]`` (each a budget of at
    most 100 memories), or the retrievals themselves; none given: the default budget (1,000 tokens)."""
    if budgets is None or isinstance(budgets, (str, int)):
        return [Retrieval(context_budget=b) for b in parse_budgets(budgets) or [DEFAULT_CONTEXT_BUDGET]]
    given = list(budgets)
    if given and all(isinstance(b, Retrieval) for b in given):
        return given
    return [Retrieval(context_budget=b) for b in parse_budgets(given) or [DEFAULT_CONTEXT_BUDGET]]


def run_leaderboard(systems: str | Sequence[str], *, sample: str = "conv-26",
                    budgets: str | Sequence[int | Retrieval] | None = None, answerer: Answerer | str | None = None,
                    judge: Judge | str | None = None, imported: Sequence[str] = (), out: str | Path | None = None,
                    calls: CallSettings | None = None) -> LeaderboardResult:
    """Run (or reuse) every system at every budget and write the leaderboard (see module doc).

    ``budgets``: context budgets (``"500,1000"``) or one :class:`~locomo_kit.settings.Retrieval` per run (a top-k
    cap); ``answerer`` and ``judge`` are the same for every system (``answerer.limit``: only the first N
    questions of each sample, runs of their own, as ``run --limit`` makes them); ``calls``: as
    :func:`~locomo_kit.pipeline.stages.run_all` takes them (its ``log`` says what is run).
    """

    entries = parse_systems(systems)
    wanted = {r.context_budget: r for r in retrievals(budgets)}  # one run per budget
    answerer, judge = as_answerer(answerer), as_judge(judge)
    elsewhere = imported_rows(imported)  # checked before any work: each must be an imported, scored run
    answerer = replace(answerer, model=resolve_auto(answerer.model, DEFAULT_ANSWER_MODEL))
    protocol = judge.protocol if judge.active else None
    log = calls.log if calls else print
    outcomes: list[SystemOutcome] = []
    for entry in entries:
        outcome = SystemOutcome(entry)
        outcomes.append(outcome)
        log(f"== {entry.spec} ==")

        def config_run(budget: int, entry: Entry = entry) -> RunFolder:
            return resolve_run(run_config(sample, system=entry.system(), retrieval=wanted[budget], answerer=answerer))

        def run_one(budget: int, entry: Entry = entry):
            return run_all(sample, system=entry.system(), retrieval=wanted[budget], answerer=answerer, judge=judge,
                           calls=calls)

        try:
            if entry.name not in ("memworker", "claude-mem"):
                resolve(entry.name)  # its adapter and packages, before any work: a missing one says what to install
            outcome.runs = run_budgets(list(wanted), run_one=run_one, config_run=config_run, judge_protocol=protocol,
                                       log=log, sample=sample)
        except KeyboardInterrupt:
            raise
        except Exception as exc:
            outcome.error = f"{type(exc).__name__}: {exc}"
            log(f"{entry.spec} FAILED: {outcome.error}")
    rows = []
    for o in outcomes:
        for r in o.runs:
            label = run_label(r.run.manifest(), o.entry.name)
            if o.entry.worker_url != "embedded":
                label += f" at {o.entry.worker_url}"
            rows.append(measured_row(label, run=r.run, ok=r.ok))
    budget_list = list(wanted)
    folder = Path(out) if out else outputs_dir() / "leaderboards" / leaderboard_id(
        sample, entries=entries, answer_model=answerer.model, budgets=budget_list, judge_model=judge.model,
        limit=answerer.limit)
    paths = write_leaderboard(folder, rows=rows, outcomes=outcomes, sample=sample, answer_model=answerer.model,
                              judge_model=judge.model if judge.active else None, protocol=protocol,
                              budgets=budget_list, elsewhere=elsewhere)
    return LeaderboardResult(folder=folder, rows=rows, systems=outcomes, paths=paths,
                             ok=all(o.ok for o in outcomes) and bool(rows))


