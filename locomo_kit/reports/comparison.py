"""Compare runs question by question: are two configurations distinguishable on this sample?

Reads run folders generically (``manifest.json``, ``answers.jsonl``, ``scores.jsonl``,
``judgements.jsonl``; never the Worker). Over the questions every run answered (categories 1-4),
each metric is taken per question, and each run is compared with the first one (the baseline):

- the paired difference of means (run − baseline) with a **paired bootstrap** 95% interval
  (questions resampled with the same indices for both runs; 2,000 resamples, fixed seed);
- the **minimal detectable difference** (MDD): the smallest true difference this many questions
  would detect with 80% power at a two-sided 5% level, ``(z₀.₉₇₅ + z₀.₈) · sd(diff) / √n``, from
  the observed spread of the paired differences (so it is small when two runs answer alike);
- a verdict: *distinguishable* when the interval excludes 0, else *not distinguishable*.

J is compared only between runs judged by the same protocol, judge model and prompt version.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from locomo_kit.costs import cost
from locomo_kit.dataset import CATEGORY_NAMES
from locomo_kit.imported.identity import coverage_lines, coverage_notes, imported_coverage
from locomo_kit.reports.figures import save_figure
from locomo_kit.reports.judges import shared_judges_lines
from locomo_kit.reports.numbers import num, signed, signed_interval
from locomo_kit.reports.question_records import run_questions
from locomo_kit.reports.question_table import RunRef
from locomo_kit.reports.runs_explorer import cross_runs, write_runs_page
from locomo_kit.reports.system_facts import system_label
from locomo_kit.runs import RunFolder, known_runs, runs_root
from locomo_kit.scoring.aggregate import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, paired_bootstrap
from locomo_kit.scoring.judge import SENTINEL

Z_ALPHA, Z_POWER = 1.959963984540054, 0.8416212335729143  # two-sided 5%, 80% power
CATEGORIES = (1, 2, 3, 4)


class CompareError(RuntimeError):
    """Runs that cannot be compared (missing, unscored, or sharing no question)."""


@dataclass(frozen=True)
class Metric:
    name: str  # key in the per-question table
    label: str
    unit: str  # "points" (0-100 scale) or the unit of a resource
    higher_is_better: bool = True


QUALITY = (Metric("locomo_f1", "official F1 %", "points"), Metric("mem0_f1", "Mem0 F1 %", "points"),
           Metric("evidence_recall", "evidence recall %", "points"))
RESOURCES = (Metric("latency_s", "latency s (search + answer)", "s", False),
             Metric("tokens", "tokens (input + output)", "tokens", False),
             Metric("cost_usd", "cost $ per question", "$", False))


@dataclass
class RunData:
    run_id: str
    path: Path
    label: str
    config: dict[str, Any]
    per_question: dict[tuple[str, int], dict[str, float | None]] = field(default_factory=dict)
    judges: dict[str, tuple] = field(default_factory=dict)  # "J protocol" column -> (protocol, model, prompt, runs)


def parse_runs(value: str | Sequence[str]) -> list[str]:
    """Runs as a notebook parameter gives them: a list, or (``papermill -p runs '[…]'``) its JSON text,
    or a comma-separated string."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                return [str(v) for v in json.loads(text)]
            except json.JSONDecodeError as exc:
                raise CompareError(f"runs {value!r} is not a JSON list of run ids: {exc}") from None
        return [v.strip() for v in text.split(",") if v.strip()]
    return [str(v) for v in value]


def find_run(run: str | Path) -> RunFolder:
    """A run id under ``outputs/runs`` or a path to a run folder."""
    p = Path(run)
    if (p / "manifest.json").is_file():
        return RunFolder(p.name, root=p.parent)
    folder = RunFolder(str(run))
    if folder.exists():
        return folder
    known = known_runs()
    hint = f" Known runs: {', '.join(known[:12])}" if known else ""
    raise CompareError(f"No run folder {run!r} (neither a path with a manifest.json nor a run id under {runs_root()}).{hint}")


def _label(manifest: dict, answers: list[dict], run_id: str) -> str:
    a = answers[0]

    worker = system_label(manifest)
    if a.get("source") == "oracle":
        retrieval = "oracle: gold evidence turns only"
    elif a.get("source") not in (None, "memory"):
        retrieval = "full conversation"
    elif a.get("context_budget"):
        retrieval = f"context budget {a['context_budget']:,} tokens (≤ {a.get('top_k')} results)"
    else:
        retrieval = f"top_k {a.get('top_k')}"
    return f"{run_id} ({worker}, {retrieval}, {a.get('answerer_label', a.get('answerer'))})"


