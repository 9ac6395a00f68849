"""A measured leaderboard: every memory system on the same questions, answerer, context budget and judge.

``run_leaderboard(["memworker", "bm25", "dense"], "conv-26")`` runs each system through the whole
pipeline (:func:`locomo_kit.pipeline.stages.run_all`) once per context budget, reusing every run that is
already complete (:mod:`locomo_kit.pipeline.budgets`), then writes its tables, figures and page under
``outputs/leaderboards/<id>/`` (:func:`locomo_kit.reports.leaderboard_page.write_leaderboard`).

A system that fails (its package missing, its ingestion stopped, answers failed) does not stop the
others: it is listed as failed at the top of the table, and ``result.ok`` is False (the command exits 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from locomo_kit.llm import DEFAULT_ANSWER_MODEL, resolve_auto
from locomo_kit.paths import outputs_dir
from locomo_kit.pipeline.budgets import parse_budgets, run_budgets
from locomo_kit.pipeline.stages import resolve_run, retrieval, run_all, run_config
from locomo_kit.reports.imported_board import imported_rows
from locomo_kit.reports.leaderboard_page import measured_row, run_label, write_leaderboard
from locomo_kit.runs import RunFolder, slug
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

    def run_kwargs(self) -> dict[str, Any]:
        """What :func:`~locomo_kit.pipeline.stages.run_all` / ``run_config`` need to run this system."""
        if self.name == "memworker":
            return {"worker_url": self.worker_url}
        if self.name == "claude-mem":  # a Worker URL other than embedded means claude-mem
            return {"worker_url": self.worker_url}
        return {"worker_url": "embedded", "system": self.name}


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
        entry = Entry(name, url.strip() or "embedded")
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


def leaderboard_id(sample: str, entries: Sequence[Entry], answer_model: str, budgets: Sequence[int],
                   judge_model: str | None, limit: int | None = None) -> str:
    names = "-".join(e.name for e in entries)
    judge = f"-j{judge_model.split('/')[-1]}" if judge_model else ""
    first = f"-q{limit}" if limit else ""
    return slug(f"{sample}{first}-{answer_model.split('/')[-1]}-b{'-'.join(str(b) for b in sorted(budgets))}"
                f"{judge}-{names}")


def run_leaderboard(systems: str | Sequence[str], sample: str = "conv-26", budgets: str | Sequence[int] | None = None,
                    answer_model: str = "extractive", judge_model: str | None = None, judge_protocol: str = "playbook",
                    top_k: int | None = None, out: str | Path | None = None, log: Callable[[str], None] = print,
                    imported: Sequence[str] = (), limit: int | None = None, **run_options: Any) -> LeaderboardResult:
    """Run (or reuse) every system at every budget and write the leaderboard (see module doc); ``limit``: only
    the first N questions of each sample (runs of their own, as ``run --limit`` makes them).

    ``run_options`` go to :func:`~locomo_kit.pipeline.stages.run_all` unchanged (``judge_runs``, ``llm_base_url``,
    ``judge_base_url``, ``calls``, ``timeout``, ``progress``, ``dataset_path`` …): the same for every system.
    """

    entries = parse_systems(systems)
    budgets = parse_budgets(budgets) or [1000]
    elsewhere = imported_rows(imported)  # checked before any work: each must be an imported, scored run
    answer_model = resolve_auto(answer_model, DEFAULT_ANSWER_MODEL)
    protocol = judge_protocol if judge_model else None
    outcomes: list[SystemOutcome] = []
    dataset_path = run_options.get("dataset_path")
    for entry in entries:
        outcome = SystemOutcome(entry)
        outcomes.append(outcome)
        log(f"== {entry.spec} ==")

        def config_run(budget: int, entry: Entry = entry) -> RunFolder:
            k, b = retrieval(top_k, budget)
            return resolve_run(run_config(sample, answer_model=answer_model, top_k=k, context_budget=b, limit=limit,
                                          **entry.run_kwargs()))

        def run_one(budget: int, entry: Entry = entry):
            k, b = retrieval(top_k, budget)
            return run_all(sample, answer_model=answer_model, judge_model=judge_model, judge_protocol=judge_protocol,
                           top_k=k, context_budget=b, log=log, limit=limit, **entry.run_kwargs(), **run_options)

        try:
            if entry.name not in ("memworker", "claude-mem"):
                resolve(entry.name)  # its adapter and packages, before any work: a missing one says what to install
            outcome.runs = run_budgets(budgets, run_one, config_run, protocol, log, sample, dataset_path)
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
            rows.append(measured_row(label, r.run, r.ok))
    folder = Path(out) if out else outputs_dir() / "leaderboards" / leaderboard_id(sample, entries, answer_model,
                                                                                  budgets, judge_model, limit)
    paths = write_leaderboard(folder, rows=rows, outcomes=outcomes, sample=sample, answer_model=answer_model,
                              judge_model=judge_model, protocol=protocol, budgets=budgets, elsewhere=elsewhere)
    return LeaderboardResult(folder, rows, outcomes, paths, all(o.ok for o in outcomes) and bool(rows))
