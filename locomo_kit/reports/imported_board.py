"""Imported runs on the leaderboard: their own section, "answered elsewhere, scored here".

Each imported run is one row (coverage, official F1 and Mem0 F1 over categories 1-4, the source's J
recomputed from its verdicts, the kit's J when judged here, answer length). Paired differences are
shown only between imported runs over exactly the same questions (categories 1-4), through
:func:`locomo_kit.reports.comparison.compare`; never against the measured rows, which answer other questions.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any, Sequence

from locomo_kit.imported.identity import SOURCE_PROTOCOL, imported
from locomo_kit.reports.comparison import compare
from locomo_kit.reports.judges import shared_judges, shared_judges_lines, verdict_set_names
from locomo_kit.reports.numbers import num, signed, signed_interval
from locomo_kit.runs import RunFolder
from locomo_kit.runs.records import load_scores
from locomo_kit.runs.verdicts import VERDICTS_PROTOCOL

SECTION = "Answered elsewhere, scored here"


def _run(ref: str) -> RunFolder:
    return RunFolder(ref) if "/" not in ref else RunFolder(Path(ref).name, root=Path(ref).parent)


def imported_row(ref: str) -> dict[str, Any]:
    """One row for an imported run; a ValueError when ``ref`` is not an imported, scored run."""
    run = _run(ref)
    m = run.manifest()
    block = imported(m)
    if block is None:
        raise ValueError(f"{ref}: not an imported run (locomo-kit import makes one); measured runs go in --systems")
    key = m.get("answer", {}).get("config_key")
    scores = [s for s in load_scores(run, key) if s["category"] != 5]
    if not scores:
        raise ValueError(f"{ref}: not scored yet: run `locomo-kit score --run-id {run.run_id}`")
    answers = {(a["sample_id"], a["question_index"]): a for a in run.records("answers.jsonl")
               if a.get("config_key") == key}
    verdicts = [a["imported"]["verdict"] for a in answers.values()
                if a["category"] != 5 and a.get("imported", {}).get("verdict") is not None]
    kit = {}
    for j in run.records("judgements.jsonl"):
        if j["protocol"] not in (SOURCE_PROTOCOL, VERDICTS_PROTOCOL) and j["answer_config_key"] == key and j.get("n_ok"):
            kit.setdefault(j["protocol"], []).append(j["mean"] >= (50 if j["protocol"] == "playbook" else 0.5))
    c = block["coverage"]
    return {"system": block["system"], "run_id": run.run_id, "path": str(run.path), "questions": len(scores),
            "coverage": f"{c['questions']:,} of {c['benchmark']:,}",
            "locomo_f1": 100 * statistics.mean(s["locomo_f1"] for s in scores),
            "mem0_f1": 100 * statistics.mean(s["mem0_f1"] for s in scores),
            "j_source": 100 * sum(verdicts) / len(verdicts) if verdicts else None,
            "j_kit": {p: 100 * sum(v) / len(v) for p, v in kit.items()},
            "claim": (block.get("claim") or {}).get("j"),
            "answer_words": statistics.mean(len(str(answers[(s["sample_id"], s["question_index"])]["prediction"]).split())
                                            for s in scores),
            "answerer": block.get("answerer"), "judge": block.get("judge"),
            "question_set": sorted((s["sample_id"], s["question_index"]) for s in scores)}


def imported_rows(refs: Sequence[str]) -> list[dict[str, Any]]:
    return [imported_row(r) for r in refs]


def imported_judge(rows: list[dict[str, Any]], judge: str) -> dict[str, Any]:
    """J overall (original gold key) under the verdict set named ``judge`` of every imported run in ``rows`` that has
    it, and which runs lack it: ``{"name", "key", "j": {run_id: J}, "lacking": [run_id, …]}``. A ``ValueError``
    naming each run's verdict sets when none of them has it (a name mistyped, not a run that lacks it)."""
    s = shared_judges([_run(r["path"]) for r in rows], judge=judge)
    if not s["judges"][judge]:
        carried = "; ".join(f"{r['run_id']}: {', '.join(verdict_set_names(_run(r['path']))) or 'none'}" for r in rows)
        raise ValueError(f"no imported run has a verdict set named {judge!r} (their verdict sets: {carried}); name one "
                         "of them (`locomo-kit judges RUN` lists a run's judges)")
    return {"name": judge, "key": s["key"], "j": s["judges"][judge], "lacking": s["lacking"][judge]}


def imported_paired(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Official F1 differences between imported runs over identical question sets (against the group's first)."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault(tuple(r["question_set"]), []).append(r)
    out = []
    for group in groups.values():
        if len(group) < 2:
            continue
        result = compare([g["path"] for g in group])
        for row in result["rows"]:
            if row["category"] != "overall" or row["unit"] != "points" or "official" not in row["label"].lower():
                continue
            for r, cmp_ in zip(group[1:], row["comparisons"]):
                out.append({"system": r["system"], "baseline": group[0]["system"], "n": row["n"], "diff": cmp_["diff"],
                            "ci_low": cmp_["ci_low"], "ci_high": cmp_["ci_high"], "verdict": cmp_["verdict"]})
    return out


def imported_lines(rows: list[dict[str, Any]], judge: str | None = None) -> list[str]:
    """The leaderboard's section for imported runs (empty when there are none); ``judge``: J under that one judge
    (a verdict set's name) for every run that has it, and which runs lack it (default: every judge they share)."""
    if not rows:
        return []
    lines = [f"## {SECTION}", "",
             "Answers produced by other harnesses (their own answerers, prompts and judges), imported with `locomo-kit "
             "import` and scored here with the same scorer and gold key (categories 1-4). They answer other questions "
             "than the rows above, with other answerers, so they are never paired with them. J (source): the source's "
             "own verdicts recomputed over the matched questions; J (kit): the kit's judge, where it judged the run.", "",
             "| system | coverage | n (cats 1-4) | official F1 % | Mem0 F1 % | answer words | J (source) % | claimed J % | "
             "J (kit) % | answerer | run |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        kit = "; ".join(f"{p} {num(v)}" for p, v in sorted(r["j_kit"].items())) or "–"
        lines.append(f"| {r['system']} | {r['coverage']} | {num(r['questions'])} | {num(r['locomo_f1'])} | {num(r['mem0_f1'])} | "
                     f"{num(r['answer_words'])} | {num(r['j_source'])} | {num(r['claim'])} | {kit} | {r['answerer']} | "
                     f"`{r['run_id']}` |")
    paired = imported_paired(rows)
    lines += [""]
    if paired:
        lines += ["Paired differences of official F1 between imported runs over the same questions (paired bootstrap "
                  "95% interval):", "", "| system | against | n | difference [95% CI] | verdict |", "|---|---|---|---|---|"]
        lines += [f"| {p['system']} | {p['baseline']} | {num(p['n'])} | {signed(p['diff'])} "
                  f"{signed_interval(p['ci_low'], p['ci_high'])} | {p['verdict']} |" for p in paired] + [""]
    else:
        lines += ["No two imported runs answer the same questions: no paired difference is shown.", ""]
    lines += shared_judges_lines([_run(r["path"]) for r in rows], judge=judge,  # J for every run that has the judge,
                                 heading="### J on one footing: " + (f"under {judge}" if judge else  # and who lacks it
                                                                      "the judges these runs share"))
    return lines
