"""Judges checked against labelled answers: the judge bank as a calibration set for any judge and protocol.

The bank (colophon-claims/locomo-judge-report, ``final-bank.json``, CC BY-NC 4.0) holds 240 candidate
answers to LoCoMo questions, 80 per class: ``correct``, ``specific-wrong`` (commits to a wrong fact)
and ``vague-topical-wrong`` (on topic, avoids the fact), 20 per class and category 1-4.
:func:`run_judge_bank` grades them through the kit's judge (:mod:`locomo_kit.scoring.judge`: the
same prompts, parsing, cache and call pool as a run's judging), into a folder under
``outputs/judge-bank/`` (rerunning resumes), and reports per class the acceptance rate with a Wilson
95% interval; an item counts as accepted when the majority of its judge runs say CORRECT (binary
protocols: mean > 0.5) or its mean score is at least 50 (playbook). Beside them: the rates the bank's
authors published in REPORT.md for the same prompt where one exists (their ``mem0`` row is Mem0's
own prompt; the kit's ``mem0`` protocol paraphrases it, so the two are close, not identical).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from locomo_kit.data_fetch import sha256_file
from locomo_kit.imported.catalogue import fetch_entry
from locomo_kit.llm import make_llm
from locomo_kit.llm.execute import CallSettings
from locomo_kit.paths import outputs_dir
from locomo_kit.pipeline.stages import llm_cache_path
from locomo_kit.reports.numbers import num
from locomo_kit.runs import RunFolder, slug, utc_now
from locomo_kit.runs.records import load_judgements
from locomo_kit.scoring.aggregate import wilson_ci
from locomo_kit.scoring.judge import Judge as LLMJudge
from locomo_kit.scoring.judge import judge_answers
from locomo_kit.settings import Judge

CLASSES = ("correct", "specific-wrong", "vague-topical-wrong")
PUBLISHED_NAMES = {"mem0": "mem0"}  # the kit's protocol → the REPORT.md configuration with the same prompt
_REPORT_COLUMNS = {"specific-wrong": 1, "vague-topical-wrong": 2, "correct": 3}  # table 1: accepted, accepted, rejected
_RATE = re.compile(r"(\d+)/(\d+), ([\d.]+)% \(([\d.]+) to ([\d.]+)\)")


class JudgeBankError(ValueError):
    """The bank file is not a judge bank (what is wrong and what to do)."""


def load_bank(path: str | Path) -> list[dict[str, Any]]:
    """The bank's items as answer records the judge reads (``sample_id`` ``bank``, index = item position)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise JudgeBankError(f"{path}: not a readable JSON judge bank ({exc})") from None
    items = data.get("items") if isinstance(data, dict) else None
    if not isinstance(items, list) or not items:
        raise JudgeBankError(f"{path}: no 'items' list: expected the judge bank's final-bank.json")
    key = sha256_file(path)[:12]
    out = []
    for i, item in enumerate(items):
        missing = [k for k in ("question", "referenceAnswer", "candidateAnswer", "intendedClass", "category")
                   if k not in item]
        if missing:
            raise JudgeBankError(f"{path}: item {i} lacks {', '.join(missing)}")
        if item["intendedClass"] not in CLASSES:
            raise JudgeBankError(f"{path}: item {i} has class {item['intendedClass']!r}, not one of {', '.join(CLASSES)}")
        cat = int(item["category"])
        out.append({"sample_id": "bank", "question_index": i, "question": item["question"],
                    "gold": str(item["referenceAnswer"]), "prediction": str(item["candidateAnswer"]), "category": cat,
                    "category_name": {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}.get(cat, str(cat)),
                    "config_key": f"judge-bank-{key}", "answerer": "judge-bank", "intended_class": item["intendedClass"],
                    "source_question_id": item.get("sourceQuestionId")})
    return out


