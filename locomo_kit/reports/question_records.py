"""The one read of a run's questions: per answered question, its answer record, its score under each gold key
and its judgements under each gold key. Every per-question view derives from it: the export's flat rows
(:func:`locomo_kit.reports.export_rows.question_rows`), the question explorer of ``report.html``
(:func:`locomo_kit.reports.questions.explorer_data`), through the explorer's rows the cross-run table of
``compare`` and the leaderboard (:mod:`locomo_kit.reports.question_table`), and the per-question metrics that
``compare`` pairs (:func:`locomo_kit.reports.comparison.load_run`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from locomo_kit.runs import RunFolder
from locomo_kit.runs.records import load_answers, load_judgements, load_scores
from locomo_kit.runs.verdicts import VERDICTS_PROTOCOL
from locomo_kit.scoring.gold_judging import audited_config_key

GOLD_KEYS = ("original", "audited")


@dataclass
class QuestionRecords:
    """One answered question: ``answer`` (its record in ``answers.jsonl``), ``scores`` (gold key → its record in
    ``scores.jsonl``; a key is absent when the answer was not scored under it) and ``judgements`` (gold key →
    the judgements of this answer under it, in the order they were recorded)."""

    answer: dict[str, Any]
    scores: dict[str, dict[str, Any]] = field(default_factory=dict)
    judgements: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, int]:
        return self.answer["sample_id"], int(self.answer["question_index"])


@dataclass
class RunQuestions:
    """A run's answered questions (sorted by sample and index) of one answer configuration (``config_key``),
    and the gold keys it was scored under (``gold_keys``, in :data:`GOLD_KEYS` order)."""

    run: RunFolder
    manifest: dict[str, Any]
    config_key: str | None
    questions: list[QuestionRecords]
    gold_keys: list[str]


def run_questions(run: RunFolder) -> RunQuestions:
    """Every answered question of the run's answer configuration (the manifest's, else the latest answered)."""
    manifest = run.manifest()
    answers = load_answers(run, manifest.get("answer", {}).get("config_key"))
    if not answers:
        return RunQuestions(run, manifest, None, [], [])
    key = answers[0]["config_key"]
    scores = {g: {(s["sample_id"], int(s["question_index"])): s for s in load_scores(run, key, g)} for g in GOLD_KEYS}
    by_config = {key: "original", audited_config_key(key): "audited"}
    judged: dict[tuple[str, int], dict[str, list[dict]]] = {}
    for j in load_judgements(run):
        if j["protocol"] == VERDICTS_PROTOCOL:  # imported verdict sets: each its own judge (scoring.verdict_sets)
            continue
        gold = by_config.get(j["answer_config_key"])
        if gold is not None:
            judged.setdefault((j["sample_id"], int(j["question_index"])), {}).setdefault(gold, []).append(j)
    questions = []
    for a in answers:
        q = (a["sample_id"], int(a["question_index"]))
        questions.append(QuestionRecords(a, {g: scores[g][q] for g in GOLD_KEYS if q in scores[g]},
                                         {g: judged.get(q, {}).get(g, []) for g in GOLD_KEYS}))
    return RunQuestions(run, manifest, key, questions, [g for g in GOLD_KEYS if scores[g]])
