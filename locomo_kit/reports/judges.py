"""The judge matrix: several judges over the same answers, how far they agree, and which one people agree with.

From a run's verdict sets (:mod:`locomo_kit.scoring.verdict_sets`): per judge and gold key, J (the share
of answers it accepts) per category and overall with Wilson 95% intervals; for every pair of judges,
raw agreement and Cohen's kappa with a bootstrap interval over the questions both judged; Fleiss' kappa
over the questions every judge judged when there are three or more; the swing per category (largest J
minus smallest, among the judges that read the answers: rules and people aside); the questions on
which those judges disagree; and, when the run holds people's labels (a set named ``human``), each
judge's agreement and kappa with them and its acceptance per labelled class.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from locomo_kit.dataset import CATEGORY_NAMES
from locomo_kit.reports.numbers import num
from locomo_kit.runs import RunFolder
from locomo_kit.scoring.agreement import fleiss_kappa, pair_agreement, proportion
from locomo_kit.scoring.verdict_sets import VerdictSet, run_verdict_sets

CATS = (1, 2, 3, 4)
CLASSES = ("correct", "specific-wrong", "vague-topical-wrong")
CLASS_NAMES = {"correct": "correct", "specific-wrong": "specific-but-wrong", "vague-topical-wrong": "vague-but-wrong"}


def _reads_answers(s: VerdictSet) -> bool:
    return s.kind not in ("rule", "human")


def _j(verdicts: dict, answers: list[dict]) -> dict[str, dict]:
    out = {}
    for cat in CATS + ("overall",):
        vs = [verdicts[(a["sample_id"], int(a["question_index"]))] for a in answers
              if (cat == "overall" or a["category"] == cat) and (a["sample_id"], int(a["question_index"])) in verdicts]
        out[str(cat)] = proportion(sum(vs), len(vs)).as_dict()
    return out


def _by_conversation(verdicts: dict, answers: list[dict]) -> dict[str, dict]:
    out: dict[str, list[bool]] = {}
    for a in answers:
        q = (a["sample_id"], int(a["question_index"]))
        if q in verdicts:
            out.setdefault(a["sample_id"], []).append(verdicts[q])
    return {sid: proportion(sum(v), len(v)).as_dict() for sid, v in out.items()}


def _people(sets: list[VerdictSet], human: VerdictSet, key: str) -> dict[str, Any]:
    truth = human.verdicts.get(key, {})
    rows = []
    for s in sets:
        if s is human:
            continue
        shared = sorted(set(truth) & set(s.verdicts.get(key, {})))
        if not shared:
            continue
        row = {"judge": s.name, "kind": s.kind, "basis": s.basis,
               **pair_agreement([s.verdicts[key][q] for q in shared], [truth[q] for q in shared])}
        classes = {}
        for cls in CLASSES:
            qs = [q for q in shared if human.classes.get(q) == cls]
            if qs:
                classes[cls] = proportion(sum(s.verdicts[key][q] for q in qs), len(qs)).as_dict()
        row["acceptance"] = classes
        rows.append(row)
    rows.sort(key=lambda r: -(r["kappa"] if r["kappa"] is not None else -2))
    best = None
    if len(rows) >= 2 and rows[0]["kappa_low"] is not None and rows[1]["kappa_high"] is not None:
        best = {"judge": rows[0]["judge"], "clears": rows[0]["kappa_low"] > rows[1]["kappa_high"],
                "next": rows[1]["judge"]}
    elif len(rows) == 1:
        best = {"judge": rows[0]["judge"], "clears": False, "next": None}
    return {"human": human.name, "rows": rows, "best": best,
            "classes": {cls: sum(1 for q in truth if human.classes.get(q) == cls) for cls in CLASSES}}


def matrix_from_sets(sets: list[VerdictSet], answers: list[dict], *, published: dict | None = None) -> dict[str, Any]:
    """The judge matrix (see the module doc) of verdict sets over ``answers``; ``published``: the rates the
    bank's authors published, per class, shown beside people's acceptance."""
    by_q = {(a["sample_id"], int(a["question_index"])): a for a in answers}
    keys = [k for k in ("original", "audited") if any(k in s.verdicts for s in sets)]
    out: dict[str, Any] = {"judges": [s.as_dict() for s in sets], "keys": {}, "answers": len(answers),
                           "published": published or {}}
    human = next((s for s in sets if s.kind == "human"), None)
    for key in keys:
        present = [s for s in sets if key in s.verdicts]
        j = {s.name: _j(s.verdicts[key], answers) for s in present}
        pairs = []
        for i, a in enumerate(present):
            for b in present[i + 1:]:
                shared = sorted(set(a.verdicts[key]) & set(b.verdicts[key]))
                if shared:
                    pairs.append({"a": a.name, "b": b.name, **pair_agreement([a.verdicts[key][q] for q in shared],
                                                                             [b.verdicts[key][q] for q in shared])})
        fleiss = None
        if len(present) >= 3:
            common = sorted(set.intersection(*(set(s.verdicts[key]) for s in present)))
            fleiss = {"judges": [s.name for s in present], "n": len(common),
                      "kappa": fleiss_kappa([[s.verdicts[key][q] for q in common] for s in present])}
        readers = [s for s in present if _reads_answers(s)] or [s for s in present if s.kind != "human"]
        swing = {}
        for cat in CATS + ("overall",):
            rates = [(j[s.name][str(cat)]["rate"], s.name) for s in readers if j[s.name][str(cat)]["rate"] is not None]
            if len(rates) >= 2:
                hi, lo = max(rates), min(rates)
                swing[str(cat)] = {"points": hi[0] - lo[0], "highest": hi[1], "lowest": lo[1],
                                   "among": [s.name for s in readers]}
        entry: dict[str, Any] = {"j": j, "pairs": pairs, "fleiss": fleiss, "swing": swing,
                                 "by_conversation": {s.name: _by_conversation(s.verdicts[key], answers) for s in present}}
        if key == "original":
            split = []
            for q in sorted(by_q):
                votes = {s.name: s.verdicts[key][q] for s in readers if q in s.verdicts[key]}
                if len(set(votes.values())) > 1:
                    a = by_q[q]
                    split.append({"sample_id": q[0], "question_index": q[1], "category": a["category"],
                                  "question": a.get("question"), "gold": a.get("gold"),
                                  "prediction": a.get("prediction"), "verdicts": votes,
                                  "reasons": {s.name: s.reasons.get(q, "") for s in readers if q in s.verdicts[key]}})
            entry["disagreements"] = split
        if human is not None and key in human.verdicts:
            entry["people"] = _people(present, human, key)
        out["keys"][key] = entry
    return out


def judge_matrix(run: RunFolder, *, rules: bool = True, dataset_path: str | None = None,
                 published: dict | None = None) -> dict[str, Any]:
    """The judge matrix of a run folder (its verdict sets, and the rule-based judges unless ``rules`` is False)."""
    sets, answers = run_verdict_sets(run, rules=rules, dataset_path=dataset_path)
    return matrix_from_sets(sets, answers, published=published) | {"run_id": run.run_id}


def _f(v: Any, digits: int = 1) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:.{digits}f}"


def _ci(p: dict) -> str:
    return "–" if p.get("rate") is None else f"{_f(p['rate'])} [{_f(p['low'])}, {_f(p['high'])}]"


def _row(cells: list[Any]) -> str:
    return "| " + " | ".join(str(c).replace("|", "/").replace("\n", " ") for c in cells) + " |"


def matrix_lines(m: dict[str, Any], *, heading: str = "## Judges side by side", disagreements: int = 20) -> list[str]:
    """The matrix as markdown: J per judge, agreement, Fleiss, swing, people, the first disagreements."""
    lines = [heading, ""]
    if not m["keys"]:
        return lines + ["No verdicts: nothing was judged.", ""]
    judges = {j["name"]: j for j in m["judges"]}
    lines += ["Each judge's verdicts over the same answers (categories 1-4). J: the share of answers the judge "
              "accepts, % with a Wilson 95% interval; a kit judge accepts when at least half of its runs say "
              "CORRECT (playbook: mean ≥ 50). Rule-based judges are named by their rule (\"F1 ≥ 0.5\": official "
              "F1 of at least 0.5). Kappa: Cohen's, with a percentile bootstrap 95% interval over questions "
              "(2,000 resamples, fixed seed).", ""]
    lines += [_row(["judge", "kind", "basis"]), "|---|---|---|"]
    lines += [_row([j["name"], j["kind"], j["basis"]]) for j in m["judges"]] + [""]
    for key, e in m["keys"].items():
        lines += [f"### J per judge, {key} gold key", ""]
        lines += [_row(["judge"] + [f"{c} {CATEGORY_NAMES[c]}" for c in CATS] + ["overall", "n"]),
                  "|" + "---|" * (len(CATS) + 3)]
        for name, row in e["j"].items():
            lines.append(_row([name] + [_ci(row[str(c)]) for c in CATS] + [_ci(row["overall"]), row["overall"]["n"]]))
        not_audited = {n: judges[n]["not_audited"] for n in e["j"] if key == "audited" and judges[n]["not_audited"]}
        lines.append("")
        if not_audited:
            lines += ["Under the audited key, questions whose gold the audit changed and that a set did not judge "
                      "against the new gold are left out of that set: "
                      + "; ".join(f"{n}: {v}" for n, v in not_audited.items()) + ".", ""]
        convs = list(next(iter(e["by_conversation"].values()), {}))
        if len(convs) > 1:
            lines += [f"J per conversation, {key} gold key (%):", "",
                      _row(["judge"] + convs), "|" + "---|" * (len(convs) + 1)]
            lines += [_row([n] + [_f(row.get(c, {}).get("rate"), 2) for c in convs])
                      for n, row in e["by_conversation"].items()] + [""]
        if e["swing"]:
            among = next(iter(e["swing"].values()))["among"]
            lines += [f"Swing (largest J − smallest, among {', '.join(among)}): "
                      + "; ".join(f"{c if c == 'overall' else CATEGORY_NAMES[int(c)]} {_f(v['points'])} points "
                                  f"({v['highest']} − {v['lowest']})" for c, v in e["swing"].items()) + ".", ""]
        if e["pairs"]:
            lines += [f"Agreement, {key} gold key:", "",
                      _row(["judge A", "judge B", "questions", "agreement %", "Cohen's kappa [95% CI]", "A yes, B no",
                            "A no, B yes"]), "|---|---|---|---|---|---|---|"]
            for p in e["pairs"]:
                lines.append(_row([p["a"], p["b"], p["n"], _ci(p["agreement"]),
                                   f"{_f(p['kappa'], 3)} [{_f(p['kappa_low'], 3)}, {_f(p['kappa_high'], 3)}]",
                                   p["a_yes_b_no"], p["a_no_b_yes"]]))
            lines.append("")
        if e["fleiss"]:
            lines += [f"Fleiss' kappa over the {e['fleiss']['n']} questions all {len(e['fleiss']['judges'])} judges "
                      f"judged: {_f(e['fleiss']['kappa'], 3)}.", ""]
        if e.get("people"):
            lines += people_lines(e["people"], m.get("published") or {}, key)
        if "disagreements" in e:
            split = e["disagreements"]
            who = ("the judges" if all(judges[n]["kind"] == "rule" for n in next(iter(split), {}).get("verdicts", {}))
                   else "the judges that read the answers")
            lines += [f"**{len(split)} questions on which {who} disagree** (the question "
                      "explorer of report.html filters them: right by one judge, wrong by another)"
                      + (":" if split else "."), ""]
            for d in split[:disagreements]:
                votes = ", ".join(f"{n}: {'right' if v else 'wrong'}" for n, v in d["verdicts"].items())
                answer = " ".join(str(d["prediction"]).split())[:160]
                lines.append(f"- {d['sample_id']} q{d['question_index']}: {d['question']} — gold *{d['gold']}*, "
                             f"answer *{answer}* ({votes})")
            if len(split) > disagreements:
                lines.append(f"- … and {len(split) - disagreements} more (`locomo-kit judges RUN --json`).")
            lines.append("")
    return lines


def people_lines(p: dict[str, Any], published: dict, key: str) -> list[str]:
    """Each judge against people's labels: agreement, kappa, acceptance per class, the published rates beside."""
    lines = [f"Against people ({p['human']}, {key} gold key): each judge's agreement and Cohen's kappa with the "
             "labels, and the share of each labelled class it accepts (Wilson 95%)"
             + ("; the bank's authors' published rates beside (their prompt and model)." if published else "."), ""]
    classes = [c for c in CLASSES if p["classes"].get(c)]
    lines += [_row(["judge", "agreement %", "kappa [95% CI]"] + [f"accepts {CLASS_NAMES[c]} (n {p['classes'][c]})"
                                                                for c in classes]),
              "|" + "---|" * (3 + len(classes))]
    for r in p["rows"]:
        lines.append(_row([r["judge"], _ci(r["agreement"]), f"{_f(r['kappa'], 3)} [{_f(r['kappa_low'], 3)}, "
                           f"{_f(r['kappa_high'], 3)}]"] + [_ci(r["acceptance"].get(c, {})) for c in classes]))
    for name, rates in published.items():
        lines.append(_row([f"published: {name}", _ci(rates.get("agreement", {})), "–"]
                          + [_ci(rates.get(c, {})) for c in classes]))
    lines.append("")
    best = p.get("best")
    if best and best["clears"]:
        lines += [f"**{best['judge']} agrees best with people**: its kappa interval lies above that of the next "
                  f"judge ({best['next']}).", ""]
    elif best and best["next"]:
        lines += [f"No judge agrees best with people by a clear margin: {best['judge']} has the highest kappa, but "
                  f"its interval overlaps that of {best['next']}.", ""]
    return lines


