"""Everything a report shows, recomputed from a run's records (answers, scores, judgements, manifest)."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from typing import Any

import numpy as np

from locomo_kit.costs import cost
from locomo_kit.dataset import CATEGORY_NAMES
from locomo_kit.runs import RunFolder
from locomo_kit.runs.records import load_answers, load_floor, load_judgements, load_scores
from locomo_kit.scoring.aggregate import by_category, summarize
from locomo_kit.scoring.calibration import CONFIG_PREFIX, calibration_rates
from locomo_kit.scoring.gold_judging import audited_config_key
from locomo_kit.scoring.judge import SENTINEL
from locomo_kit.scoring.session_recall import session_sets

COVERAGE_K_REPORTED = ("@5", "@10")


def _pct(rows) -> list[dict]:
    out = []
    for r in rows:
        d = r.as_dict()
        for k in ("mean", "min", "max", "ci_low", "ci_high"):
            d[k] = None if d[k] is None or (isinstance(d[k], float) and math.isnan(d[k])) else 100 * d[k]
        out.append(d)
    return out


def _percentiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p95": None, "p99": None, "mean": None, "n": 0}
    arr = np.asarray(values, dtype=float)
    return {"p50": float(np.percentile(arr, 50)), "p95": float(np.percentile(arr, 95)),
            "p99": float(np.percentile(arr, 99)), "mean": float(arr.mean()), "n": int(arr.size)}


def playbook_j(judgements: list[dict]) -> list[dict]:
    """Per category: mean of per-question means (0-100), pooled std across judge runs (sample, ddof=1, and
    population, ddof=0), counts."""
    if not judgements:
        return []
    groups: dict[int, list[dict]] = defaultdict(list)
    for j in judgements:
        if j["n_ok"]:
            groups[int(j["category"])].append(j)
    rows = []
    for cat in sorted(groups) + ["overall"]:
        js = [j for c in sorted(groups) for j in groups[c]] if cat == "overall" else groups[cat]
        means = [j["mean"] for j in js]
        variances = [j["std"] ** 2 for j in js if not math.isnan(j["std"])]
        pop_variances = [statistics.pvariance(v) for j in js
                         if (v := [r["score"] for r in j["runs"] if r["score"] != SENTINEL])]
        s = summarize([m / 100 for m in means], cat)
        rows.append({"category": cat, "name": s.name, "count": len(js), "mean": 100 * s.mean,
                     "pooled_run_std": math.sqrt(statistics.mean(variances)) if variances else None,
                     "pooled_run_std_population": math.sqrt(statistics.mean(pop_variances)) if pop_variances else None,
                     "ci_low": 100 * s.ci_low, "ci_high": 100 * s.ci_high, "ci_method": s.ci_method,
                     "warnings": sum(1 for j in js if j.get("warning"))})
    return rows


def mem0_j(judgements: list[dict]) -> list[dict]:
    """Per category: J % per judge run, then mean ± std across runs (sample and population, named).

    The interval is over *questions*: a Wilson interval on the per-question mean label (the share of
    runs that said CORRECT), n = questions. Pooling labels across runs (n = runs × questions) would
    be about √runs too narrow, since re-judging the same answer is nearly deterministic.
    """
    if not judgements:
        return []
    rows = []
    cats = sorted({int(j["category"]) for j in judgements})
    for cat in cats + ["overall"]:
        js = judgements if cat == "overall" else [j for j in judgements if int(j["category"]) == cat]
        per_run: dict[int, list[float]] = defaultdict(list)
        per_question: list[float] = []
        for j in js:
            labels = [r["score"] for r in j["runs"] if r["score"] != SENTINEL]
            for r in j["runs"]:
                if r["score"] != SENTINEL:
                    per_run[int(r["run"])].append(r["score"])
            if labels:
                per_question.append(statistics.mean(labels))
        run_js = [100 * statistics.mean(v) for _, v in sorted(per_run.items()) if v]
        s = summarize(per_question, cat, binary=True)
        rows.append({"category": cat, "name": s.name, "count": len(js), "mean": statistics.mean(run_js) if run_js else None,
                     "std_sample": statistics.stdev(run_js) if len(run_js) > 1 else 0.0,
                     "std_population": statistics.pstdev(run_js) if run_js else None, "runs": len(run_js),
                     "questions": len(per_question), "ci_low": 100 * s.ci_low, "ci_high": 100 * s.ci_high,
                     "ci_method": "wilson over questions (per-question mean label)"})
    return rows


def retrieval_diagnostics(answered: list[dict]) -> list[dict]:
    """Per category: evidence coverage@k, MRR and NDCG@k of evidence turns, answer in context (%)."""
    diagnostics = []
    with_evidence = [s for s in answered if s["evidence_coverage"].get("@1") is not None]
    for cat in sorted({s["category"] for s in with_evidence}) + ["overall"]:
        ss = with_evidence if cat == "overall" else [s for s in with_evidence if s["category"] == cat]
        row = {"category": cat, "name": CATEGORY_NAMES.get(cat, "overall") if cat != "overall" else "overall",
               "count": len(ss)}
        for k in ("@1", "@3", "@5", "@8", "@10", "@20"):
            vals = [s["evidence_coverage"][k] for s in ss if s["evidence_coverage"].get(k) is not None]
            row[f"coverage{k}"] = 100 * statistics.mean(vals) if vals else None
        rec = [s["evidence_recall"] for s in ss if s.get("evidence_recall") is not None]
        row["recall_all"] = 100 * statistics.mean(rec) if rec else None
        rr = [s["reciprocal_rank"] for s in ss if s.get("reciprocal_rank") is not None]
        row["mrr"] = statistics.mean(rr) if rr else None
        for k in ("@5", "@10"):
            vals = [s["ndcg"][k] for s in ss if (s.get("ndcg") or {}).get(k) is not None]
            row[f"ndcg{k}"] = statistics.mean(vals) if vals else None
        aic = [s["answer_in_context"] for s in ss if s["answer_in_context"] is not None]
        row["answer_in_context"] = 100 * statistics.mean(aic) if aic else None
        row["sessions"] = session_sets(ss)  # session-level recall/hit@k and chance (shares 0-1)
        diagnostics.append(row)
    return diagnostics


def trace_totals(answered: list[dict]) -> dict[str, Any] | None:
    """How the run's retrieved memories were placed on turns (summed over questions, categories 1-4): counts
    per way (``turn_ids``, ``text``, ``none``), the share placed, and the questions whose evidence figures
    are not measured because nothing they retrieved could be placed. None when nothing was traced."""
    traced = [s["trace"] for s in answered if s.get("trace")]
    if not traced:
        return None
    out: dict[str, Any] = {k: sum(int(t.get(k) or 0) for t in traced) for k in ("turn_ids", "text", "none", "retrieved")}
    placed = out["turn_ids"] + out["text"]
    out["share_placed"] = placed / out["retrieved"] if out["retrieved"] else None
    out["questions_not_measured"] = sum(1 for s in answered if str(s.get("coverage_method", "")).startswith("not measured"))
    return out


def latest_set(judgements: list[dict], protocol: str) -> list[dict]:
    """The judgements of one protocol by one judge: a run judged under a protocol by several models (or prompt
    versions, or numbers of runs) holds a verdict set for each; the tables show the latest, never a pool of them
    (every set is in the judge matrix)."""
    mine = [j for j in judgements if j["protocol"] == protocol]
    sets: dict[tuple, list[dict]] = defaultdict(list)
    for j in mine:
        sets[(j["judge_model"], j["prompt_version"], j["n_runs"])].append(j)
    if len(sets) <= 1:
        return mine
    return max(sets.values(), key=lambda js: max(str(j.get("created_at", "")) for j in js))


def judge_tables(judgements: list[dict]) -> dict[str, list[dict]]:
    """J per protocol: playbook (0-100), mem0 and strict (binary), each by its latest judge."""
    return {"playbook": playbook_j(latest_set(judgements, "playbook")),
            "mem0": mem0_j(latest_set(judgements, "mem0")),
            "strict": mem0_j(latest_set(judgements, "strict"))}


def audited_view(run: RunFolder, key: str, judgements_all: list[dict], judgements: list[dict]) -> dict[str, Any] | None:
    """Scores and J under the audited gold key, with the original key's ceilings; None when not scored so."""
    scores = load_scores(run, key, "audited")
    if not scores:
        return None
    answered = [s for s in scores if s["category"] != 5]
    changed = {(s["sample_id"], s["question_index"]) for s in answered if s.get("gold_changed")}
    ceilings = {}
    for cat in sorted({s["category"] for s in answered}) + ["overall"]:
        ss = answered if cat == "overall" else [s for s in answered if s["category"] == cat]
        n_changed = sum((s["sample_id"], s["question_index"]) in changed for s in ss)
        ceilings[cat] = {"questions": len(ss), "answers_changed": n_changed,
                         "ceiling": 100 * (1 - n_changed / len(ss)) if ss else None}
    re_judged = {(j["sample_id"], j["question_index"], j["protocol"]): j for j in judgements_all
                 if j["answer_config_key"] == audited_config_key(key)}
    audited_judgements, missing = [], 0
    for j in judgements:
        q = (j["sample_id"], j["question_index"])
        if q in changed:
            replacement = re_judged.get((*q, j["protocol"]))
            missing += replacement is None
            if replacement is not None:
                audited_judgements.append(replacement)
        else:
            audited_judgements.append(j)
    return {"locomo_f1": _pct(by_category([(s["category"], s["locomo_f1"]) for s in scores])),
            "mem0_f1": _pct(by_category([(s["category"], s["mem0_f1"]) for s in answered])),
            "bleu1": _pct(by_category([(s["category"], s["bleu1"]) for s in answered])),
            "diagnostics": retrieval_diagnostics(answered), "ceilings": ceilings, "answers_changed": len(changed),
            "judge": judge_tables(audited_judgements) if judgements else {},
            "judge_missing": missing}


