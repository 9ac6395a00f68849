"""Retrieval diagnostics that need no LLM: did the memory keep the evidence, and is the answer in
the context? Together they separate "the memory lost it" from "the answerer missed it".
"""

from __future__ import annotations

from typing import Iterable, Mapping

from locomo_kit.scoring.locomo_f1 import stemmed_tokens


def _covered_by_text(turn_text: str, contexts: list[list[str]], min_share: float = 0.8) -> bool:
    want = stemmed_tokens(turn_text)
    if not want:
        return False
    need = set(want)
    return any(len(need & set(ctx)) >= min_share * len(need) for ctx in contexts)


def evidence_coverage(evidence: Iterable[str], retrieved: list[Mapping], turn_text: Mapping[str, str],
                      k: int | None = None) -> tuple[float | None, str]:
    """Share of the question's evidence turns found among the top-``k`` retrieved memories.

    Exact when the Worker reports source turn ids (method ``turn-ids``); otherwise a turn counts as
    found when 80% of its (normalised, stemmed) words appear in one retrieved memory (``text``).
    Returns (None, "no-evidence") for questions without evidence.
    """
    evidence = list(evidence)
    if not evidence:
        return None, "no-evidence"
    top = retrieved[:k] if k else retrieved
    if any(m.get("source_turns") for m in top):
        seen = {t for m in top for t in (m.get("source_turns") or [])}
        return sum(e in seen for e in evidence) / len(evidence), "turn-ids"
    contexts = [stemmed_tokens(str(m.get("content", ""))) for m in top]
    found = sum(_covered_by_text(turn_text.get(e, ""), contexts) for e in evidence)
    return found / len(evidence), "text"


def answer_in_context(gold: str | None, retrieved: list[Mapping]) -> bool | None:
    """Whether every normalised, stemmed token of the gold answer appears in the retrieved memories."""
    if not gold:
        return None
    want = set(stemmed_tokens(str(gold)))
    if not want:
        return None
    have = {t for m in retrieved for t in stemmed_tokens(str(m.get("content", "")))}
    return want <= have
