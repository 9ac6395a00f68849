"""report.md of an imported run: answers produced elsewhere, scored here.

Coverage first (how many of the benchmark's questions the file answers, and what did not match),
then the kit's footing (official F1, Mem0 F1, BLEU-1 per category with intervals, answer length
beside F1, both gold keys), the source's own verdicts recomputed beside its claim, the source's
own per-question scores against the kit's recomputation, the refusal rule on adversarial answers,
and the kit's judge beside the source's verdicts when the run was judged here. No retrieval
diagnostics: no retrieved context was imported.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from locomo_kit.dataset import CATEGORY_NAMES, Conversation
from locomo_kit.imported.identity import IMPORT_FILE, SOURCE_PROTOCOL, imported
from locomo_kit.paths import write_atomic
from locomo_kit.reports.floor import floor_lines
from locomo_kit.reports.html import write_run_html
from locomo_kit.reports.judges import judge_matrix, matrix_lines
from locomo_kit.reports.numbers import interval, markdown_table, num, signed
from locomo_kit.reports.summary import summarize_run
from locomo_kit.runs import RunFolder, utc_now
from locomo_kit.runs.records import load_scores
from locomo_kit.runs.verdicts import VERDICTS_PROTOCOL
from locomo_kit.scoring.aggregate import wilson_ci

SCORE_TOLERANCE = 1e-4  # the source's per-question scores are printed to about 4-16 digits
LISTED_IN_REPORT = 40


def coverage_banner(block: dict[str, Any]) -> list[str]:
    """The lines at the top of every report on an imported run: coverage and what did not match."""
    c = block["coverage"]
    reasons = block.get("reasons") or {}
    why = "; ".join(f"{k}: {v}" for k, v in reasons.items())
    lines = [f"> **Answered elsewhere, scored here.** {block['system']}'s answers were produced by another harness "
             f"and imported from {', '.join(f['name'] for f in block['files'])} (sha256 "
             f"{', '.join(f['sha256'][:12] for f in block['files'][:3])}{'…' if len(block['files']) > 3 else ''}). "
             f"**Coverage: {c['questions']:,} of the benchmark's {c['benchmark']:,} questions** "
             f"({c['questions_1_4']:,} of {c['benchmark_1_4']:,} in categories 1-4, "
             f"{c['by_category']['5']['answered']} of {c['by_category']['5']['benchmark']} adversarial) from "
             f"{block['records']:,} records" + (f"; not matched or noted: {why} (listed in the last section and "
                                                f"in {IMPORT_FILE})" if why else "; every record matched") + ". "
             "Every number below covers the matched questions only.", ""]
    return lines


def _by_cat(rows: list[dict]) -> dict:
    return {r["category"]: r for r in rows}


def _j(verdicts: list[bool]) -> tuple[float | None, float | None, float | None]:
    if not verdicts:
        return None, None, None
    low, high = wilson_ci(sum(verdicts), len(verdicts))
    return 100 * sum(verdicts) / len(verdicts), 100 * low, 100 * high


def _exclusions(path: Path, order: list[str]) -> set[tuple[str, int]]:
    """Questions a claim's scope leaves out: ``sets.*.questions[{conversation_index, question_idx}]``."""
    data = json.loads(path.read_text(encoding="utf-8"))
    out = set()
    for s in (data.get("sets") or {}).values():
        for q in s.get("questions", []):
            out.add((order[int(q["conversation_index"])], int(q["question_idx"])))
    return out