def matrix_frames(m: dict[str, Any], key: str = "original"):
    """The matrix as two pandas DataFrames: J per judge and category (rate, low, high, n; one row each) and
    Cohen's kappa between every two judges (a square frame, 1 on the diagonal)."""
    import pandas as pd  # deferred: pandas is only needed by notebooks

    e = m["keys"][key]
    rows = [{"judge": name, "category": c if c == "overall" else f"{c} {CATEGORY_NAMES[int(c)]}", **p}
            for name, cats in e["j"].items() for c, p in cats.items()]
    names = list(e["j"])
    kappa = pd.DataFrame(1.0, index=names, columns=names)
    for p in e["pairs"]:
        kappa.loc[p["a"], p["b"]] = kappa.loc[p["b"], p["a"]] = p["kappa"] if p["kappa"] is not None else float("nan")
    return pd.DataFrame(rows), kappa


def judges_figure(m: dict[str, Any], path: Path, key: str = "original") -> Path:
    """Per-category J of each judge with its 95% interval, beside the heatmap of Cohen's kappa; saved as PNG."""
    import matplotlib  # deferred: matplotlib is slow to import

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred with matplotlib

    frame, kappa = matrix_frames(m, key)
    cats = list(dict.fromkeys(frame["category"]))
    names = list(kappa.index)
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 6), gridspec_kw={"width_ratios": [3, 2]})
    width = 0.8 / max(1, len(names))
    for i, name in enumerate(names):
        rows = frame[frame["judge"] == name].set_index("category").reindex(cats)
        x = [c + (i - (len(names) - 1) / 2) * width for c in range(len(cats))]
        rate = rows["rate"].astype(float)
        err = [(rate - rows["low"].astype(float)).fillna(0), (rows["high"].astype(float) - rate).fillna(0)]
        left.bar(x, rate, width, yerr=err, capsize=2, label=name)
    left.set_xticks(range(len(cats)), cats, rotation=20)
    left.set_ylabel("J: % of answers accepted")
    left.set_ylim(0, 100)
    left.set_title(f"J per judge and category, 95% Wilson intervals ({key} gold key)", fontsize=10)
    left.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3)
    im = right.imshow(kappa.to_numpy(dtype=float), vmin=-1, vmax=1, cmap="RdBu")
    right.set_xticks(range(len(names)), names, rotation=60, ha="right", fontsize=7)
    right.set_yticks(range(len(names)), names, fontsize=7)
    for a in range(len(names)):
        for b in range(len(names)):
            value = kappa.iloc[a, b]
            right.text(b, a, num(value, 2), ha="center", va="center", fontsize=7)
    right.set_title("Cohen's kappa between judges", fontsize=10)
    fig.colorbar(im, ax=right, fraction=0.046)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def verdict_set_names(run: RunFolder) -> list[str]:
    """The names of ``run``'s verdict sets (its judges, the source's, people's, the rules), as ``judges`` lists them."""
    sets, _ = run_verdict_sets(run, audited=False)
    return [s.name for s in sets]


