"""A measured leaderboard: every memory system on the same questions, answerer, context budget and judge.

``run_leaderboard(["memworker", "bm25", "dense"], sample="conv-26")`` runs each system through the whole
pipeline (:func:`locomo_kit.pipeline.stages.run_all`) once per context budget, reusing every run that is
already complete (:mod:`locomo_kit.pipeline.budgets`), with ``calls.jobs`` systems at once
(:mod:`locomo_kit.pipeline.parallel`), then writes the tables, figures and page under
``outputs/leaderboards/<id>/`` (:func:`locomo_kit.reports.leaderboard_page.write_leaderboard` says what each
file holds).

A system that fails (its package missing, its ingestion stopped, answers failed) does not stop the
others: it is listed as failed at the top of the table, and ``result.ok`` is False (the command exits 1).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from locomo_kit.llm import DEFAULT_ANSWER_MODEL, resolve_auto
from locomo_kit.llm.execute import CallSettings
from locomo_kit.paths import outputs_dir
from locomo_kit.pipeline.budgets import parse_budgets, run_budgets
from locomo_kit.pipeline.parallel import Job, Lines, check_jobs, default_jobs, job_calls, run_jobs, start_order
from locomo_kit.pipeline.stages import resolve_run, run_all, run_config
from locomo_kit.reports.imported_board import imported_judge, imported_rows
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


@dataclass(frozen=True)
class ImportedRuns:
    """The imported runs the page shows apart ("answered elsewhere, scored here"), and the one judge (a verdict set's
    name, as ``locomo-kit judges RUN`` lists it) their J is shown under, for every run that has it (None: every
    judge they share)."""

    runs: tuple[str, ...] = ()
    judge: str | None = None


@dataclass(frozen=True)
class BoardSettings:
    """What every system of one leaderboard runs with (the same for all; pickled to a parallel job)."""

    sample: str
    retrievals: tuple[Retrieval, ...]  # one run per retrieval (a context budget, or a top-k cap)
    answerer: Answerer
    judge: Judge
    calls: CallSettings | None = None


def run_system(entry: Entry, *, settings: BoardSettings, log: Callable[[str], None] = print) -> SystemOutcome:
    """Run (or reuse) one system at every budget; a failure is the outcome's ``error``, never raised
    (Ctrl-C is)."""
    s = settings
    wanted = {r.context_budget: r for r in s.retrievals}
    outcome = SystemOutcome(entry)
    protocol = s.judge.protocol if s.judge.active else None

    def config_run(budget: int) -> RunFolder:
        return resolve_run(run_config(s.sample, system=entry.system(), retrieval=wanted[budget], answerer=s.answerer))

    def run_one(budget: int):
        return run_all(s.sample, system=entry.system(), retrieval=wanted[budget], answerer=s.answerer, judge=s.judge,
                       calls=s.calls)

    try:
        if entry.name not in ("memworker", "claude-mem"):
            resolve(entry.name)  # its adapter and packages, before any work: a missing one says what to install
        outcome.runs = run_budgets(list(wanted), run_one=run_one, config_run=config_run, judge_protocol=protocol,
                                   log=log, sample=s.sample)
    except KeyboardInterrupt:
        raise
    except Exception as exc:
        outcome.error = f"{type(exc).__name__}: {exc}"
        log(f"{entry.spec} FAILED: {outcome.error}")
    return outcome


def system_job(entry: Entry, *, settings: BoardSettings, log: Callable[[str], None] = print) -> SystemOutcome:
    """:func:`run_system` in a parallel job's process: no progress bars (the console keeps one line per
    system), its lines to the job's ``log``, and only what the table needs sent back (each run's folder and
    verdict, not its results)."""
    calls = replace(settings.calls or CallSettings(), progress=False, log=log)
    # the job shares the cores with the others: the embedded Worker embeds on one thread, the same vectors for
    # about 11% less CPU beside another busy process (a user's own MEMWORKER_EMBED_THREADS wins)
    os.environ.setdefault("MEMWORKER_EMBED_THREADS", "1")
    outcome = run_system(entry, settings=replace(settings, calls=calls), log=log)
    for r in outcome.runs:
        r.result = None
    return outcome


def apart_systems(entries: Sequence[Entry], *, sample: str) -> set[str]:
    """The systems among ``entries`` that may split their conversations over processes on ``sample``."""
    several = sample == "all" or "," in sample
    return {e.name for e in entries if several and _apart(e.name)}


def _apart(name: str) -> bool:
    """Whether the system's conversations each have a store of their own (False where its adapter cannot load yet:
    its job says why)."""
    try:
        return bool(getattr(resolve(name), "conversations_apart", False))
    except Exception:
        return False


def each_job_settings(started: Sequence[Entry], *, settings: BoardSettings) -> list[BoardSettings]:
    """The settings of each job, in the order they start: only the last splits its conversations over the
    processes (``calls.jobs``); before it, a split would take a core another system waits for."""
    if settings.calls is None:
        return [settings for _ in started]
    alone = replace(settings, calls=replace(settings.calls, jobs=1))
    return [alone for _ in started[:-1]] + [settings for _ in started[-1:]]


def parallel_outcomes(entries: Sequence[Entry], *, settings: BoardSettings, jobs: int,
                      log: Callable[[str], None] = print) -> list[SystemOutcome]:
    """Every system in a process of its own, ``jobs`` at a time (:func:`~locomo_kit.pipeline.parallel.run_jobs`);
    the console's lines go to ``log`` when it is not ``print``."""
    calls = job_calls(settings.calls)
    if calls is not None:
        calls = replace(calls, log=print)  # the caller's own function may not pickle; each job gets its own
    settings = replace(settings, calls=calls)
    lines = Lines([e.spec for e in entries], log=None if log is print else log)
    apart = apart_systems(entries, sample=settings.sample)
    order = {name: i for i, name in enumerate(start_order([e.name for e in entries], apart=apart))}
    started = sorted(entries, key=lambda e: order[e.name])
    results = {res.name: res for res in run_jobs([
        Job(e.spec, call=system_job, kwargs={"entry": e, "settings": s})
        for e, s in zip(started, each_job_settings(started, settings=settings))], workers=jobs, lines=lines)}
    return [results[e.spec].value if isinstance(results[e.spec].value, SystemOutcome)
            else SystemOutcome(e, error=results[e.spec].error) for e in entries]


