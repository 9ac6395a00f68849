"""Retrieval diagnostics that need no LLM: did the memory keep the evidence, and is the answer in
the context? Together they separate "the memory lost it" from "the answerer missed it".
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping

from locomo_kit.scoring.locomo_f1 import stemmed_tokens


def covered_by_text(turn_text: str, contexts: list[list[str]], min_share: float = 0.8) -> bool:
    """The text-overlap rule: a turn is found when 80% of its distinct stemmed words appear in one of
    ``contexts`` (each a memory's stemmed tokens). Coverage and compression fidelity both use it."""
    want = stemmed_tokens(turn_text)
    if not want:
        return False
    need = set(want)
    return any(len(need & set(ctx)) >= min_share * len(need) for ctx in contexts)


_covered_by_text = covered_by_text


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


def _memory_hits(evidence: list[str], memory: Mapping, turn_text: Mapping[str, str], by_ids: bool) -> set[str]:
    """The evidence turns one retrieved memory holds (by source turn ids, else by text overlap)."""
    if by_ids:
        return set(evidence) & set(memory.get("source_turns") or [])
    ctx = [stemmed_tokens(str(memory.get("content", "")))]
    return {e for e in evidence if _covered_by_text(turn_text.get(e, ""), ctx)}


def evidence_ranks(evidence: Iterable[str], retrieved: list[Mapping], turn_text: Mapping[str, str],
                   k: int | None = None) -> list[int] | None:
    """1-based ranks (within the top ``k``) of the memories that bring an evidence turn not seen above them.

    None for questions without evidence.
    """
    evidence = list(evidence)
    if not evidence:
        return None
    top = retrieved[:k] if k else retrieved
    by_ids = any(m.get("source_turns") for m in top)  # as evidence_coverage decides
    seen: set[str] = set()
    ranks = []
    for rank, memory in enumerate(top, 1):
        new = _memory_hits(evidence, memory, turn_text, by_ids) - seen
        if new:
            ranks.append(rank)
            seen |= new
    return ranks


def reciprocal_rank(ranks: list[int] | None) -> float | None:
    """1/rank of the first memory holding an evidence turn (0 when none was retrieved); MRR averages it."""
    if ranks is None:
        return None
    return 1.0 / ranks[0] if ranks else 0.0


def ndcg(ranks: list[int] | None, n_evidence: int, k: int) -> float | None:
    """NDCG@k with binary gains: a rank is relevant when it brings an evidence turn not seen above it;
    the ideal ranking puts one new evidence turn at each of the first min(#evidence, k) ranks."""
    if ranks is None or n_evidence == 0:
        return None
    dcg = sum(1 / math.log2(r + 1) for r in ranks if r <= k)
    ideal = sum(1 / math.log2(r + 1) for r in range(1, min(n_evidence, k) + 1))
    return dcg / ideal


PLACES = ("turn_ids", "text", "none")  # how a retrieved memory was placed on LoCoMo turns


def placed_by(memory: Mapping, by_ids: bool, turn_sets: list[set[str]]) -> str:
    """How one retrieved memory was placed, as the evidence figures read it: ``turn_ids`` (turn ids the
    system returned), ``text`` (the 80% text rule, or turn ids the kit found by the text it wrote) or
    ``none``. In a context where any memory has turn ids (``by_ids``), a memory without any is not placed."""
    turns = memory.get("source_turns") or []
    if turns:
        return "text" if memory.get("placed_by") == "text" else "turn_ids"
    if by_ids:
        return "none"
    ctx = set(stemmed_tokens(str(memory.get("content", ""))))
    return "text" if any(need and len(need & ctx) >= 0.8 * len(need) for need in turn_sets) else "none"


def trace(retrieved: list[Mapping], turn_sets: list[set[str]]) -> dict[str, int | float | None]:
    """How many retrieved memories were placed each way (:data:`PLACES`), and the share placed (None when
    nothing was retrieved). ``turn_sets``: the stemmed word set of every turn of the conversation."""
    by_ids = any(m.get("source_turns") for m in retrieved)
    counts = dict.fromkeys(PLACES, 0)
    for m in retrieved:
        counts[placed_by(m, by_ids, turn_sets)] += 1
    placed = counts["turn_ids"] + counts["text"]
    return {**counts, "retrieved": len(retrieved), "share_placed": placed / len(retrieved) if retrieved else None}


def turn_word_sets(turn_text: Mapping[str, str]) -> list[set[str]]:
    """The stemmed word set of each turn (what :func:`trace` places memories on)."""
    return [set(stemmed_tokens(text)) for text in turn_text.values()]
