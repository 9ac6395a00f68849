"""Accuracy against context, as a page: the points of the curve read back from the run folders (one run per
context budget), the figure (one panel per metric, budget on a log axis, one line per system), ``curve.md`` and
``curve.json``. The runs themselves are made by :mod:`locomo_kit.pipeline.budgets`; every point is a number the
run's own report holds."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Sequence

from locomo_kit.paths import write_atomic
from locomo_kit.reports.figures import save_figure
from locomo_kit.reports.numbers import num
from locomo_kit.reports.summary import summarize_run
from locomo_kit.runs import RunFolder, utc_now

CURVE_METRICS = (("evidence_recall", "evidence recall within the budget %"),
                 ("session_recall@5", "session recall@5 %"), ("locomo_f1", "official F1 %"),
                 ("mem0_f1", "Mem0 F1 %"))


def _mean_pct(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return 100 * sum(vals) / len(vals) if vals else None


def run_point(run: RunFolder, system: str | None = None) -> dict[str, Any]:
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
    points = [run_point(run, system) for system, run in runs]
    return sorted(points, key=lambda p: (p["system"], p["budget"] or 0))


def curve_figure(points: list[dict[str, Any]], path: Path, title: str) -> Path:
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


def curve_lines(points: list[dict[str, Any]]) -> list[str]:
    """The curve as a Markdown table: one row per system and budget."""
    js = [k for k in ("j_mem0", "j_strict", "j_playbook") if any(p.get(k) is not None for p in points)]
    header = ["system", "budget", "questions", "evidence recall %", "session R@5 %", "official F1 %", "Mem0 F1 %"]
    header += [k.replace("j_", "J ") for k in js] + ["context tokens", "run id"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for p in points:
        cells = [p["system"], num(p["budget"]), num(p["questions"]), num(p["evidence_recall"]),
                 num(p["session_recall@5"]), num(p["locomo_f1"]), num(p["mem0_f1"])]
        cells += [num(p.get(k)) for k in js] + [num(p["context_tokens"]), f"`{p['run_id']}`"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def write_curve(points: list[dict[str, Any]], folder: Path, title: str, notes: Sequence[str] = ()) -> dict[str, Path]:
    """``curve.md``, ``curve.json`` and ``curve.png`` in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    png = curve_figure(points, folder / "curve.png", title)
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
    write_atomic(folder / "curve.md", "\n".join(md))
    write_atomic(folder / "curve.json", json.dumps({"title": title, "points": points, "notes": list(notes)}, indent=2,
                                                   default=str))
    return {"markdown": folder / "curve.md", "json": folder / "curve.json", "figure": png}
