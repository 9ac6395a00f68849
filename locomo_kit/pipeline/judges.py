"""Several judges over one run's answers: add verdict sets produced elsewhere, and write the judge matrix.

:func:`add_verdicts` adds a verdict file (or one per conversation) to a run as a named set
(:mod:`locomo_kit.imported.verdicts`); :func:`write_judges` writes ``judges.md`` and ``judges.json``
into the run folder from every set the run holds (:mod:`locomo_kit.reports.judges`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from locomo_kit.data_fetch import sha256_file
from locomo_kit.dataset import load_dataset
from locomo_kit.imported.catalogue import fetch_entry
from locomo_kit.imported.verdicts import VerdictMapping, VerdictSetResult, add_verdict_set
from locomo_kit.llm import make_llm
from locomo_kit.paths import default_dataset_path, outputs_dir, write_atomic
from locomo_kit.pipeline.judge_bank import load_bank, published_rates
from locomo_kit.pipeline.stages import llm_cache_path
from locomo_kit.reports.judges import judge_matrix, matrix_from_sets, matrix_lines
from locomo_kit.runs import RunFolder, utc_now
from locomo_kit.runs.records import ANSWERS_FILE, JUDGEMENTS_FILE
from locomo_kit.runs.verdicts import HUMAN, VERDICTS_PROTOCOL
from locomo_kit.scoring.agreement import proportion
from locomo_kit.scoring.judge import Judge, judge_answers
from locomo_kit.scoring.verdict_sets import run_verdict_sets

JUDGES_MD = "judges.md"
JUDGES_JSON = "judges.json"


def add_verdicts(run: RunFolder, *, files: list[str | Path], name: str, mapping: VerdictMapping,
                 dataset_path: str | Path | None = None) -> VerdictSetResult:
    """Add ``files`` to ``run`` as the verdict set ``name`` (raises ``VerdictImportError`` on bad input)."""
    conversations = load_dataset(Path(dataset_path or default_dataset_path()))
    return add_verdict_set(run, files, name=name, mapping=mapping, conversations=conversations)


def _write_matrix(run: RunFolder, *, lines: list[str], matrix: dict[str, Any]) -> tuple[Path, dict[str, Any]]:
    path = write_atomic(run.path / JUDGES_MD, "\n".join(lines))
    write_atomic(run.path / JUDGES_JSON, json.dumps(matrix, indent=1, ensure_ascii=False, default=str))
    return path, matrix


def write_judges(run: RunFolder, *, rules: bool = True, dataset_path: str | None = None) -> tuple[Path, dict[str, Any]]:
    """Write the run's judge matrix as ``judges.md`` and ``judges.json``; returns the markdown's path and the matrix."""
    matrix = judge_matrix(run, rules=rules, dataset_path=dataset_path)
    lines = [f"# Judges: {run.run_id}", "", f"Written {utc_now()} from {run.path}.", ""]
    lines += matrix_lines(matrix, heading="## The judge matrix", disagreements=50)
    return _write_matrix(run, lines=lines, matrix=matrix)


def _bank_folder(items: list[dict], bank: Path) -> RunFolder:
    """The bank as a run folder: its candidate answers as answers, and people's labels as the set ``human``."""
    key = items[0]["config_key"]
    folder = outputs_dir() / "judge-bank"
    run = RunFolder(f"matrix-{key.removeprefix('judge-bank-')}", root=folder)
    if not (run.path / ANSWERS_FILE).is_file():
        run.create()
        for it in items:
            run.append(ANSWERS_FILE, {**it, "status": "ok", "source": "judge-bank", "answerer_label": "judge bank",
                                      "prompt_version": "judge-bank", "evidence": [], "retrieved": []})
        now = utc_now()
        for it in items:
            label = 1.0 if it["intended_class"] == "correct" else 0.0
            run.append(JUDGEMENTS_FILE, {
                "sample_id": "bank", "question_index": it["question_index"], "category": it["category"],
                "protocol": VERDICTS_PROTOCOL, "judge_model": "verdicts/human", "prompt_version": "bank-labels",
                "answer_config_key": key, "answerer": "judge-bank",
                "runs": [{"run": 0, "score": label, "explanation": f"labelled {it['intended_class']}", "error": None,
                          "input_tokens": 0, "output_tokens": 0, "cached": False, "params": {}}],
                "mean": label, "std": 0.0, "n_ok": 1, "n_runs": 1, "warning": None, "params": {},
                "status": "complete", "failed_runs": [], "created_at": now, "judge_name": HUMAN,
                "label": it["intended_class"], "class": it["intended_class"],
                "verdict_files": [{"name": bank.name, "sha256": sha256_file(bank)}]})
        run.update_manifest(answer={"config_key": key}, bank={"path": str(bank), "sha256": sha256_file(bank),
                                                              "items": len(items)})
    return run


def published_judges(report_md: Path) -> dict[str, dict]:
    """The bank authors' acceptance per class for each judge configuration of REPORT.md, with their agreement."""
    out = {}
    for name, rates in published_rates(report_md).items():
        right = rates["correct"]["k"] + sum(rates[c]["n"] - rates[c]["k"] for c in ("specific-wrong",
                                                                                    "vague-topical-wrong"))
        n = sum(rates[c]["n"] for c in rates)
        out[name] = {**rates, "agreement": proportion(right, n).as_dict()}
    return out


def bank_judges(bank: str | Path | None = None, *, judge_model: str | None = None, protocol: str = "mem0",
                runs: int | None = None, base_url: str | None = None, llm=None, calls=None,
                timeout: float | None = None) -> tuple[Path, dict[str, Any]]:
    """Judges against people on the labelled judge bank: the bank's labels are the judge ``human``; the
    rule-based judges and every kit judge graded here so far (``judge_model`` with ``protocol`` adds one,
    ``llm``: an LLM object instead) are compared with them. Writes ``judges.md``/``judges.json``."""
    report_md = None
    if bank is None:
        _, files, aux = fetch_entry("judge-bank")
        bank, report_md = files[0], aux.get("REPORT.md")
    bank = Path(bank)
    report_md = Path(report_md) if report_md else bank.with_name("REPORT.md")
    items = load_bank(bank)
    run = _bank_folder(items, bank)
    if judge_model or llm is not None:
        if llm is None:
            llm = make_llm(judge_model, base_url=base_url, cache_path=llm_cache_path(), timeout=timeout)
        judge = Judge(llm, protocol=protocol, runs=runs if runs is not None else 3)  # REPORT.md: majority of three
        judge_answers(run, judge, items, progress=False, settings=calls)
    sets, answers = run_verdict_sets(run, audited=False)
    matrix = matrix_from_sets(sets, answers, published=published_judges(report_md)) | {"run_id": run.run_id}
    lines = [f"# Judges against people: the judge bank ({len(items)} labelled answers)", "",
             f"Bank {bank} (sha256 {sha256_file(bank)[:12]}); written {utc_now()}.", ""]
    lines += matrix_lines(matrix, heading="## The judge matrix", disagreements=0)
    return _write_matrix(run, lines=lines, matrix=matrix)
