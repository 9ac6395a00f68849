"""Every question of a run as the question explorer shows it (``report.html``): what was asked, both gold
answers, the prediction, every score, each judge run, and the retrieved memories with the evidence turns
marked; built from :func:`locomo_kit.reports.question_records.run_questions`, the run folder's records only."""

from __future__ import annotations

from typing import Any

from locomo_kit.dataset import CATEGORY_NAMES, Conversation
from locomo_kit.reports.errors import correctness, evidence_coverage, failure
from locomo_kit.reports.question_records import GOLD_KEYS, run_questions
from locomo_kit.runs import RunFolder
from locomo_kit.scoring.gold import AuditEntry, audit_for
from locomo_kit.scoring.judge import SENTINEL
from locomo_kit.scoring.verdict_sets import run_verdict_sets


def _audit(conversations: list[Conversation]) -> dict[tuple[str, int], AuditEntry]:
    """The audit entries of the run's conversations, when the audit is on disk (the audited scores needed it)."""

    return audit_for(conversations)


def _judgement(j: dict | None) -> dict | None:
    if not j:
        return None
    return {"protocol": j["protocol"], "judge_model": j["judge_model"], "prompt_version": j["prompt_version"],
            "mean": j["mean"] if j.get("n_ok") else None, "n_ok": j.get("n_ok", 0), "n_runs": j["n_runs"],
            "warning": j.get("warning"),
            "runs": [{"run": r["run"], "score": None if r["score"] == SENTINEL else r["score"],
                      "explanation": r.get("explanation") or "", "error": r.get("error")} for r in j["runs"]]
                    + [{"run": f["run"], "score": None, "explanation": "", "error": f"failed (pending): {f['error']}"}
                       for f in j.get("failed_runs", [])]}


def _scores(score: dict | None, judgements: list[dict], answer: dict | None = None) -> dict | None:
    """One gold key's scores of a question, its outcome (correct?, on what basis) and, when wrong, why
    (``answer``: the prediction and this key's gold, for the rule-based basis)."""
    if score is None:
        return None
    main = next((j for j in judgements if j.get("n_ok")), None)
    ok, basis = correctness(score, main, answer)
    coverage = evidence_coverage(score)
    return {"locomo_f1": score["locomo_f1"], "mem0_f1": score.get("mem0_f1"), "bleu1": score.get("bleu1"),
            "evidence_recall": score.get("evidence_recall"), "coverage": coverage,
            "reciprocal_rank": score.get("reciprocal_rank"), "answer_in_context": score.get("answer_in_context"),
            "trace": score.get("trace"), "coverage_method": score.get("coverage_method"),
            "correct": ok, "basis": basis, "failure": failure(ok, coverage),
            "j": {j["protocol"]: j["mean"] for j in judgements if j.get("n_ok")}}


def explorer_data(run: RunFolder, conversations: list[Conversation],
                  audit: dict[tuple[str, int], AuditEntry] | None = None) -> dict[str, Any]:
    """The explorer's data for ``run``: ``{"rows", "memories", "turns", "gold_keys", "judge_protocols"}``, from
    :func:`locomo_kit.reports.question_records.run_questions`.

    ``rows`` has one entry per answered question (sorted by sample and index). Memories are listed once
    in ``memories`` (rows refer to them by position, best first), and the text of every evidence turn is
    in ``turns`` (``"sample_id dia_id"`` → speaker and text).
    ``audit``: the audit entries (default: loaded when the run was scored under the audited key).
    """
    read = run_questions(run)
    if not read.questions:
        return {"rows": [], "memories": [], "turns": {}, "gold_keys": [], "judge_protocols": [], "judges": []}
    if "audited" in read.gold_keys and audit is None:
        audit = _audit(conversations)
    audit = audit or {}
    key = read.config_key

    turn_index = {c.sample_id: c.turn_index() for c in conversations}
    turns: dict[str, dict] = {}
    memories: list[dict] = []
    memory_at: dict[tuple, int] = {}

    def keep_turn(sample_id: str, dia_id: str) -> None:
        ref = f"{sample_id} {dia_id}"
        t = turn_index.get(sample_id, {}).get(dia_id)
        if ref not in turns and t is not None:
            turns[ref] = {"speaker": t.speaker, "text": t.text, "image": t.image_caption}

    sets, _ = run_verdict_sets(run, config_key=key)
    rows = []
    for question in read.questions:
        a, q = question.answer, question.key
        entry = audit.get(q)
        evidence = list(a.get("evidence", []))
        evidence_audited = list(entry.evidence) if entry else evidence
        marked = set(evidence) | set(evidence_audited)
        retrieved = []
        for m in a.get("retrieved", []):
            sources = list(m.get("source_turns") or [])
            ident = (a["sample_id"], m.get("id"), m.get("content"))
            if ident not in memory_at:
                memory_at[ident] = len(memories)
                memories.append({"content": m.get("content", ""), "source_turns": sources,
                                 "session": m.get("session"), "date": m.get("event_date")})
            retrieved.append({"m": memory_at[ident], "score": m.get("score"),
                              "evidence": sorted(marked & set(sources))})
        for d in marked:
            keep_turn(a["sample_id"], d)
        original_judgements = question.judgements["original"]
        # under the audited key a changed question has its own judgements; the others keep the original ones
        changed = bool(entry and entry.answer_changed)
        audited_judgements = question.judgements["audited"] if changed else original_judgements
        rows.append({
            "sample_id": a["sample_id"], "question_index": q[1], "category": a["category"],
            "category_name": a.get("category_name") or CATEGORY_NAMES.get(a["category"], ""),
            "question": a.get("question", ""), "gold": a.get("gold"),
            "gold_audited": entry.answer if changed else None, "gold_changed": changed,
            "audit_error": entry.error_type if entry else None,
            "adversarial_answer": a.get("adversarial_answer"),
            "evidence": evidence, "evidence_audited": evidence_audited,
            "prediction": a.get("prediction"), "search_ms": a.get("search_latency_ms"),
            "context_tokens": a.get("context_tokens"),
            "scores": {"original": _scores(question.scores.get("original"), original_judgements, a),
                       "audited": _scores(question.scores.get("audited"), audited_judgements,
                                          dict(a, gold=entry.answer) if changed else a)},
            "judgements": {"original": [_judgement(j) for j in original_judgements],
                           "audited": [_judgement(j) for j in question.judgements["audited"]]},
            "retrieved": retrieved,
            "verdicts": {g: {vs.name: {"correct": vs.verdicts[g][q], "reason": vs.reasons.get(q, "")}
                             for vs in sets if q in vs.verdicts.get(g, {})} for g in GOLD_KEYS},
        })
    return {"rows": rows, "memories": memories, "turns": turns, "gold_keys": read.gold_keys,
            "judges": [{"name": vs.name, "kind": vs.kind, "basis": vs.basis} for vs in sets],
            "judge_protocols": sorted({j["protocol"] for q in read.questions for j in q.judgements["original"]})}
