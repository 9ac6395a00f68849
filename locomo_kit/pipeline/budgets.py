"""Accuracy against context: one run per context budget, then recall (and F1 / J when answered) per budget.

``--context-budget 250,500,1000,2000`` on ``run`` (and ``leaderboard``) makes one run per budget:
each budget is its own configuration with its own run id, exactly as a single ``--context-budget``
makes it. A budget whose run is already complete (answered, scored, reported, judged when a judge is
asked for, every recorded outcome ok) is not run again; an incomplete one resumes as any rerun does.
The points of the curve are read back from the run folders (:func:`curve_points`), so the curve
never holds a number that a run's own report does not.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from locomo_kit.pipeline.stages import run_report, run_score
from locomo_kit.reports.figures import save_figure
from locomo_kit.reports.pending import pending_calls
from locomo_kit.reports.summary import summarize_run
from locomo_kit.runs import RunFolder, run_problems, utc_now
from locomo_kit.runs.records import SCORES_FILE

CURVE_METRICS = (("evidence_recall", "evidence recall within the budget %"),
                 ("session_recall@5", "session recall@5 %"), ("locomo_f1", "official F1 %"),
                 ("mem0_f1", "Mem0 F1 %"))


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


def _mean_pct(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return 100 * sum(vals) / len(vals) if vals else None


def run_point(run: RunFolder, *, system: str | None = None) -> dict[str, Any]:
    """One point of the curve from one run folder: its budget and its overall figures (categories 1-4)."""

    s = summarize_run(run)
    m = s["manifest"]
    overall = {r["category"]: r for r in s["diagnostics"]}.get("overall", {})
    sessions = overall.get("sessions") or {}
    f1 = {r["category"]: r for r in s["locomo_f1"]}["overall"]
    scored = [x for x in s["_scores"] if x["category"] != 5]
    point: dict[str, Any] = {
        "system": system or m.get("worker", {}).get("name") or "?",
        "budget": m.get("answer", {}).get("context_budget"), "run_id": run.run_id, "questions": s["questions"],
        "answerer": s["answerer"], "evidence_recall": overall.get("recall_all"),
        "session_recall@5": None if (sessions.get("recall") or {}).get("@5") is None else 100 * sessions["recall"]["@5"],
        "locomo_f1": f1["mean"], "locomo_f1_ci": [f1["ci_low"], f1["ci_high"]],
        "mem0_f1": _mean_pct([x["mem0_f1"] for x in scored]),
        "context_tokens": s["tokens_per_question"]["context_tokens"],
        "search_p50_ms": s["latency_ms"]["search"]["p50"], "search_p95_ms": s["latency_ms"]["search"]["p95"],
    }
    for protocol in ("mem0", "strict", "playbook"):
        rows = {r["category"]: r for r in s["judge"].get(protocol) or []}
        if "overall" in rows:
            point[f"j_{protocol}"] = rows["overall"]["mean"]
    return point


def curve_points(runs: Sequence[tuple[str | None, RunFolder]]) -> list[dict[str, Any]]:
    """Points for ``(system label, run folder)`` pairs, sorted by system then budget."""
    points = [run_point(run, system=system) for system, run in runs]
    return sorted(points, key=lambda p: (p["system"], p["budget"] or 0))


def curve_figure(points: list[dict[str, Any]], *, path: Path, title: str) -> Path:
    """One panel per metric (recall, session recall, F1, Mem0 F1, J when judged), budget on a log axis,
    one line per system."""
    import matplotlib  # deferred: a heavy import

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: a heavy import

    metrics = [(k, label) for k, label in CURVE_METRICS if any(p.get(k) is not None for p in points)]
    metrics += [(f"j_{p}", f"J {p}" + (" (0-100)" if p == "playbook" else " %")) for p in ("mem0", "strict", "playbook")
                if any(q.get(f"j_{p}") is not None for q in points)]
    systems = list(dict.fromkeys(p["system"] for p in points))
    # the legend sits below the panels, never over a line; a colour and a marker per system tell ten apart
    ncol = max(1, min(len(systems), int(3.4 * len(metrics) // 3.2)))
    legend_in = 0.3 + 0.2 * math.ceil(len(systems) / ncol)
    fig, axes = plt.subplots(1, len(metrics), figsize=(3.4 * len(metrics), 3.4 + legend_in), squeeze=False)
    colors = plt.get_cmap("tab10").colors
    markers = "osD^vP*Xph"
    for ax, (key, label) in zip(axes[0], metrics):
        for n, system in enumerate(systems):
            pts = [(p["budget"], p[key]) for p in points if p["system"] == system and p.get(key) is not None
                   and p["budget"]]
            if pts:
                xs, ys = zip(*sorted(pts))
                ax.plot(xs, ys, marker=markers[n % len(markers)], color=colors[n % len(colors)], label=system,
                        markersize=5, lw=1.2, alpha=0.9)
        ax.set_ylim(0, 100)  # every panel is a 0-100 scale: no axis stretches a small difference
        ax.set_xscale("log")
        budgets = sorted({p["budget"] for p in points if p["budget"]})
        ax.set_xticks(budgets, [f"{b:,}" for b in budgets], fontsize=7)
        ax.minorticks_off()
        ax.set_xlabel("context budget (tokens)", fontsize=8)
        ax.set_title(label, fontsize=9)
        ax.grid(alpha=0.3)
    legend: dict[str, Any] = {}
    for ax in axes[0]:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(label, handle)
    fig.legend(list(legend.values()), list(legend), loc="lower center", ncol=ncol, fontsize=7, frameon=False)
    fig.suptitle(title, fontsize=10)
    return save_figure(fig, path, dpi=110, rect=(0, legend_in / fig.get_figheight(), 1, 1))


def _cell(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:.1f}" if isinstance(v, float) else f"{v:,}" if isinstance(v, int) else str(v)


def curve_lines(points: list[dict[str, Any]]) -> list[str]:
    """The curve as a Markdown table: one row per system and budget."""
    js = [k for k in ("j_mem0", "j_strict", "j_playbook") if any(p.get(k) is not None for p in points)]
    header = ["system", "budget", "questions", "evidence recall %", "session R@5 %", "official F1 %", "Mem0 F1 %"]
    header += [k.replace("j_", "J ") for k in js] + ["context tokens", "run id"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for p in points:
        cells = [p["system"], _cell(p["budget"]), _cell(p["questions"]), _cell(p["evidence_recall"]),
                 _cell(p["session_recall@5"]), _cell(p["locomo_f1"]), _cell(p["mem0_f1"])]
        cells += [_cell(p.get(k)) for k in js] + [_cell(p["context_tokens"]), f"`{p['run_id']}`"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def write_curve(points: list[dict[str, Any]], *, folder: Path, title: str, notes: Sequence[str] = ()) -> dict[str, Path]:
    """``curve.md``, ``curve.json`` and ``curve.png`` in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    png = curve_figure(points, path=folder / "curve.png", title=title)
    answerers = sorted({p["answerer"] for p in points})
    md = [f"# {title}", "", f"Written {utc_now()}. One run per budget (each its own configuration and run id); "
          f"answered by {', '.join(answerers)}. Figures over categories 1-4 of each run; evidence recall is the "
          "share of a question's evidence turns within the context the answerer saw; session R@5 the share of its "
          "evidence sessions among the first 5 distinct sessions retrieved.", ""]
    if "extractive" in answerers:
        notes = [*notes, "The **extractive floor** (rules, no LLM) answered: its F1 measures the pipeline, not "
                 "what an LLM answerer would make of the context; the recall columns do not depend on the answerer."]
    md += [f"> {n}" for n in notes] + ([""] if notes else [])
    md += curve_lines(points) + ["", f"![accuracy against context]({png.name})", ""]
    (folder / "curve.md").write_text("\n".join(md), encoding="utf-8")
    (folder / "curve.json").write_text(json.dumps({"title": title, "points": points, "notes": list(notes)}, indent=2,
                                                  default=str), encoding="utf-8")
    return {"markdown": folder / "curve.md", "json": folder / "curve.json", "figure": png}