def published_rates(report_md: str | Path) -> dict[str, dict[str, dict[str, Any]]]:
    """REPORT.md's table of acceptance per configuration: {config: {class: {k, n, rate, low, high}}}; for the
    ``correct`` class the published column is the rejection rate, turned into acceptance here."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    path = Path(report_md)
    if not path.is_file():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not all(_RATE.fullmatch(c) for c in cells[1:]):
            continue
        row = {}
        for cls, col in _REPORT_COLUMNS.items():
            k, n, rate, low, high = _RATE.fullmatch(cells[col]).groups()
            k, n = int(k), int(n)
            if cls == "correct":
                row[cls] = {"k": n - k, "n": n, "rate": 100 - float(rate), "low": 100 - float(high),
                            "high": 100 - float(low)}
            else:
                row[cls] = {"k": k, "n": n, "rate": float(rate), "low": float(low), "high": float(high)}
        out[cells[0]] = row
    return out


def accepted(judgement: dict) -> bool:
    if judgement["protocol"] == "playbook":
        return judgement["mean"] >= 50
    return judgement["mean"] > 0.5


def acceptance(items: list[dict], *, judgements: list[dict]) -> dict[str, dict[str, Any]]:
    """Per class (and per class and category): accepted / judged, the rate and its Wilson 95% interval."""
    by_index = {int(j["question_index"]): j for j in judgements if j.get("n_ok")}
    out: dict[str, dict[str, Any]] = {}
    groups = [(cls, None) for cls in CLASSES] + [(cls, c) for cls in CLASSES for c in (1, 2, 3, 4)]
    for cls, cat in groups:
        group = [it for it in items if it["intended_class"] == cls and (cat is None or it["category"] == cat)]
        judged = [by_index[it["question_index"]] for it in group if it["question_index"] in by_index]
        k = sum(accepted(j) for j in judged)
        low, high = wilson_ci(k, len(judged)) if judged else (float("nan"), float("nan"))
        out[cls if cat is None else f"{cls}/category-{cat}"] = {
            "k": k, "n": len(judged), "items": len(group), "rate": 100 * k / len(judged) if judged else None,
            "low": 100 * low if judged else None, "high": 100 * high if judged else None}
    right = out["correct"]["k"] + sum(out[c]["n"] - out[c]["k"] for c in CLASSES[1:])
    n = sum(out[c]["n"] for c in CLASSES)
    out["agreement"] = {"k": right, "n": n, "rate": 100 * right / n if n else None}
    return out


def run_judge_bank(judge: Judge | str, *, bank: str | Path | None = None, report_md: str | Path | None = None,
                   out: str | Path | None = None, calls: CallSettings | None = None) -> dict[str, Any]:
    """Judge the bank with ``judge`` (a :class:`~locomo_kit.settings.Judge`: its model, or ``llm`` instead, e.g. the
    scripted one in tests; its runs default to three, as REPORT.md; a model string alone is judged under the
    ``mem0`` protocol) and write ``judge-bank.md`` and ``judge-bank.json``; returns the result."""
    judge = judge if isinstance(judge, Judge) else Judge(model=judge, protocol="mem0")
    protocol, runs, llm, log = judge.protocol, judge.runs, judge.llm, calls.log if calls else print
    if bank is None:
        _, files, aux = fetch_entry("judge-bank")
        bank, report_md = files[0], report_md or aux.get("REPORT.md")
    bank = Path(bank)
    report_md = Path(report_md) if report_md else bank.with_name("REPORT.md")
    items = load_bank(bank)
    if llm is None:
        llm = make_llm(judge.model, base_url=judge.base_url, cache_path=llm_cache_path(), timeout=judge.timeout)
    grader = LLMJudge(llm, protocol=protocol, runs=runs if runs is not None else 3)  # REPORT.md: majority of three
    folder = Path(out) if out else outputs_dir() / "judge-bank" / slug(f"{grader.model}-{protocol}-{grader.runs}")
    run = RunFolder(folder.name, root=folder.parent)
    judge_answers(run, grader, items, progress=False, settings=calls, log=log)
    key = items[0]["config_key"]
    judgements = [j for j in load_judgements(run, protocol) if j["answer_config_key"] == key
                  and j["judge_model"] == grader.model and j["n_runs"] == grader.runs]
    rates = acceptance(items, judgements=judgements)
    published = published_rates(report_md).get(PUBLISHED_NAMES.get(protocol, ""), {})
    result = {"judge": grader.model, "protocol": protocol, "prompt_version": grader.prompt_version, "runs": grader.runs,
              "bank": {"path": str(bank), "sha256": sha256_file(bank), "items": len(items)}, "rates": rates,
              "published": {"configuration": PUBLISHED_NAMES.get(protocol), "rates": published,
                            "source": str(report_md) if published else None},
              "failed": len(items) - len({j["question_index"] for j in judgements if j.get("n_ok")}),
              "written_at": utc_now()}
    lines = judge_bank_markdown(result)
    (folder / "judge-bank.md").write_text("\n".join(lines), encoding="utf-8")
    (folder / "judge-bank.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    result["console"] = [ln for ln in lines if ln.startswith("|") and "---" not in ln] + [
        f"written: {folder / 'judge-bank.md'} (+ judge-bank.json)"]
    return result


def _pct(r: dict | None) -> str:
    if not r or r.get("rate") is None:
        return "–"
    return f"{r['k']}/{r['n']}, {num(r['rate'])}% ({num(r['low'])} to {num(r['high'])})"


def judge_bank_markdown(result: dict[str, Any]) -> list[str]:
    rates, pub = result["rates"], result["published"]["rates"]
    lines = [f"# Judge bank: {result['judge']}, {result['protocol']} protocol ({result['prompt_version']}, "
             f"{result['runs']} runs per item)", "",
             f"Bank {result['bank']['path']} (sha256 {result['bank']['sha256'][:12]}, {result['bank']['items']} items). "
             "Accepted: the majority of the judge runs say CORRECT (playbook: mean score ≥ 50). Wilson 95% intervals.", ""]
    if result["failed"]:
        lines += [f"> **{result['failed']} items have no valid judge run: the rates cover the rest.**", ""]
    lines += ["| class | accepted (this judge) | published for the same prompt |", "|---|---|---|"]
    for cls in CLASSES:
        lines.append(f"| {cls} | {_pct(rates[cls])} | {_pct(pub.get(cls))} |")
    a = rates["agreement"]
    lines += ["", f"Agreement with the labels: {a['k']}/{a['n']}"
              + (f" ({num(a['rate'])}%)" if a["rate"] is not None else "") + ".", ""]
    lines += ["Published: " + (f"REPORT.md's `{result['published']['configuration']}` configuration (gpt-4o-mini at "
                               "temperature 0, majority of three; Mem0's own prompt, which the kit's mem0 protocol "
                               "paraphrases)." if pub else "no published rates for this prompt."), ""]
    lines += ["| class / category | accepted |", "|---|---|"]
    lines += [f"| {k} | {_pct(v)} |" for k, v in rates.items() if "/category-" in k]
    return lines + [""]