def load_run(run: str | Path, gold: str = "original") -> RunData:
    """Per-question metrics of a run's latest answer configuration under the gold key ``gold``
    (``original`` or ``audited``: the audit's answers, evidence ids and re-judged questions)."""

    if gold not in ("original", "audited"):
        raise CompareError(f"gold must be original or audited, got {gold!r}")
    folder = find_run(run)
    read = run_questions(folder)  # the one read of a run's questions (the export and the explorers use it too)
    if not read.questions:
        raise CompareError(f"{folder.path}: no answers to compare")
    answers = [q.answer for q in read.questions]
    key = read.config_key
    missing = [q for q in read.questions if gold not in q.scores]
    if missing:
        how = "`locomo-kit score --gold both`" if gold == "audited" else "`locomo-kit score`"
        raise CompareError(f"{folder.path}: {len(missing)} of {len(answers)} answers are not scored under the {gold} "
                           f"gold key: run {how} on it first")
    manifest = read.manifest
    data = RunData(folder.run_id, folder.path, _label(manifest, answers, folder.run_id),
                   {"config_key": key, "answerer": answers[0].get("answerer"), "top_k": answers[0].get("top_k"),
                    "context_budget": answers[0].get("context_budget"),
                    "source": answers[0].get("source"), "worker": manifest.get("worker", {}),
                    "parameters": manifest.get("parameters", {}),
                    "imported": imported_coverage(manifest)})
    for question in read.questions:
        a, q = question.answer, question.key
        if int(a["category"]) == 5:
            continue
        s = question.scores[gold]
        recall = _recall(s)
        tokens = (a.get("input_tokens") or 0) + (a.get("output_tokens") or 0)
        usd = cost(a["answerer"], a.get("input_tokens") or 0, a.get("output_tokens") or 0) if a["answerer"] != "extractive" else 0.0
        data.per_question[q] = {
            "category": int(a["category"]), "locomo_f1": 100 * s["locomo_f1"], "mem0_f1": 100 * s["mem0_f1"],
            "evidence_recall": None if recall is None else 100 * recall,
            "latency_s": ((a.get("search_latency_ms") or 0) + (a.get("answer_latency_ms") or 0)) / 1000,
            "tokens": float(tokens), "cost_usd": usd,
        }
        # a question whose gold answer the audit changed is judged under the audited key; the others keep theirs
        for j in question.judgements["audited" if s.get("gold_changed") else "original"]:
            valid = [r["score"] for r in j["runs"] if r["score"] != SENTINEL]
            if not valid:
                continue
            column = f"J {j['protocol']} ({j['judge_model']}, {j['prompt_version']})"  # one judge setup per column
            data.judges[column] = (j["protocol"], j["judge_model"], j["prompt_version"], j["n_runs"])
            scale = 1 if j["protocol"] == "playbook" else 100
            data.per_question[q][column] = scale * statistics.mean(valid)
    return data


def _recall(score: dict) -> float | None:
    """Evidence recall over everything the run retrieved (older scores: coverage at the largest k reached)."""
    if "evidence_recall" in score:
        return score["evidence_recall"]
    cov = score.get("evidence_coverage") or {}
    values = [(int(k[1:]), v) for k, v in cov.items() if v is not None]
    return max(values)[1] if values else None


def minimal_detectable_difference(a: Sequence[float], b: Sequence[float]) -> float:
    """(z₀.₉₇₅ + z₀.₈) · sd(b − a) / √n: the difference a paired test on n questions detects with 80% power."""
    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    if d.size < 2:
        return math.nan
    return float((Z_ALPHA + Z_POWER) * d.std(ddof=1) / math.sqrt(d.size))


def _verdict(low: float, high: float, identical: bool) -> str:
    if identical:
        return "identical"
    if math.isnan(low):
        return "–"
    return "distinguishable" if low > 0 or high < 0 else "not distinguishable"