def claim_check(block: dict[str, Any], answers: list[dict], order: list[str], aux_dir: Path | None = None) -> dict:
    """The source's J recomputed from its verdicts: over the claim's scope (default: every imported record
    with a verdict) and over categories 1-4; whether it agrees with the claim (to the claim's printed digits)."""
    claim = block.get("claim") or {}
    scope = claim.get("scope") or {}
    judged = [a for a in answers if a["imported"].get("verdict") is not None]
    in_scope = judged
    if scope.get("categories"):
        in_scope = [a for a in in_scope if a["category"] in scope["categories"]]
    excluded = 0
    if scope.get("exclude"):
        files = {Path(f["path"]).parent / scope["exclude"] for f in block["files"]}
        if aux_dir:
            files.add(aux_dir / scope["exclude"])
        path = next((p for p in files if p.is_file()), None)
        if path is None:
            return {"error": f"the claim's scope leaves out the questions of {scope['exclude']}, which is not beside "
                             "the imported files"}
        leave = _exclusions(path, order)
        before = len(in_scope)
        in_scope = [a for a in in_scope if (a["sample_id"], a["question_index"]) not in leave]
        excluded = before - len(in_scope)
    j_scope = _j([a["imported"]["verdict"] for a in in_scope])
    fv = block.get("file_verdicts") or {}
    if not scope and fv.get("records"):  # the source's own denominator: every record of the file, matched or not
        j_scope = _j([True] * fv["correct"] + [False] * (fv["records"] - fv["correct"]))
        in_scope = [None] * fv["records"]
    j_14 = _j([a["imported"]["verdict"] for a in judged if a["category"] != 5])
    out = {"n_scope": len(in_scope), "j_scope": j_scope, "n_1_4": sum(a["category"] != 5 for a in judged),
           "j_1_4": j_14, "excluded": excluded, "scope": scope, "claim": claim.get("j"),
           "claim_from": claim.get("from") or claim.get("where")}
    if claim.get("j") is not None and j_scope[0] is not None:
        text = f"{claim['j']}"
        digits = len(text.split(".")[1]) if "." in text else 0
        tolerance = 0.5 * 10 ** -digits + 1e-9
        out["difference"] = j_scope[0] - float(claim["j"])
        out["agrees"] = abs(out["difference"]) <= tolerance
    return out


def source_score_check(answers: list[dict], scores: dict[tuple, dict]) -> dict[str, dict]:
    """The source's own per-question F1/BLEU against the kit's Mem0 F1 and BLEU-1: compared, differing, largest gap."""
    out = {}
    for theirs, ours in (("f1", "mem0_f1"), ("bleu", "bleu1")):
        pairs = [(a, scores[(a["sample_id"], a["question_index"])][ours]) for a in answers
                 if a["imported"].get(theirs) is not None and (a["sample_id"], a["question_index"]) in scores
                 and scores[(a["sample_id"], a["question_index"])][ours] is not None]
        if not pairs:
            continue
        diffs = [(abs(a["imported"][theirs] - v), a, v) for a, v in pairs]
        bad = [d for d in diffs if d[0] > SCORE_TOLERANCE]
        out[theirs] = {"kit_metric": ours, "compared": len(pairs), "differ": len(bad),
                       "max_abs_diff": max(d[0] for d in diffs),
                       "examples": [{"sample_id": a["sample_id"], "question_index": a["question_index"],
                                     "source": a["imported"][theirs], "kit": v} for _, a, v in bad[:5]]}
    return out


def audited_flips(answers: list[dict], audited: dict[tuple, dict]) -> dict[str, Any]:
    """How many of the source's verdicts the audited key flips, by the kit's token rule: a CORRECT answer
    whose official F1 against the audited gold is 0 (it shares no token with it) becomes WRONG; a WRONG one
    with official F1 ≥ 0.5 against the audited gold becomes CORRECT. Only questions whose gold the audit changes."""
    changed = [a for a in answers if a["category"] != 5 and audited.get((a["sample_id"], a["question_index"]), {})
               .get("gold_changed")]
    judged = [a for a in changed if a["imported"].get("verdict") is not None]
    to_wrong = to_right = 0
    verdicts = {}
    for a in [a for a in answers if a["category"] != 5 and a["imported"].get("verdict") is not None]:
        verdicts[(a["sample_id"], a["question_index"])] = a["imported"]["verdict"]
    for a in judged:
        f1_audited = audited[(a["sample_id"], a["question_index"])]["locomo_f1"]
        if a["imported"]["verdict"] and f1_audited == 0:
            to_wrong += 1
            verdicts[(a["sample_id"], a["question_index"])] = False
        elif not a["imported"]["verdict"] and f1_audited >= 0.5:
            to_right += 1
            verdicts[(a["sample_id"], a["question_index"])] = True
    return {"changed": len(changed), "judged": len(judged),
            "accepted_against_original": sum(a["imported"]["verdict"] for a in judged),
            "to_wrong": to_wrong, "to_right": to_right, "flipped": to_wrong + to_right,
            "j_audited": _j(list(verdicts.values()))}