def summarize_run(run: RunFolder) -> dict[str, Any]:
    manifest = run.manifest()
    answers = load_answers(run, manifest.get("answer", {}).get("config_key"))
    if not answers:
        raise RuntimeError(f"No answers in {run.path}: nothing to report (answer first: locomo-kit run)")
    key = answers[0]["config_key"]
    scores = load_scores(run, key)
    if len(scores) != len(answers):
        raise RuntimeError(f"{run.path}: {len(answers)} answers but {len(scores)} scores: run `locomo-kit score` first")
    by_q = {(a["sample_id"], a["question_index"]): a for a in answers}
    judgements_all = load_judgements(run)
    judgements = [j for j in judgements_all if j["answer_config_key"] == key]

    f1 = _pct(by_category([(s["category"], s["locomo_f1"]) for s in scores]))
    answered = [s for s in scores if s["category"] != 5]
    mem0f1 = _pct(by_category([(s["category"], s["mem0_f1"]) for s in answered]))
    b1 = _pct(by_category([(s["category"], s["bleu1"]) for s in answered]))

    diagnostics = retrieval_diagnostics(answered)

    search = [a["search_latency_ms"] for a in answers if a.get("search_latency_ms") is not None]
    answer_ms = [a["answer_latency_ms"] for a in answers]
    total = [(a.get("search_latency_ms") or 0) + a["answer_latency_ms"] for a in answers]
    tokens = {k: statistics.mean(a[k] for a in answers) for k in ("context_tokens", "input_tokens", "output_tokens")}
    tokens["total_tokens"] = tokens["input_tokens"] + tokens["output_tokens"]

    model = answers[0]["answerer"]
    in_tok = sum(a["input_tokens"] for a in answers)
    out_tok = sum(a["output_tokens"] for a in answers)
    costs = {"answering": {"model": model, "input_tokens": in_tok, "output_tokens": out_tok,
                           "usd": cost(model, in_tok, out_tok) if model != "extractive" else 0.0}}
    floor = [r for r in load_floor(run).values() if r.get("status") == "ok"]
    if floor:  # an LLM answerer's no-memory floor (taken from the floor cache: no tokens in this run)
        i, o = sum(r.get("input_tokens") or 0 for r in floor), sum(r.get("output_tokens") or 0 for r in floor)
        costs["no-memory floor"] = {"model": model, "input_tokens": i, "output_tokens": o, "usd": cost(model, i, o)}
    for protocol in ("playbook", "mem0", "strict"):
        js = [j for j in judgements_all if j["protocol"] == protocol and (j["answer_config_key"] == key or
              j["answer_config_key"] == audited_config_key(key) or j["answer_config_key"].startswith(CONFIG_PREFIX))]
        if js:
            i = sum(r["input_tokens"] for j in js for r in j["runs"])
            o = sum(r["output_tokens"] for j in js for r in j["runs"])
            costs[f"judge ({protocol})"] = {"model": js[0]["judge_model"], "input_tokens": i, "output_tokens": o,
                                            "usd": cost(js[0]["judge_model"], i, o)}
    samples = sorted({a["sample_id"] for a in answers})
    return {
        "run_id": run.run_id,
        "manifest": manifest,
        "samples": samples,
        "questions": len(answers),
        "questions_by_category": {c: sum(1 for a in answers if a["category"] == c) for c in sorted({a["category"] for a in answers})},
        "answerer": model,
        "answerer_label": answers[0]["answerer_label"],
        "source": answers[0]["source"],
        "top_k": answers[0].get("top_k"),
        "prompt_version": answers[0]["prompt_version"],
        "config_key": key,
        "locomo_f1": f1,
        "mem0_f1": mem0f1,
        "bleu1": b1,
        "judge": {**judge_tables(judgements),
                  "models": sorted({(j["protocol"], j["judge_model"], j["prompt_version"], j["n_runs"]) for j in judgements})},
        "calibration": calibration_rates(judgements_all),
        "audited": audited_view(run, key, judgements_all, judgements),
        "diagnostics": diagnostics,
        "trace": trace_totals(answered),
        "latency_ms": {"search": _percentiles(search), "answer": _percentiles(answer_ms), "total": _percentiles(total)},
        "tokens_per_question": tokens,
        "costs": costs,
        "per_conversation": [{"sample_id": sid, "questions": len(v), "locomo_f1": 100 * statistics.mean(v)}
                             for sid in samples for v in [[s["locomo_f1"] for s in scores if s["sample_id"] == sid]]],
        "_scores": scores,
        "_answers": by_q,
        "_judgements": judgements,
    }