def compare(runs: Iterable[str | Path], gold: str = "original") -> dict[str, Any]:
    """Side-by-side means per category and the paired comparison of each run with the first."""
    data = [load_run(r, gold) for r in runs]
    if len(data) < 2:
        raise CompareError("compare needs at least two runs")
    if len({d.path for d in data}) < len(data):
        raise CompareError("the same run folder was named twice")
    shared = sorted(set.intersection(*(set(d.per_question) for d in data)))
    if not shared:
        raise CompareError("the runs share no question of categories 1-4: nothing to compare")
    metrics = list(QUALITY)
    notes = coverage_notes([{"run_id": d.run_id, "config": d.config} for d in data])
    shared_judges = sorted(set.intersection(*(set(d.judges) for d in data)))
    for column in shared_judges:
        metrics.insert(2, Metric(column, f"{column} (0-100)" if column.startswith("J playbook") else f"{column} %",
                                 "points"))
    for protocol in sorted(set.intersection(*({v[0] for v in d.judges.values()} for d in data))):
        if not any(c.startswith(f"J {protocol} (") for c in shared_judges):
            setups = sorted({f"{v[1]}, {v[2]}" for d in data for v in d.judges.values() if v[0] == protocol})
            notes.append(f"J {protocol} is not compared: the runs were judged by different models or prompts "
                         f"({'; '.join(setups)}).")
    metrics += list(RESOURCES)
    base = data[0]
    rows = []
    for cat in list(CATEGORIES) + ["overall"]:
        qs = [q for q in shared if cat == "overall" or base.per_question[q]["category"] == cat]
        if not qs:
            continue
        for m in metrics:
            cols = [[d.per_question[q].get(m.name) for q in qs] for d in data]
            keep = [i for i in range(len(qs)) if all(c[i] is not None for c in cols)]
            if not keep:
                continue
            vals = [[c[i] for i in keep] for c in cols]
            row = {"category": cat, "name": CATEGORY_NAMES.get(cat, "overall") if cat != "overall" else "overall",
                   "metric": m.name, "label": m.label, "unit": m.unit, "n": len(keep),
                   "means": [float(np.mean(v)) for v in vals], "comparisons": []}
            for d, v in zip(data[1:], vals[1:]):
                low, high = paired_bootstrap(vals[0], v)
                identical = all(x == y for x, y in zip(vals[0], v))
                row["comparisons"].append({
                    "run": d.run_id, "baseline": base.run_id, "diff": float(np.mean(v) - np.mean(vals[0])),
                    "ci_low": low, "ci_high": high, "mdd": minimal_detectable_difference(vals[0], v),
                    "verdict": _verdict(low, high, identical)})
            rows.append(row)
    return {"runs": [{"run_id": d.run_id, "label": d.label, "path": str(d.path), "config": d.config,
                      "judges": {k: list(v) for k, v in d.judges.items()}, "questions": len(d.per_question)}
                     for d in data],
            "shared_questions": len(shared), "rows": rows, "notes": notes, "gold": gold,
            "method": {"interval": f"paired bootstrap, {BOOTSTRAP_RESAMPLES} resamples, seed {BOOTSTRAP_SEED}, 95%",
                       "mdd": "(z0.975 + z0.8) * sd(diff) / sqrt(n): 80% power, two-sided 5%"}}


def statements(result: dict[str, Any]) -> list[str]:
    """Plain sentences on the overall quality metrics: distinguishable or not, and the MDD."""
    out = []
    for row in result["rows"]:
        if row["category"] != "overall" or row["unit"] != "points":
            continue
        for c in row["comparisons"]:
            head = f"{c['run']} vs {c['baseline']}, {row['label']} over {num(row['n'])} shared questions:"
            if c["verdict"] == "identical":
                out.append(f"{head} identical on every question.")
                continue
            verdict = ("**distinguishable**" if c["verdict"] == "distinguishable"
                       else "**not distinguishable** (the 95% interval contains 0)")
            out.append(f"{head} {signed(c['diff'])} points {signed_interval(c['ci_low'], c['ci_high'])}: {verdict}; "
                       f"the smallest difference this sample could detect is {num(c['mdd'])} points.")
    return out


UNIT_DIGITS = {"$": 5, "tokens": 0, "s": 3}  # digits after the point per unit; points: 1


def _fmt(v: float | None, unit: str) -> str:
    return num(v, UNIT_DIGITS.get(unit, 1))