def shared_judges(runs: list[RunFolder], *, key: str = "original", judge: str | None = None) -> dict[str, Any]:
    """J per run under every judge that at least two of ``runs`` share (or under ``judge`` alone, for every
    run that has it), and which runs lack each: ``{"runs", "judges": {name: {run_id: J overall}}, "lacking"}``."""
    per_run = {}
    for run in runs:
        sets, answers = run_verdict_sets(run, audited=key == "audited")
        per_run[run.run_id] = {s.name: _j(s.verdicts[key], answers)["overall"] for s in sets if key in s.verdicts}
    names = sorted({n for js in per_run.values() for n in js})
    shared = [judge] if judge else [n for n in names if sum(n in js for js in per_run.values()) >= 2]
    return {"runs": list(per_run), "key": key,
            "judges": {n: {r: js[n] for r, js in per_run.items() if n in js} for n in shared},
            "lacking": {n: [r for r, js in per_run.items() if n not in js] for n in shared}}


def shared_judges_lines(runs: list[RunFolder], *, heading: str = "## J under the judges the runs share",
                        key: str = "original", judge: str | None = None) -> list[str]:
    """The runs side by side under each judge they share: J overall with its Wilson interval, and who lacks it."""
    s = shared_judges(runs, key=key, judge=judge)
    if not s["judges"]:
        return []
    lines = [heading, "", f"J (% of answers of categories 1-4 the judge accepts, Wilson 95%; {key} gold key) of each "
             "run under each judge that more than one run carries; a rule-based judge is named by its rule. Each "
             "run's J is over its own answers: see the paired table for the questions they share.", "",
             _row(["judge"] + s["runs"]), "|" + "---|" * (len(s["runs"]) + 1)]
    for name, by_run in s["judges"].items():
        lines.append(_row([name] + [_ci(by_run[r]) if r in by_run else "–" for r in s["runs"]]))
    lines.append("")
    lacking = {n: rs for n, rs in s["lacking"].items() if rs}
    if lacking:
        lines += ["Runs without a judge's verdicts: " + "; ".join(f"{n}: {', '.join(rs)}" for n, rs in lacking.items())
                  + ".", ""]
    return lines