def imported_footing(rows: list[dict[str, Any]], *, judge: str | None) -> dict[str, Any] | None:
    """J of the imported runs under ``judge`` (:func:`~locomo_kit.reports.imported_board.imported_judge`), or a
    :class:`LeaderboardError` saying what to pass."""
    if judge is None:
        return None
    if not rows:
        raise LeaderboardError(f"--judge {judge!r} names the judge of the imported runs' section: pass the runs with "
                               "--imported RUN,…")
    try:
        return imported_judge(rows, judge)
    except ValueError as exc:
        raise LeaderboardError(f"--judge: {exc}") from None


def run_leaderboard(systems: str | Sequence[str], *, sample: str = "conv-26",
                    budgets: str | Sequence[int | Retrieval] | None = None, answerer: Answerer | str | None = None,
                    judge: Judge | str | None = None, imported: Sequence[str] | ImportedRuns = (),
                    out: str | Path | None = None,
                    calls: CallSettings | None = None) -> LeaderboardResult:
    """Run (or reuse) every system at every budget and write the leaderboard (see module doc).

    ``budgets``: context budgets (``"500,1000"``) or one :class:`~locomo_kit.settings.Retrieval` per run (a top-k
    cap); ``answerer`` and ``judge`` are the same for every system (``answerer.limit``: only the first N
    questions of each sample, runs of their own, as ``run --limit`` makes them); ``calls``: as
    :func:`~locomo_kit.pipeline.stages.run_all` takes them (its ``log`` says what is run), and ``calls.jobs``:
    how many systems run at once, each in a process of its own (:mod:`locomo_kit.pipeline.parallel`; None: the
    cores, capped by memory), with the same runs and records as one after another. ``imported``: run ids or
    folders, or an :class:`ImportedRuns` that also names the judge of their section (checked before any work).
    """

    entries = parse_systems(systems)
    wanted = {r.context_budget: r for r in retrievals(budgets)}  # one run per budget
    answerer, judge = as_answerer(answerer), as_judge(judge)
    chosen = imported if isinstance(imported, ImportedRuns) else ImportedRuns(tuple(imported))
    elsewhere = imported_rows(chosen.runs)  # checked before any work: each must be an imported, scored run
    footing = imported_footing(elsewhere, judge=chosen.judge)
    answerer = replace(answerer, model=resolve_auto(answerer.model, DEFAULT_ANSWER_MODEL))
    protocol = judge.protocol if judge.active else None
    log = calls.log if calls else print
    jobs = calls.jobs if calls else 1
    if jobs is None:
        jobs = default_jobs([e.name for e in entries], apart=apart_systems(entries, sample=sample))
    check_jobs(jobs)
    if calls is not None:
        calls = replace(calls, jobs=jobs)  # each system's conversations too, where they are apart
    settings = BoardSettings(sample=sample, retrievals=tuple(wanted.values()), answerer=answerer, judge=judge,
                             calls=calls)
    if jobs > 1 and len(entries) > 1:
        outcomes = parallel_outcomes(entries, settings=settings, jobs=jobs, log=log)
    else:
        outcomes = []
        for entry in entries:
            log(f"== {entry.spec} ==")
            outcomes.append(run_system(entry, settings=settings, log=log))
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
                              budgets=budget_list, elsewhere=elsewhere, imported_judge=footing)
    return LeaderboardResult(folder=folder, rows=rows, systems=outcomes, paths=paths,
                             ok=all(o.ok for o in outcomes) and bool(rows))


