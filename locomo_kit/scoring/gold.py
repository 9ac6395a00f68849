"""Two gold keys: ``original`` (the released file, comparable to published numbers) and ``audited``.

The audited key applies the independent LoCoMo audit (dial481/locomo-audit ``errors.json``, pinned
in ``data_fetch``): 156 questioned items, ids ``locomo_<conversation index>_qa<question index>``
(indices into the released file's lists). The 57 ``WRONG_CITATION`` entries keep the gold answer
and correct only the evidence turn ids (their ``correct_answer`` field often holds a comment); the
99 others replace the gold answer with ``correct_answer`` and the evidence with
``correct_evidence``. Every entry is mapped by index and must carry the same question text.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from locomo_kit.data_fetch import DataFetchError, fetch_audit
from locomo_kit.dataset import Conversation, load_dataset, normalize_evidence
from locomo_kit.paths import default_dataset_path

GOLD_KEYS = ("original", "audited")
GOLD_CHOICES = ("original", "audited", "both")
EVIDENCE_ONLY = "WRONG_CITATION"
_ID = re.compile(r"locomo_(\d+)_qa(\d+)$")


class AuditError(ValueError):
    """The audit file does not fit the dataset (an unknown id, or a question text that differs)."""


@dataclass(frozen=True)
class AuditEntry:
    question_id: str
    sample_id: str
    question_index: int
    category: int
    error_type: str
    original_answer: str
    answer: str  # the audited gold answer (the original one for WRONG_CITATION)
    evidence: tuple[str, ...]  # the audited evidence turn ids

    @property
    def answer_changed(self) -> bool:
        return self.error_type != EVIDENCE_ONLY


def keys_for(gold: str) -> tuple[str, ...]:
    """``both`` → (original, audited); otherwise the one key."""
    if gold not in GOLD_CHOICES:
        raise ValueError(f"--gold must be one of {', '.join(GOLD_CHOICES)}, got {gold!r}")
    return GOLD_KEYS if gold == "both" else (gold,)


def load_audit(path: str | Path, dataset_order: list[str], conversations: Iterable[Conversation]) -> dict[tuple[str, int], AuditEntry]:
    """Map every audit entry to its question: ``(sample_id, question_index)`` → entry.

    ``dataset_order`` lists the sample ids in the released file's order (the audit's conversation
    index); ``conversations`` are the loaded samples whose entries are kept (others are skipped
    after their id is range-checked). Raises :class:`AuditError` on an id that points nowhere or a
    question text that differs from the dataset's.
    """
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(raw, list):
        raise AuditError(f"{path}: expected a list of audit entries, got {type(raw).__name__}")
    questions = {(c.sample_id, q.index): q for c in conversations for q in c.questions}
    loaded = {c.sample_id for c in conversations}
    asked = {c.sample_id: c.whole[1] if c.whole else 0 for c in conversations}  # questions of the whole conversation
    out: dict[tuple[str, int], AuditEntry] = {}
    for item in raw:
        m = _ID.match(str(item.get("question_id", "")))
        if not m or int(m.group(1)) >= len(dataset_order):
            raise AuditError(f"{path}: audit id {item.get('question_id')!r} names no conversation of the dataset")
        sample_id, index = dataset_order[int(m.group(1))], int(m.group(2))
        if sample_id not in loaded:
            continue
        q = questions.get((sample_id, index))
        if q is None and index < asked[sample_id]:
            continue  # a question left out of a conversation cut to its first sessions (--sessions)
        if q is None:
            raise AuditError(f"{path}: audit id {item['question_id']} names question {index} of {sample_id}, "
                             "which does not exist")
        if q.question.strip() != str(item.get("question", "")).strip():
            raise AuditError(f"{path}: audit id {item['question_id']} is {item.get('question')!r} but "
                             f"{sample_id} question {index} is {q.question!r}")
        error_type = str(item["error_type"])
        original = str(item["golden_answer"])
        answer = original if error_type == EVIDENCE_ONLY else str(item["correct_answer"])
        out[(sample_id, index)] = AuditEntry(str(item["question_id"]), sample_id, index, int(item["category"]),
                                             error_type, original, answer, normalize_evidence(item["correct_evidence"]))
    return out


def gold_for(record: dict, key: str, audit: dict[tuple[str, int], AuditEntry]) -> tuple[object, list[str]]:
    """(gold answer, evidence ids) of an answer record under ``key``."""
    entry = audit.get((record["sample_id"], int(record["question_index"]))) if key == "audited" else None
    if entry is None:
        return record.get("gold"), list(record.get("evidence", []))
    return (entry.answer if entry.answer_changed else record.get("gold")), list(entry.evidence)


def ceilings(questions: Iterable[tuple[str, int, int]], audit: dict[tuple[str, int], AuditEntry]) -> dict:
    """Per category id (and ``overall``) over ``(sample_id, question_index, category)`` of categories 1-4:
    questions, how many gold answers the audit changes, and the ceiling of the original key (%: the
    share of questions whose original gold answer the audit keeps)."""
    total: Counter = Counter()
    changed: Counter = Counter()
    for sample_id, index, category in questions:
        if category == 5:
            continue
        entry = audit.get((sample_id, index))
        for k in (category, "overall"):
            total[k] += 1
            changed[k] += bool(entry and entry.answer_changed)
    return {k: {"questions": total[k], "answers_changed": changed[k],
                "ceiling": 100 * (1 - changed[k] / total[k])} for k in sorted(total, key=str)}


def audit_for(conversations: list[Conversation], dataset_path: str | Path | None = None,
              audit_path: str | Path | None = None) -> dict[tuple[str, int], AuditEntry]:
    """The audit entries of ``conversations``, fetching the pinned audit into ``data/`` if needed."""

    try:
        path = Path(audit_path) if audit_path else fetch_audit()
    except DataFetchError as exc:
        raise DataFetchError(f"The audited gold key needs the LoCoMo audit: {exc} (or score with --gold original)") from None
    order = [c.sample_id for c in load_dataset(dataset_path or default_dataset_path())]
    return load_audit(path, order, conversations)