def kit_judge_agreement(answers: list[dict], judgements: list[dict]) -> list[dict]:
    """Per kit protocol: agreement of the kit's judge (majority of its runs; playbook: mean ≥ 50) with the
    source's verdicts on the same questions, with Cohen's kappa."""
    source = {(a["sample_id"], a["question_index"]): a["imported"]["verdict"] for a in answers
              if a["imported"].get("verdict") is not None and a["category"] != 5}
    out = []
    for protocol in sorted({j["protocol"] for j in judgements} - {SOURCE_PROTOCOL, VERDICTS_PROTOCOL}):
        pairs = []
        for j in judgements:
            q = (j["sample_id"], j["question_index"])
            if j["protocol"] != protocol or q not in source or not j.get("n_ok"):
                continue
            kit = j["mean"] >= (50 if protocol == "playbook" else 0.5)
            pairs.append((source[q], kit))
        if not pairs:
            continue
        n = len(pairs)
        agree = sum(s == k for s, k in pairs)
        p_s, p_k = sum(s for s, _ in pairs) / n, sum(k for _, k in pairs) / n
        expected = p_s * p_k + (1 - p_s) * (1 - p_k)
        kappa = (agree / n - expected) / (1 - expected) if expected < 1 else None
        out.append({"protocol": protocol, "judge": next(j["judge_model"] for j in judgements if j["protocol"] == protocol),
                    "n": n, "agree": agree, "agreement": 100 * agree / n, "kappa": kappa,
                    "source_yes_kit_no": sum(s and not k for s, k in pairs),
                    "source_no_kit_yes": sum(k and not s for s, k in pairs),
                    "j_source": 100 * p_s, "j_kit": 100 * p_k})
    return out


def length_rows(answers: list[dict], scores: dict[tuple, dict]) -> list[list[Any]]:
    """Per category: mean words of the imported answers and of the gold, beside official F1."""
    rows = []
    for cat in sorted({a["category"] for a in answers}) + ["overall"]:
        group = [a for a in answers if cat == "overall" or a["category"] == cat]
        words = [len(str(a["prediction"] or "").split()) for a in group]
        golds = [len(str(a["gold"]).split()) for a in group if a.get("gold")]
        f1 = [scores[(a["sample_id"], a["question_index"])]["locomo_f1"] for a in group]
        rows.append([f"{cat} {CATEGORY_NAMES.get(cat, '')}".strip() if cat != "overall" else "overall", len(group),
                     statistics.mean(words), statistics.mean(golds) if golds else None, 100 * statistics.mean(f1)])
    return rows