def table_lines(result: dict[str, Any]) -> list[str]:
    """The paired table as Markdown: per category and metric, each run's mean, then each difference."""
    runs = result["runs"]
    letters = [chr(ord("A") + i) if i < 26 else f"R{i + 1}" for i in range(len(runs))]
    legend = "; ".join(f"**{x}** = `{r['run_id']}`" + (" (baseline)" if i == 0 else "")
                       for i, (x, r) in enumerate(zip(letters, runs)))
    header = ["category", "metric", "n"] + letters
    for x in letters[1:]:
        header += [f"{x} − A [95% CI]", "MDD", "verdict"]
    lines = [f"Runs: {legend}.", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in result["rows"]:
        cells = [f"{row['category']} {row['name']}" if row["category"] != "overall" else "overall", row["label"],
                 num(row["n"])] + [_fmt(m, row["unit"]) for m in row["means"]]
        for c in row["comparisons"]:
            cells += [f"{_fmt(c['diff'], row['unit'])} [{_fmt(c['ci_low'], row['unit'])}, {_fmt(c['ci_high'], row['unit'])}]",
                      _fmt(c["mdd"], row["unit"]), c["verdict"]]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def comparison_figure(result: dict[str, Any], path: Path) -> Path:
    """Paired differences with 95% intervals, per category, for the quality metrics (a forest plot)."""
    import matplotlib  # deferred: a heavy import

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: a heavy import

    rows = [r for r in result["rows"] if r["unit"] == "points"]
    metrics = list(dict.fromkeys(r["label"] for r in rows))
    fig, axes = plt.subplots(1, len(metrics), figsize=(3.6 * len(metrics), 3.8), sharey=True, squeeze=False)
    cats = list(dict.fromkeys(f"{r['category']} {r['name']}" if r["category"] != "overall" else "overall" for r in rows))
    for ax, label in zip(axes[0], metrics):
        for k, comp_run in enumerate(result["runs"][1:]):
            for i, cat in enumerate(cats):
                row = next((r for r in rows if r["label"] == label and
                            (f"{r['category']} {r['name']}" if r["category"] != "overall" else "overall") == cat), None)
                if row is None:
                    continue
                c = row["comparisons"][k]
                y = i + 0.15 * k
                color = "#C44E52" if c["verdict"] == "distinguishable" else "#4C72B0"
                ax.errorbar(c["diff"], y, xerr=[[c["diff"] - c["ci_low"]], [c["ci_high"] - c["diff"]]], fmt="o",
                            color=color, capsize=3)
        ax.axvline(0, color="black", lw=0.8)
        ax.set_title(label, fontsize=9)
        ax.set_xlabel(f"difference vs {result['runs'][0]['run_id']} (points)", fontsize=8)
    axes[0][0].set_yticks(range(len(cats)), cats)
    axes[0][0].invert_yaxis()
    fig.suptitle("Paired differences with 95% bootstrap intervals (red: distinguishable)", fontsize=10)
    return save_figure(fig, path, dpi=110)


def write_comparison(result: dict[str, Any], folder: Path) -> dict[str, Path]:
    """``compare.md``, ``compare.json``, ``compare.png``, ``questions.png`` (which runs answer which questions)
    and ``compare.html`` (the same, with the question explorer across the runs) in ``folder``; the flips of
    every pair of runs (:mod:`locomo_kit.reports.flips`) in all of them."""

    folder.mkdir(parents=True, exist_ok=True)
    png = comparison_figure(result, folder / "compare.png")
    runs = result["runs"]
    letters = [chr(ord("A") + i) if i < 26 else f"R{i + 1}" for i in range(len(runs))]
    across = cross_runs([RunRef(x, find_run(r["path"]), r["label"]) for x, r in zip(letters, runs)], folder,
                        gold=result["gold"])
    result = {**result, "flips": across.flips, "flip_basis": across.table["basis"]}
    md = [f"# Comparison: {', '.join(r['run_id'] for r in runs)}", "",
          f"{result['shared_questions']} questions of categories 1-4 answered by every run ({result['gold']} gold key). "
          f"Differences are run − {runs[0]['run_id']}; intervals: {result['method']['interval']}; "
          f"MDD (minimal detectable difference): {result['method']['mdd']}.", ""]
    md += coverage_lines(runs)  # answered elsewhere: what each imported run's file covers, before any number
    md += ["## Runs", ""] + [f"- **{r['run_id']}**: {r['label']}; config {r['config']['config_key']}, "
                             f"{num(r['questions'])} questions" for r in runs] + [""]
    md += ["## Verdict", ""] + [f"- {s}" for s in statements(result)] + [f"- {n}" for n in result["notes"]] + [""]
    md += ["## Paired table", ""] + table_lines(result) + ["", f"![paired differences]({png.name})", ""]
    md += shared_judges_lines([find_run(r["path"]) for r in runs])  # J per run under the judges they share
    md += across.lines
    (folder / "compare.md").write_text("\n".join(md), encoding="utf-8")
    (folder / "compare.json").write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")
    html = write_runs_page(folder / "compare.md", folder / "compare.html",
                           f"Comparison: {', '.join(r['run_id'] for r in runs)}", across.table)
    return {"markdown": folder / "compare.md", "json": folder / "compare.json", "figure": png, "html": html,
            "questions_figure": across.figure}
