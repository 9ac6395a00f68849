"""The leaderboard as tables, a figure and a page: every system on the same questions, answerer, context budget
and judge, read back from its run folders (the runs themselves are made by :mod:`locomo_kit.pipeline.leaderboard`).

:func:`write_leaderboard` writes under the leaderboard's folder:

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
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from locomo_kit.paths import write_atomic
from locomo_kit.reports.baselines import LOCOMO_F1, MEM0_F1, MEM0_J, MEM0_LATENCY, SESSION_RECALL_CLAIMS
from locomo_kit.reports.comparison import compare
from locomo_kit.reports.curve import curve_points, run_point, write_curve
from locomo_kit.reports.figures import save_figure
from locomo_kit.reports.html import render_markdown, render_page, write_html
from locomo_kit.reports.imported_board import imported_lines
from locomo_kit.reports.numbers import num, signed
from locomo_kit.reports.question_table import RunRef
from locomo_kit.reports.runs_explorer import CrossRuns, cross_runs, write_runs_page
from locomo_kit.reports.summary import summarize_run
from locomo_kit.runs import RunFolder, ingestion_folder, utc_now
from locomo_kit.runs.records import INGEST_FILE, run_problems

QUOTED = "quoted, not measured here"
PAIRED_METRICS = ("evidence_recall", "locomo_f1", "mem0_f1")
CSV_FIELDS = ["system", "status", "measured", "budget", "questions", "answerer", "evidence_recall", "traced", "recall@10",
              "session_recall@10", "session_recall@10_chance", "session_hit@5", "session_hit@5_chance",
              "sessions_retrieved", "locomo_f1", "mem0_f1", "j_mem0", "j_strict", "j_playbook", "ingest_s",
              "search_p50_ms", "search_p95_ms", "context_tokens", "run_id", "settings", "source", "note"]


def run_label(manifest: dict[str, Any], fallback: str) -> str:
    """``bm25 0.3.16``; with the system's own label of what it ran as, when it gives one
    (``mem0 2.2.1 (Mem0 without LLM extraction)``)."""
    ident = manifest.get("system") or manifest.get("worker") or {}
    name, version = ident.get("name") or fallback, ident.get("version")
    label = f"{name} {version}" if version else name
    own = (ident.get("settings") or {}).get("label")
    return f"{label} ({own})" if isinstance(own, str) and own else label


def switched_off(manifest: dict[str, Any]) -> list[str]:
    """What the system reports it switched off offline (its identity's ``switched_off_offline``)."""
    ident = manifest.get("system") or manifest.get("worker") or {}
    off = (ident.get("settings") or {}).get("switched_off_offline") or []
    return [str(x) for x in (off if isinstance(off, list) else [off])]


def ingest_seconds(run: RunFolder) -> float | None:
    """Seconds the run's ingestion took: the sum of its sessions' recorded times (latest record per session,
    since the latest reset), as measured when they were ingested."""

    ingestion_id = run.manifest().get("ingestion", {}).get("id")
    folder = ingestion_folder(ingestion_id) if ingestion_id else run
    latest: dict[tuple[str, int], float] = {}
    for r in folder.records(INGEST_FILE):
        if r.get("kind") == "reset":
            latest = {k: v for k, v in latest.items() if k[0] != r.get("sample_id")}
        elif r.get("kind", "session") == "session" and r.get("status") == "ok" and "session" in r:
            latest[(r["sample_id"], int(r["session"]))] = float(r.get("seconds") or 0.0)
    return sum(latest.values()) if latest else None


def measured_row(system: str, run: RunFolder, ok: bool) -> dict[str, Any]:
    """One leaderboard row (system × budget) read back from the run folder."""

    point = run_point(run, system)
    s = summarize_run(run)
    overall = next((r for r in s["diagnostics"] if r["category"] == "overall"), {})
    sessions = overall.get("sessions") or {}
    pct = lambda part, k: None if (sessions.get(part) or {}).get(k) is None else 100 * sessions[part][k]
    row = {"system": system, "status": "ok" if ok else "PARTIAL", "budget": point["budget"],
           "questions": point["questions"], "answerer": point["answerer"],
           "evidence_recall": point["evidence_recall"], "recall@10": overall.get("coverage@10"),
           "session_recall@10": pct("recall", "@10"), "session_recall@10_chance": pct("chance_recall", "@10"),
           "session_hit@5": pct("hit", "@5"), "session_hit@5_chance": pct("chance_hit", "@5"),
           "sessions_retrieved": sessions.get("sessions_retrieved"),
           "locomo_f1": point["locomo_f1"], "mem0_f1": point["mem0_f1"],
           **{k: v for k, v in point.items() if k.startswith("j_")},
           "ingest_s": ingest_seconds(run), "search_p50_ms": point["search_p50_ms"],
           "search_p95_ms": point["search_p95_ms"], "context_tokens": point["context_tokens"],
           "run_id": run.run_id, "measured": "measured here"}
    traced = s.get("trace") or {}
    row["traced"] = None if traced.get("share_placed") is None else 100 * traced["share_placed"]
    if row["evidence_recall"] is None and traced.get("retrieved") and not traced.get("share_placed"):
        row["evidence_recall_note"] = "not measured: no retrieved memory could be placed on a turn"
    if not ok:  # why it is not a result (a system that lost writes, an incomplete ingestion), beside the row
        row["note"] = "; ".join(run_problems(run)) or "a stage did not complete: see the run's report"
    ident = s["manifest"].get("system") or s["manifest"].get("worker") or {}
    row["settings"] = json.dumps(ident.get("settings") or {}, sort_keys=True, default=str)
    return row


def paired_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per budget: each system's paired difference against the first system's run (overall, categories 1-4)."""

    out = []
    for budget in sorted({r["budget"] or 0 for r in rows}):
        group = [r for r in rows if (r["budget"] or 0) == budget]
        if len(group) < 2:
            continue
        result = compare([r["run_id"] for r in group])
        for row in result["rows"]:
            if row["category"] != "overall" or row["unit"] != "points":
                continue
            for i, (r, c) in enumerate(zip(group[1:], row["comparisons"])):
                out.append({"budget": budget, "order": i, "system": r["system"], "baseline": group[0]["system"],
                            "metric": row["label"], "n": row["n"], "diff": c["diff"], "ci_low": c["ci_low"],
                            "ci_high": c["ci_high"], "mdd": c["mdd"], "verdict": c["verdict"]})
    return sorted(out, key=lambda p: (p["budget"], p["order"]))  # stable: each system's metrics together


def quoted_rows() -> list[dict[str, Any]]:
    """Published numbers beside the measured ones, each marked quoted and with its source."""

    rows: dict[str, dict[str, Any]] = {}

    def row(system: str, source: str) -> dict[str, Any]:
        return rows.setdefault(f"{system}|{source}", {"system": system, "measured": QUOTED, "source": source})

    for b in MEM0_J:
        row(b.system, b.source)["j_mem0"] = b.values.get("overall")
    for b in MEM0_F1:  # Mem0 F1 is published per category only
        r = row(b.system, b.source)
        r["mem0_f1_by_category"] = {str(k): v for k, v in b.values.items()}
    for lat in MEM0_LATENCY:
        r = row(lat["system"], next(b.source for b in MEM0_J))
        r.update({"search_p50_ms": None if lat["search_p50"] is None else 1000 * lat["search_p50"],
                  "search_p95_ms": None if lat["search_p95"] is None else 1000 * lat["search_p95"],
                  "context_tokens": lat["tokens"]})
    for b in LOCOMO_F1:
        row(b.system, b.source).update({"locomo_f1": b.values["overall"], "note": b.note})
    for c in SESSION_RECALL_CLAIMS:
        r = row(c.system, c.source)
        r.update({k: v for k, v in c.values.items()})
        r["note"] = c.note
    return list(rows.values())


MEASURED_COLUMNS = [("system", "system"), ("budget", "context budget"), ("evidence_recall", "evidence recall within budget %"),
                    ("traced", "retrieved traced to turns %"),
                    ("recall@10", "recall@10 %"), ("session_recall@10", "session R@10 % (chance)"),
                    ("session_hit@5", "session hit@5 % (chance)"), ("sessions_retrieved", "sessions retrieved"),
                    ("locomo_f1", "official F1 %"),
                    ("mem0_f1", "Mem0 F1 %")]
TAIL_COLUMNS = [("ingest_s", "ingest s"), ("search_p50_ms", "search p50 ms"), ("search_p95_ms", "search p95 ms"),
                ("context_tokens", "context tokens")]


def j_columns(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The J columns some row has, labelled with their scale."""
    return [(k, f"J {k[2:]}" + (" (0-100)" if k == "j_playbook" else " %")) for k in ("j_mem0", "j_strict", "j_playbook")
            if any(r.get(k) is not None for r in rows)]


def leaderboard_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The measured table: one row per system and budget."""
    cols = MEASURED_COLUMNS + j_columns(rows) + TAIL_COLUMNS
    lines = ["| " + " | ".join(label for _, label in cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = []
        for key, _ in cols:
            if key == "system":
                cells.append(r["system"] + ("" if r["status"] == "ok" else f" (**{r['status']}**"
                                            + (f": {r['note']}" if r.get("note") else "") + ")"))
            elif key == "evidence_recall" and r.get("evidence_recall_note"):
                cells.append("not measured")
            elif key in ("session_recall@10", "session_hit@5"):
                cells.append(f"{num(r[key])} ({num(r[key + '_chance'])})")
            elif key == "search_p50_ms" or key == "search_p95_ms":
                cells.append(num(r.get(key), 2))
            elif key == "context_tokens" or key == "ingest_s":
                cells.append(num(r.get(key), 0 if key == "context_tokens" else 1))
            else:
                cells.append(num(r.get(key)))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def paired_lines(paired: list[dict[str, Any]]) -> list[str]:
    if not paired:
        return ["Only one system has results: no paired difference to show.", ""]
    lines = ["| budget | system | against | metric | n | difference [95% CI] | MDD | verdict |", "|---|---|---|---|---|---|---|---|"]
    for p in paired:
        lines.append(f"| {num(p['budget'])} | {p['system']} | {p['baseline']} | {p['metric']} | {num(p['n'])} | "
                     f"{signed(p['diff'])} [{signed(p['ci_low'])}, {signed(p['ci_high'])}] | {num(p['mdd'])} | "
                     f"{p['verdict']} |")
    return lines + [""]


def quoted_lines(quoted: list[dict[str, Any]]) -> list[str]:
    lines = ["| system | J mem0 % | official F1 % | Mem0 F1 % by category (1/2/3/4) | session R@10 % | session hit@5 % | "
             "search p50 ms | search p95 ms | context tokens | source |", "|---|---|---|---|---|---|---|---|---|---|"]
    for q in quoted:
        by_cat = q.get("mem0_f1_by_category")
        cats = "/".join(num(by_cat.get(str(c)), 2) for c in (1, 2, 3, 4)) if by_cat else "–"
        note = f" ({q['note']})" if q.get("note") else ""
        lines.append(f"| {q['system']} ({QUOTED}) | {num(q.get('j_mem0'), 2)} | {num(q.get('locomo_f1'))} | {cats} | "
                     f"{num(q.get('session_recall@10'))} | {num(q.get('session_hit@5'))} | {num(q.get('search_p50_ms'), 0)} | "
                     f"{num(q.get('search_p95_ms'), 0)} | {num(q.get('context_tokens'), 0)} | {q['source']}{note} |")
    return lines + [""]


def leaderboard_figure(rows: list[dict[str, Any]], path: Path, title: str) -> Path:
    """Grouped bars per budget: each system's evidence recall, session R@10, official F1, Mem0 F1 (and J)."""
    import matplotlib  # deferred: a heavy import

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: a heavy import

    metrics = [("evidence_recall", "evidence recall\nwithin budget"), ("session_recall@10", "session R@10"),
               ("locomo_f1", "official F1"), ("mem0_f1", "Mem0 F1")]
    metrics += [(k, label.replace(" %", "")) for k, label in j_columns(rows)]
    budgets = sorted({r["budget"] or 0 for r in rows})
    fig, axes = plt.subplots(1, len(budgets), figsize=(max(6.5, 1.4 * len(metrics) * 1.6) * len(budgets) ** 0.5 + 2,
                                                       4.2), squeeze=False)
    for ax, budget in zip(axes[0], budgets):
        group = [r for r in rows if (r["budget"] or 0) == budget]
        width = 0.8 / max(1, len(group))
        x = np.arange(len(metrics))
        for i, r in enumerate(group):
            vals = [r.get(k) if r.get(k) is not None else 0 for k, _ in metrics]
            ax.bar(x + i * width - 0.4 + width / 2, vals, width, label=r["system"], edgecolor="black", linewidth=0.4)
        chance = [r.get("session_recall@10_chance") for r in group]
        if chance and chance[0] is not None:
            ax.hlines(chance[0], 1 - 0.4, 1 + 0.4, colors="black", linestyles="dashed", label="session R@10 chance")
        ax.set_xticks(x, [label for _, label in metrics], fontsize=8)
        ax.set_ylim(0, 100)
        ax.set_ylabel("%")
        ax.set_title(f"context budget {budget:,} tokens" if budget else "top-k", fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].legend(fontsize=7, loc="upper right")
    fig.suptitle(title, fontsize=10)
    return save_figure(fig, path, dpi=120)


def questions_across(rows: list[dict[str, Any]], folder: Path) -> CrossRuns | None:
    """The question explorer across the rows' runs (:mod:`locomo_kit.reports.runs_explorer`) with the flips of
    every two systems at the same budget; None with fewer than two runs."""
    if len(rows) < 2:
        return None
    several = len({r["budget"] for r in rows}) > 1
    refs = [RunRef(f"{r['system']} @ {r['budget'] or 0:,}" if several else r["system"], RunFolder(r["run_id"]),
                   r["system"], r["budget"]) for r in rows]
    pairs = [(i, j) for i in range(len(rows)) for j in range(i + 1, len(rows)) if rows[i]["budget"] == rows[j]["budget"]]
    return cross_runs(refs, folder, pairs)


def leaderboard_html(markdown: Path, title: str) -> Path:
    """``report.html`` beside ``leaderboard.md``: the same sections in the kit's self-contained page shell."""

    body = render_markdown(markdown.read_text(encoding="utf-8"), markdown.parent)
    return write_html(markdown.parent / "report.html", render_page(title, body, None, kind="compare"))


def failure_lines(outcomes: Sequence[Any], rows: list[dict[str, Any]]) -> list[str]:
    """The banners at the top: which systems failed or are partial (and why), or that nothing was measured."""
    failed = [o for o in outcomes if not o.ok]
    md = []
    if failed:
        md += ["> **Not every system has a complete result:** " + "; ".join(
            f"**{o.entry.spec}** " + (f"failed ({o.error})" if o.error else
                                      "is partial (" + ", ".join(f"budget {r.budget:,}: "
                                                                  + "".join(f"{p}; " for p in r.problems)
                                                                  + f"see {r.run.run_id}'s report"
                                                                  for r in o.runs if not r.ok) + ")")
            for o in failed) + ". Their rows are missing or marked PARTIAL; fix the cause and rerun the same command "
            "(what is done is reused).", ""]
    if not rows:
        md += ["> **No system produced a result: nothing below is measured.**", ""]
    return md


def footing_lines(rows: list[dict[str, Any]], *, sample: str, answer_model: str, judge_model: str | None,
                  protocol: str | None, budgets: Sequence[int]) -> list[str]:
    """What every system shared: the questions, the answerer, the budgets and the judge."""
    questions = sorted({r["questions"] for r in rows})
    md = [f"Written {utc_now()}. Every system answered the same questions ({', '.join(map(str, questions)) or '–'} "
          f"per run, categories 1-4, sample {sample}) with the same answerer ({answer_model}), the same context "
          f"budget{'s' if len(budgets) > 1 else ''} ({', '.join(f'{b:,}' for b in sorted(budgets))} tokens, characters/4, "
          "results cut best first when a system has no budget of its own) and "
          + (f"the same judge ({judge_model}, {protocol} protocol)." if judge_model else "no judge (F1 only).")
          + " Each row is one run (its own report under outputs/runs/).", ""]
    if answer_model == "extractive":
        md += ["> Answered by the **extractive floor** (rules, no LLM): F1 measures the pipeline, not what an LLM "
               "answerer would make of the context. The retrieval columns do not depend on the answerer.", ""]
    return md


def systems_lines(outcomes: Sequence[Any]) -> list[str]:
    """Each system with its identity as it reported it, and its runs (or why it failed)."""
    md = ["## Systems", "", "Each system with its identity as it reported it (name, version, the settings that change "
          "what it stores or finds), and its runs.", ""]
    for o in outcomes:
        if o.error:
            md.append(f"- **{o.entry.spec}**: FAILED: {o.error}")
        if o.runs:
            m = o.runs[0].run.manifest()
            ident = m.get("system") or m.get("worker") or {}
            runs = ", ".join(f"`{r.run.run_id}`" + (" (reused)" if r.reused else "") for r in o.runs)
            off = switched_off(m)
            md.append(f"- **{run_label(m, o.entry.name)}** ({ident.get('url') or o.entry.worker_url}): runs {runs}; "
                      + (f"switched off offline: {'; '.join(off)}; " if off else "")
                      + f"settings `{json.dumps(ident.get('settings') or {}, sort_keys=True, default=str)}`")
    return md + [""]


def csv_text(rows: list[dict[str, Any]], outcomes: Sequence[Any], quoted: list[dict[str, Any]]) -> str:
    """``leaderboard.csv``: the measured rows, the failed systems, the quoted rows."""
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=CSV_FIELDS, extrasaction="ignore")
    writer.writeheader()
    for r in rows:
        writer.writerow(r)
    for o in outcomes:
        if o.error:
            writer.writerow({"system": o.entry.spec, "status": "FAILED", "note": o.error})
    for q in quoted:
        writer.writerow({**q, "status": "quoted"})
    return text.getvalue()