def imported_sections(run: RunFolder, s: dict[str, Any], conversations: list[Conversation],
                      order: list[str]) -> list[str]:
    """Every section of an imported run's report after the banner (see the module doc)."""
    block = imported(s["manifest"]) or {}
    answers = list(s["_answers"].values())
    original = {(x["sample_id"], x["question_index"]): x for x in s["_scores"]}
    audited = {(x["sample_id"], x["question_index"]): x for x in load_scores(run, s["config_key"], "audited")}
    f1, mf1, b1 = _by_cat(s["locomo_f1"]), _by_cat(s["mem0_f1"]), _by_cat(s["bleu1"])
    lines = ["## Run facts", ""]
    lines += markdown_table(["fact", "value"], [
        ["run id", s["run_id"]], ["system (as the source says)", block.get("system")],
        ["answerer (as the source says)", block.get("answerer")], ["judge (as the source says)", block.get("judge")],
        ["answers", "produced elsewhere, imported; no retrieved context imported, so no retrieval diagnostics"],
        ["files", "; ".join(f"{f['name']} sha256 {f['sha256']}" for f in block.get("files", []))],
        ["format", f"preset {block['preset']}" if block.get("preset") else "generic mapping"],
        ["mapping", "`" + json.dumps(block.get("mapping", {}), sort_keys=True) + "`"],
        ["catalogue entry", (block.get("catalogue") or {}).get("entry", "–")],
        ["question text matched with", block.get("normalisation", "–")],
        ["dataset sha256", str(s["manifest"].get("dataset", {}).get("sha256", "–"))],
        ["report written", utc_now()]])

    lines += ["## 1. The kit's footing: F1 per category", "",
              "Official LoCoMo token F1 (%) with a percentile-bootstrap 95% interval, Mem0's F1 and BLEU-1 (%), over the "
              "matched questions under the original gold key; answer length (mean words of the imported answers and "
              "of the gold) beside it: a full-sentence answerer scores low F1 for reasons unrelated to memory.", ""]
    lengths = {r[0]: r for r in length_rows(answers, original)}
    rows = []
    for c in [k for k in f1 if k != "overall"] + ["overall"]:
        name = f"{c} {f1[c]['name']}" if c != "overall" else "overall"
        ln = lengths.get(name, [None] * 5)
        rows.append([name, f1[c]["count"], f1[c]["mean"], interval(f1[c]['ci_low'], f1[c]['ci_high']),
                     mf1.get(c, {}).get("mean"), b1.get(c, {}).get("mean"), ln[2], ln[3]])
    lines += markdown_table(["category", "n", "official F1", "95% CI", "Mem0 F1", "BLEU-1", "answer words", "gold words"], rows)
    lines += floor_lines({"measured": False, "why": "the answers were produced elsewhere, so their answerer cannot be "
                          "run here with an empty context"})
    one_to_four = [x["locomo_f1"] for x in original.values() if x["category"] != 5]
    if one_to_four and 5 in s["questions_by_category"]:
        lines += [f"Official F1 over categories 1-4 only: {num(100 * statistics.mean(one_to_four))}% "
                  f"({len(one_to_four)} questions).", ""]

    claim = claim_check(block, answers, order)
    lines += ["## 2. The source's J, recomputed from its verdicts, beside its claim", ""]
    if claim.get("error"):
        lines += [f"> {claim['error']}", ""]
    else:
        js, j14 = claim["j_scope"], claim["j_1_4"]
        scope = claim["scope"].get("description") or ("every record of the file with a verdict, matched or not" if not claim["scope"]
                                                      else json.dumps(claim["scope"]))
        verdict = ("no claim was given (`--claim`) or found in the file" if claim["claim"] is None else
                   f"the file carries no verdicts to recompute the claim {claim['claim']} from" if "agrees" not in claim
                   else
                   f"**{'agrees' if claim['agrees'] else 'does not agree'}** with the claim {claim['claim']} "
                   f"({claim['claim_from']}; difference {signed(claim['difference'], 2)} points)")
        lines += markdown_table(["J from the source's verdicts", "questions", "J %", "95% Wilson CI"], [
            [f"over the claim's scope ({scope})", claim["n_scope"], js[0], interval(js[1], js[2])],
            ["over categories 1-4 (the kit's footing)", claim["n_1_4"], j14[0], interval(j14[1], j14[2])]])
        lines += [f"Recomputed over the claim's scope: {verdict}."
                  + (f" The scope leaves out {claim['excluded']} questions listed by the source." if claim["excluded"]
                     else ""), ""]
        cat_claims = ((block.get("catalogue") or {}).get("claim_by_category") or {})
        if cat_claims:
            rows = []
            for c in (1, 2, 3, 4):
                v = [a["imported"]["verdict"] for a in answers if a["category"] == c and a["imported"].get("verdict") is not None]
                rows.append([f"{c} {CATEGORY_NAMES[c]}", len(v), _j(v)[0], cat_claims.get(str(c))])
            lines += markdown_table(["category", "n", "J recomputed %", "claimed %"], rows)

    flips = audited_flips(answers, audited)
    lines += ["## 3. Both gold keys", "",
              f"The LoCoMo audit changes the gold answer of {flips['changed']} matched questions; the source judged "
              f"{flips['judged']} of them against the original key and accepted {flips['accepted_against_original']}. "
              f"**The audited key flips {flips['flipped']} of the source's verdicts** by the kit's token rule "
              f"({flips['to_wrong']} CORRECT → WRONG: the answer shares no token with the audited gold; "
              f"{flips['to_right']} WRONG → CORRECT: official F1 ≥ 0.5 against it): the source's J under the audited "
              f"key would be {num(flips['j_audited'][0])}% (categories 1-4). A judge's verdicts under the audited key "
              "need the kit's judge (`--judge-model`).", ""]
    if audited:
        af1 = _by_cat(s["audited"]["locomo_f1"]) if s.get("audited") else {}
        lines += markdown_table(["gold key"] + [f"cat {c}" for c in (1, 2, 3, 4)] + ["overall"],
                        [["original: official F1"] + [f1.get(c, {}).get("mean") for c in (1, 2, 3, 4)]
                         + [f1["overall"]["mean"]],
                         ["audited: official F1"] + [af1.get(c, {}).get("mean") for c in (1, 2, 3, 4)]
                         + [af1.get("overall", {}).get("mean")]])

    check = source_score_check(answers, original)
    lines += ["## 4. The source's own per-question scores against the kit's", ""]
    if check:
        rows = [[k, v["kit_metric"], v["compared"], v["differ"], num(v["max_abs_diff"], 6)] for k, v in check.items()]
        lines += markdown_table(["source's field", "the kit's recomputation", "compared", f"differ (> {SCORE_TOLERANCE:g})",
                         "largest difference"], rows)
        for k, v in check.items():
            for e in v["examples"]:
                lines.append(f"- {k}: {e['sample_id']} q{e['question_index']}: source {e['source']}, kit {e['kit']}")
        lines.append("")
    else:
        lines += ["The file carries no per-question scores of its own.", ""]

    if 5 in s["questions_by_category"]:
        adv = [x for x in original.values() if x["category"] == 5]
        refused = sum(x["locomo_f1"] for x in adv)
        src = [a["imported"]["verdict"] for a in answers if a["category"] == 5 and a["imported"].get("verdict") is not None]
        lines += ["## 5. Adversarial questions: the refusal rule", "",
                  f"{len(adv)} adversarial answers. The official rule counts an answer right when it contains \"no "
                  f"information available\" or \"not mentioned\": {int(refused)} of {len(adv)} "
                  f"({num(100 * refused / len(adv))}%) do."
                  + (f" The source's own verdicts accept {sum(src)} of {len(src)} ({num(100 * sum(src) / len(src))}%)."
                     if src else ""), ""]

    agreement = kit_judge_agreement(answers, s["_judgements"])
    lines += ["## 6. The kit's judge beside the source's verdicts", ""]
    if agreement:
        lines += markdown_table(["protocol", "kit judge", "questions", "agreement %", "Cohen's kappa", "J source %", "J kit %",
                         "source yes, kit no", "source no, kit yes"],
                        [[a["protocol"], a["judge"], a["n"], a["agreement"], num(a["kappa"], 3), a["j_source"], a["j_kit"],
                          a["source_yes_kit_no"], a["source_no_kit_yes"]] for a in agreement])
    else:
        lines += ["Not judged here: pass `--judge-model` (to `import` or `score --run-id …`) to put every imported run's "
                  "J on one judge, protocol and calibration.", ""]

    listed = json.loads((run.path / IMPORT_FILE).read_text(encoding="utf-8"))["listed"] if (run.path / IMPORT_FILE).is_file() else []
    lines += ["## 7. Records not matched or noted", ""]
    if listed:
        lines += [f"{len(listed)} records (all of them in `{IMPORT_FILE}`; the first {min(len(listed), LISTED_IN_REPORT)} "
                  "here):", ""]
        lines += markdown_table(["file", "record", "conversation", "index", "reason", "question in the file", "LoCoMo's"],
                        [[r["file"], r["position"], r["conversation"], r["index"], r["reason"],
                          str(r["question"] or "–").replace("|", "/"), str(r.get("locomo_question") or "–").replace("|", "/")]
                         for r in listed[:LISTED_IN_REPORT]])
    else:
        lines += ["Every record matched a LoCoMo question.", ""]
    lines += ["## 8. Retrieval diagnostics", "", "None: the file carries no retrieved context, so evidence recall and "
              "the other retrieval measures cannot be computed for this run.", ""]
    lines += matrix_lines(judge_matrix(run), heading="## 9. Judges side by side")
    return lines


def build_imported_report(run: RunFolder, conversations: list[Conversation],
                          order: list[str] | None = None) -> tuple[Path, list[Path], dict]:
    """Write ``report.md`` (and the HTML explorer) of an imported run; ``order``: the dataset's sample ids in
    file order (for scopes that name conversations by position)."""
    s = summarize_run(run)
    block = imported(s["manifest"]) or {}
    f1 = _by_cat(s["locomo_f1"])
    order = order or [c.sample_id for c in conversations]
    lines = [f"# LoCoMo report: {s['run_id']}", "", f"Configuration: **{s['manifest'].get('config_label')}**.", ""]
    lines += coverage_banner(block)
    lines += [f"**Summary.** {s['questions']} questions answered elsewhere by {block.get('system')}; official F1 "
              f"{num(f1['overall']['mean'])}% {interval(f1['overall']['ci_low'], f1['overall']['ci_high'])}.", ""]
    lines += imported_sections(run, s, conversations, order)
    path = run.path / "report.md"
    write_atomic(path, "\n".join(lines))
    html = write_run_html(run, conversations, path)
    run.update_manifest(report={"written_at": utc_now(), "path": str(path), "html": str(html)})
    return path, [], s
