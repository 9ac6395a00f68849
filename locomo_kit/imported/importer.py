"""Import per-question outputs produced elsewhere as a run folder every command treats as a run.

:func:`import_outputs` reads the file(s) with a preset or mapping (:mod:`.formats`), matches each
record to its LoCoMo question (:mod:`.matching`), and writes ``outputs/runs/imported-…/``:

- ``answers.jsonl``: one record per matched question in the schema of
  :class:`locomo_kit.qa.answering.AnswerRecord` (``source`` ``imported``, no retrieved context),
  with what the file said of it under ``imported`` (its text, verdict, own scores);
- ``judgements.jsonl``: the source's own verdicts as a judgement of their own (protocol
  ``source``, judge ``source/<system>``), beside any judgement the kit's judge makes later;
- ``import.json``: every record that did not match (or was skipped), with the reason, and coverage;
- ``manifest.json``: ``imported`` names the files and their sha256, the system, answerer and judge
  the source says it used, the claim, and that the answers were produced elsewhere.

Importing the same files with the same mapping again changes nothing (the run id and the
answers' configuration key derive from the files' sha256 and the mapping).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from locomo_kit.data_fetch import sha256_file
from locomo_kit.dataset import Conversation, load_dataset
from locomo_kit.imported.formats import ImportFormatError, Mapping, read_records
from locomo_kit.imported.identity import IMPORT_FILE, IMPORTED_SOURCE, SOURCE_PROTOCOL
from locomo_kit.imported.matching import NORMALISATION, Match, match_records, reason_counts
from locomo_kit.paths import default_dataset_path, write_atomic
from locomo_kit.qa.answering import AnswerRecord
from locomo_kit.runs import RunFolder, slug, utc_now
from locomo_kit.runs.records import ANSWERS_FILE, JUDGEMENTS_FILE
from locomo_kit.scoring.judge import Judgement

EMPTY_POLICIES = ("score-zero", "skip")
MIN_MATCHED = 0.5  # below this share of matched records a file is taken for another dataset (unless allowed)


@dataclass
class ImportResult:
    run: RunFolder
    records: int
    imported: int
    listed: list[dict]  # records not imported, or imported with a note (empty answers), with the reason
    reasons: dict[str, int]
    coverage: dict[str, Any]
    already: bool = False  # the same files and mapping were imported before: nothing was rewritten
    notes: list[str] = field(default_factory=list)

    def line(self) -> str:
        c = self.coverage
        skipped = ", ".join(f"{k}: {v}" for k, v in self.reasons.items()) or "none"
        return (f"{self.records} records, {self.imported} imported; coverage {c['questions']} of {c['benchmark']} "
                f"LoCoMo questions ({c['questions_1_4']} of {c['benchmark_1_4']} in categories 1-4); "
                f"not imported or noted: {skipped}" + (" (already imported: unchanged)" if self.already else ""))


def _is_empty(prediction: Any) -> bool:
    return prediction is None or (isinstance(prediction, str) and not prediction.strip())


def config_key(shas: list[str], mapping: Mapping, empty_answers: str) -> str:
    blob = json.dumps({"files": sorted(shas), "mapping": mapping.as_dict(), "empty": empty_answers}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def import_outputs(paths: list[str | Path], mapping: Mapping, system: str, *, preset: str | None = None,
                   answerer: str | None = None, judge: str | None = None, claim: float | None = None,
                   claim_scope: dict[str, Any] | None = None, claim_where: str | None = None,
                   catalogue: dict[str, Any] | None = None, run_id: str | None = None,
                   dataset_path: str | Path | None = None, empty_answers: str = "score-zero",
                   allow_partial: bool = False, root: Path | None = None) -> ImportResult:
    """Import ``paths`` (one file, or one per conversation) as a run; see the module doc.

    Raises :class:`ImportFormatError` for a file that cannot be read as ``mapping`` says, or that
    matches no LoCoMo question (or fewer than half of its records, unless ``allow_partial``)."""
    if empty_answers not in EMPTY_POLICIES:
        raise ImportFormatError(f"empty answers: one of {', '.join(EMPTY_POLICIES)}, got {empty_answers!r}")
    files = [Path(p) for p in paths]
    for f in files:
        if not f.is_file():
            raise ImportFormatError(f"{f}: no such file")
    records, info = read_records(files, mapping)
    if not records:
        raise ImportFormatError(f"{', '.join(map(str, files))}: no records found at {mapping.records or 'the top'}: "
                                "nothing to import")
    dataset_path = Path(dataset_path or default_dataset_path())
    conversations = load_dataset(dataset_path)
    matches = match_records(records, conversations)
    ok = [m for m in matches if m.reason is None]
    if not ok or (len(ok) < MIN_MATCHED * len(records) and not allow_partial):
        counts = ", ".join(f"{k}: {v}" for k, v in reason_counts(matches).items())
        first = next((m.listing() for m in matches if m.reason), {})
        raise ImportFormatError(
            f"only {len(ok)} of {len(records)} records match a LoCoMo-10 question ({counts}; first: {first}). "
            "A file for another dataset, or a mapping that names the wrong conversation or question field? "
            + ("Pass --allow-partial to import the matching records anyway." if ok else "Nothing was imported."))
    shas = [sha256_file(f) for f in files]
    key = config_key(shas, mapping, empty_answers)
    run = RunFolder(run_id or slug(f"imported-{system}")[:60] + f"-{key[:10]}", root=root)
    listed = [m.listing() for m in matches if m.reason]
    empty = [m for m in ok if _is_empty(m.record.prediction)]
    for m in empty:
        listed.append({**m.listing(), "reason": "empty answer",
                       "outcome": "imported as an empty answer (scores 0)" if empty_answers == "score-zero"
                       else "skipped"})
    kept = [m for m in ok if not (empty_answers == "skip" and _is_empty(m.record.prediction))]
    reasons = reason_counts(matches)
    if empty:
        reasons["empty answer"] = len(empty)
    coverage = _coverage(kept, conversations)
    result = ImportResult(run, len(records), len(kept), listed, reasons, coverage)
    previous = run.manifest().get("imported", {})
    if previous.get("config_key") == key and (run.path / ANSWERS_FILE).is_file():
        result.already = True
        return result
    claim_value, claim_from = claim, "given with --claim" if claim is not None else None
    if claim_value is None and "claim" in info:
        value = info["claim"]
        claim_value, claim_from = (100 * value if value <= 1 else value), f"the file's {info['claim_path']}"
    answerer_label = answerer or f"{system} (answerer not named by the source)"
    samples = sorted({m.question.sample_id for m in kept}, key=[c.sample_id for c in conversations].index)
    answers = [asdict(_answer(m, key, answerer_label, system)) | {"imported": _source_part(m)} for m in kept]
    judgements = [asdict(_judgement(m, key, answerer_label, system)) for m in kept if m.record.verdict is not None]
    _rewrite(run, ANSWERS_FILE, answers)
    others = [j for j in run.records(JUDGEMENTS_FILE)  # the kit's own judgements of earlier imports stay
              if not (j.get("protocol") == SOURCE_PROTOCOL and j.get("answer_config_key") == key)]
    _rewrite(run, JUDGEMENTS_FILE, others + judgements)
    (run.path / IMPORT_FILE).write_text(json.dumps({"records": len(records), "imported": len(kept),
                                                    "reasons": reasons, "coverage": coverage,
                                                    "normalisation": NORMALISATION, "listed": listed},
                                                   indent=1, ensure_ascii=False), encoding="utf-8")
    label = f"{system}: answered elsewhere, scored here ({answerer_label})"
    run.update_manifest(
        config_label=label, config_id=key,
        answer={"config_key": key, "source": IMPORTED_SOURCE, "retrieval": "none imported"},
        imported={"config_key": key, "produced_elsewhere": True, "imported_at": utc_now(), "system": system,
                  "answerer": answerer or "not named by the source", "judge": judge or "not named by the source",
                  "files": [{"path": str(f.resolve()), "name": f.name, "sha256": s} for f, s in zip(files, shas)],
                  "preset": preset, "mapping": mapping.as_dict(), "empty_answers": empty_answers,
                  "claim": None if claim_value is None else {"j": claim_value, "from": claim_where or claim_from,
                                                             "where": claim_where, "scope": claim_scope or {}},
                  "catalogue": catalogue, "sample": ",".join(samples), "coverage": coverage,
                  "records": len(records), "reasons": reasons, "joined": info.get("joined"),
                  "file_verdicts": {"records": sum(r.verdict is not None for r in records),
                                    "correct": sum(r.verdict is True for r in records)}, "normalisation": NORMALISATION},
        system={"name": system, "version": None, "settings": {"label": "answered elsewhere, scored here"}},
        parameters={"mode": "imported"},
        dataset={"path": str(dataset_path), "sha256": sha256_file(dataset_path)})
    return result


def _coverage(kept: list[Match], conversations: list[Conversation]) -> dict[str, Any]:
    all_q = [q for c in conversations for q in c.questions]
    got = {(m.question.sample_id, m.question.index) for m in kept}
    by_cat = {c: {"answered": sum(1 for m in kept if m.question.category == c),
                  "benchmark": sum(1 for q in all_q if q.category == c)} for c in (1, 2, 3, 4, 5)}
    return {"questions": len(got), "benchmark": len(all_q),
            "questions_1_4": sum(v["answered"] for c, v in by_cat.items() if c != 5),
            "benchmark_1_4": sum(v["benchmark"] for c, v in by_cat.items() if c != 5),
            "by_category": {str(c): v for c, v in by_cat.items()},
            "conversations": len({s for s, _ in got})}


def _answer(m: Match, key: str, label: str, system: str) -> AnswerRecord:
    q = m.question
    prediction = m.record.prediction
    return AnswerRecord(sample_id=q.sample_id, question_index=q.index, question=q.question, category=q.category,
                        category_name=q.category_name, gold=q.answer, adversarial_answer=q.adversarial_answer,
                        evidence=list(q.evidence), prediction="" if _is_empty(prediction) else str(prediction),
                        status="ok", source=IMPORTED_SOURCE, answerer=f"imported/{slug(system)}",
                        answerer_label=label, prompt_version="imported", config_key=key, top_k=None)


def _source_part(m: Match) -> dict[str, Any]:
    r = m.record
    return {"file": r.file, "position": r.position, "question": r.question, "category": r.category,
            "verdict": r.verdict, "gold": None if r.gold is None else str(r.gold), "explanation": r.explanation,
            "f1": r.f1, "bleu": r.bleu, "matched_by": m.by}


def _judgement(m: Match, key: str, label: str, system: str) -> Judgement:
    q, r = m.question, m.record
    score = 1.0 if r.verdict else 0.0
    return Judgement(sample_id=q.sample_id, question_index=q.index, category=q.category, protocol=SOURCE_PROTOCOL,
                     judge_model=f"source/{slug(system)}", prompt_version="source-verdicts", answer_config_key=key,
                     answerer=f"imported/{slug(system)}",
                     runs=[{"run": 0, "score": score, "explanation": r.explanation or "", "error": None,
                            "input_tokens": 0, "output_tokens": 0, "cached": False, "params": {}}],
                     mean=score, std=0.0, n_ok=1, n_runs=1, warning=None)


def _rewrite(run: RunFolder, name: str, rows: list[dict]) -> None:
    run.create()
    write_atomic(run.path / name, (json.dumps(r, default=str, ensure_ascii=False) + "\n" for r in rows), fsync=True)