def write_leaderboard(folder: Path, *, rows: list[dict[str, Any]], outcomes: Sequence[Any], sample: str,
                      answer_model: str, judge_model: str | None, protocol: str | None,
                      budgets: Sequence[int], elsewhere: Sequence[dict[str, Any]] = (),
                      imported_judge: dict[str, Any] | None = None) -> dict[str, Path]:
    """``leaderboard.md``, ``.csv``, ``.json``, ``.png``, ``report.html`` (and ``curve.*`` with several budgets) in
    ``folder``. ``outcomes``: one per system, in order, as :class:`locomo_kit.pipeline.leaderboard.SystemOutcome`
    holds it (``entry``, ``runs``, ``error``, ``ok``); ``imported_judge``: the one judge the imported runs' J is
    shown under (:func:`~locomo_kit.reports.imported_board.imported_judge`), else every judge they share."""
    folder.mkdir(parents=True, exist_ok=True)
    paired = paired_rows(rows) if rows else []
    quoted = quoted_rows()
    title = f"LoCoMo leaderboard: {sample}, answered by {answer_model}" + (f", judged by {judge_model}" if judge_model else "")
    md = [f"# {title}", ""] + failure_lines(outcomes, rows)
    md += footing_lines(rows, sample=sample, answer_model=answer_model, judge_model=judge_model, protocol=protocol,
                        budgets=budgets)
    md += ["## Measured here", ""] + leaderboard_lines(rows) + [""]
    md += ["Evidence recall within budget: share of a question's evidence turns in the context the answerer saw "
           "(not measured where no retrieved memory could be placed on a turn); traced: share of the retrieved "
           "memories placed on LoCoMo turns, by turn ids from the system or by the 80% text rule; "
           "recall@10: among the first 10 results (spans for a system that packs its own budget); session R@10 and "
           "hit@5: over the first k distinct sessions retrieved, with the chance level for the conversation's session "
           "count in parentheses (k sessions drawn at random: min(k, N)/N; 1 - C(N-e, k)/C(N, k)). Ingest s: the sum "
           "of the sessions' ingestion times as recorded when ingested; search latency as seen by the kit.", ""]
    md += ["## Paired differences against the first system", "",
           "Over the questions both runs answered; paired bootstrap 95% interval (locomo_kit.reports.comparison); MDD: the "
           "smallest difference this many questions detects with 80% power.", ""] + paired_lines(paired)
    md += imported_lines(list(elsewhere),  # imported runs: their own section, never paired with the rows above
                         judge=imported_judge["name"] if imported_judge else None)
    md += [f"## Published ({QUOTED})", "",
           "Other harnesses, other answerers (gpt-4o-mini), judges, retrieval depths and question mixes: set beside "
           "the table for orientation only, never compared with it.", ""] + quoted_lines(quoted)
    md += systems_lines(outcomes)
    across = questions_across(rows, folder)
    if across:
        md += across.lines
    png = leaderboard_figure(rows, folder / "leaderboard.png", title) if rows else None
    paths: dict[str, Path] = {"markdown": folder / "leaderboard.md", "csv": folder / "leaderboard.csv",
                              "json": folder / "leaderboard.json"}
    if png:
        paths["figure"] = png
        md += ["![leaderboard](leaderboard.png)", ""]
    if len(budgets) > 1 and rows:
        curve = write_curve(curve_points([(r["system"], RunFolder(r["run_id"])) for r in rows]), folder,
                            f"Accuracy against context: {sample}, {answer_model}")
        paths["curve"] = curve["figure"]
        md += ["## Accuracy against context", "", "![accuracy against context](curve.png)", ""]
    write_atomic(paths["markdown"], "\n".join(md))
    if across:
        paths["questions_figure"] = across.figure
        paths["html"] = write_runs_page(paths["markdown"], folder / "report.html", title, across.table)
    else:
        paths["html"] = leaderboard_html(paths["markdown"], title)
    write_atomic(paths["csv"], csv_text(rows, outcomes, quoted))
    write_atomic(paths["json"], json.dumps({"title": title, "sample": sample, "answerer": answer_model,
                                         "judge": judge_model, "protocol": protocol, "budgets": list(budgets),
                                         "rows": rows, "paired": paired, "quoted": quoted,
                                         "answered_elsewhere": [{k: v for k, v in r.items() if k not in ("question_set", "path")}
                                                                for r in elsewhere],
                                         "imported_judge": imported_judge,
                                         "flips": across.flips if across else [],
                                         "flip_basis": across.table["basis"] if across else None,
                                         "failed": [{"system": o.entry.spec, "error": o.error}
                                                    for o in outcomes if not o.ok]},
                                        indent=2, default=str))
    return paths
