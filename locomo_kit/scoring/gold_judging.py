"""What the judge grades beside a run's answers: the audited gold key's changed questions, and the
calibration set. Both become answer records with their own config key, so the judge (and its
records, resumption and cache) treats them like any answer, and reports can tell them apart."""

from __future__ import annotations

from locomo_kit.dataset import load_dataset
from locomo_kit.paths import default_dataset_path
from locomo_kit.scoring.calibration import build_calibration_set
from locomo_kit.scoring.gold import audit_for, keys_for

AUDITED_SUFFIX = "#gold=audited"


def audited_config_key(config_key: str) -> str:
    return config_key + AUDITED_SUFFIX


def _conversations(answers: list[dict], dataset_path: str | None):
    samples = {a["sample_id"] for a in answers}
    return [c for c in load_dataset(dataset_path or default_dataset_path()) if c.sample_id in samples]


def audited_answers(answers: list[dict], gold: str, dataset_path: str | None = None) -> list[dict]:
    """Answers whose gold answer the audit changes, re-keyed with the audited gold (empty unless the
    audited key is asked for). Unchanged questions need no second judgement."""
    if "audited" not in keys_for(gold) or not answers:
        return []

    audit = audit_for(_conversations(answers, dataset_path), dataset_path)
    out = []
    for a in answers:
        entry = audit.get((a["sample_id"], int(a["question_index"])))
        if entry is not None and entry.answer_changed:
            out.append(dict(a, gold=entry.answer, config_key=audited_config_key(a["config_key"])))
    return out


def calibration_answers(answers: list[dict], size: int, dataset_path: str | None = None) -> list[dict]:
    """The calibration set of the answers' conversations as answer records (empty when ``size`` is 0)."""
    if size <= 0 or not answers:
        return []

    return [item.as_answer() for item in build_calibration_set(_conversations(answers, dataset_path), size)]
