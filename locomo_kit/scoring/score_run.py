"""Score a run's saved answers (never the Worker): one record per question and gold key in ``scores.jsonl``.

Gold keys (``gold.py``): ``original`` (the released answers and evidence ids) and ``audited`` (the
LoCoMo audit's corrected answers and evidence ids). Retrieval diagnostics use the key's evidence.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from locomo_kit.dataset import Conversation
from locomo_kit.paths import write_atomic
from locomo_kit.runs import RunFolder, utc_now
from locomo_kit.runs.records import SCORES_FILE
from locomo_kit.scoring.diagnostics import (
    answer_in_context,
    evidence_coverage,
    evidence_ranks,
    ndcg,
    reciprocal_rank,
    trace,
    turn_word_sets,
)
from locomo_kit.scoring.gold import AuditEntry, gold_for
from locomo_kit.scoring.locomo_f1 import locomo_f1
from locomo_kit.scoring.mem0_f1 import bleu1, mem0_f1
from locomo_kit.scoring.session_recall import session_recall

COVERAGE_KS = (1, 3, 5, 8, 10, 20)
NDCG_KS = (5, 10)


@dataclass
class QuestionScore:
    sample_id: str
    question_index: int
    category: int
    config_key: str
    locomo_f1: float
    mem0_f1: float | None  # None for adversarial (no gold answer)
    bleu1: float | None
    evidence_coverage: dict[str, float | None]  # "@k" -> share of evidence turns retrieved
    coverage_method: str
    answer_in_context: bool | None
    evidence_sessions: list[int] = field(default_factory=list)
    gold_key: str = "original"
    gold_changed: bool = False  # the audited key changes this question's gold answer
    reciprocal_rank: float | None = None  # 1/rank of the first memory holding an evidence turn (MRR's term)
    ndcg: dict[str, float | None] = field(default_factory=dict)  # "@k" -> NDCG@k of evidence turns
    evidence_recall: float | None = None  # share of evidence turns among everything retrieved (k = top_k)
    session_recall: dict | None = None  # session-level recall/hit@k with chance levels (scoring.session_recall)
    trace: dict | None = None  # how each retrieved memory was placed on turns (scoring.diagnostics.trace)
    created_at: str = field(default_factory=utc_now)


def score_answer(record: dict, turn_text: dict[str, str], gold_key: str = "original",
                 audit: dict[tuple[str, int], AuditEntry] | None = None,
                 n_sessions: int | None = None, turn_sets: list[set[str]] | None = None) -> QuestionScore:
    """``n_sessions``: the conversation's session count (the chance level's N; default: the sessions
    ``turn_text``'s turn ids name); ``turn_sets``: :func:`~locomo_kit.scoring.diagnostics.turn_word_sets` of
    ``turn_text`` (computed when not given).

    Where memories were retrieved and none of them could be placed on a turn, the evidence figures are not
    measured (None), never 0."""
    cat = int(record["category"])
    pred = record["prediction"] or ""
    gold, evidence = gold_for(record, gold_key, audit or {})
    entry = (audit or {}).get((record["sample_id"], int(record["question_index"])))
    coverage, method = {}, "no-evidence"
    retrieved = record.get("retrieved", [])
    top_k = record.get("top_k") or len(retrieved)
    for k in COVERAGE_KS:
        value, method = evidence_coverage(evidence, retrieved, turn_text, k)
        coverage[f"@{k}"] = value if k <= top_k else None  # beyond what was retrieved: unknown
    recall, _ = evidence_coverage(evidence, retrieved, turn_text, None)
    ranks = evidence_ranks(evidence, retrieved, turn_text, top_k)
    rr = reciprocal_rank(ranks)
    ndcgs = {f"@{k}": ndcg(ranks, len(evidence), k) if k <= top_k else None for k in NDCG_KS}
    if n_sessions is None:
        n_sessions = len({t[1:].split(":")[0] for t in turn_text})
    sessions = session_recall(evidence, retrieved, turn_text, n_sessions)
    traced = trace(retrieved, turn_word_sets(turn_text) if turn_sets is None else turn_sets) if retrieved else None
    if traced and not traced["turn_ids"] and not traced["text"] and evidence:  # nothing could be placed
        coverage, method = {f"@{k}": None for k in COVERAGE_KS}, "not measured: no retrieved memory could be placed"
        rr, ndcgs, recall = None, {f"@{k}": None for k in NDCG_KS}, None
    no_context = record.get("source") == "imported" and not retrieved  # answered elsewhere, no context imported
    if record.get("source") == "full-context" or no_context:
        coverage, method = {f"@{k}": None for k in COVERAGE_KS}, "no context imported" if no_context else "full-context"
        rr, ndcgs, recall, sessions = None, {f"@{k}": None for k in NDCG_KS}, None, None
    return QuestionScore(
        sample_id=record["sample_id"], question_index=int(record["question_index"]), category=cat,
        config_key=record["config_key"], locomo_f1=locomo_f1(pred, gold or "", cat),
        mem0_f1=None if cat == 5 else mem0_f1(pred, gold), bleu1=None if cat == 5 else bleu1(pred, gold),
        evidence_coverage=coverage, coverage_method=method,
        answer_in_context=None if cat == 5 or record.get("source") == "full-context" or no_context
        else answer_in_context(gold, record.get("retrieved", [])),
        evidence_sessions=sorted({int(e[1:].split(":")[0]) for e in evidence}),
        gold_key=gold_key, gold_changed=gold_key == "audited" and entry is not None and entry.answer_changed,
        reciprocal_rank=rr, ndcg=ndcgs, evidence_recall=recall, session_recall=sessions,
        trace=None if record.get("source") == "full-context" else traced,
    )


def score_answers(run: RunFolder, answers: list[dict], conversations: list[Conversation],
                  gold_keys: tuple[str, ...] = ("original",),
                  audit: dict[tuple[str, int], AuditEntry] | None = None) -> list[QuestionScore]:
    """Score every answer under each gold key and rewrite ``scores.jsonl`` atomically (scoring is cheap
    and deterministic); scores of other answer configurations are kept."""
    if "audited" in gold_keys and audit is None:
        raise ValueError("the audited gold key needs the audit (locomo_kit.scoring.gold.load_audit)")
    turn_text = {c.sample_id: {t.dia_id: t.text for t in c.turns} for c in conversations}
    n_sessions = {c.sample_id: len(c.sessions) for c in conversations}
    turn_sets = {sample: turn_word_sets(texts) for sample, texts in turn_text.items()}
    scores = [score_answer(a, turn_text.get(a["sample_id"], {}), key, audit, n_sessions.get(a["sample_id"]),
                           turn_sets=turn_sets.get(a["sample_id"], []))
              for key in gold_keys for a in answers]
    keys = {s.config_key for s in scores}
    kept = [r for r in run.records(SCORES_FILE) if r.get("config_key") not in keys]
    run.create()
    write_atomic(run.path / SCORES_FILE, (json.dumps(r) + "\n" for r in kept + [asdict(s) for s in scores]))
    return scores
