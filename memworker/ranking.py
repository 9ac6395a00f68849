"""Hybrid retrieval and the seed article's ranking formula.

1. Candidates: the project's best BM25 matches (SQLite FTS5, the memory's own text weighted 1,
   its neighbouring turns 0.4) and best cosine matches of the dense embedding.
2. Similarity (0-1): ``bm25_weight · bm25/bm25_max + (1 - bm25_weight) · max(cos, 0)``, plus
   the speaker boosts of :mod:`memworker.retrieval` (the speaker the query names; of two, both).
3. Floor: a candidate whose similarity is below ``floor × best similarity`` is dropped.
4. Score: ``w1·similarity + w2·importance·decay(age) + w3·recency`` with
   ``decay(age) = 0.5 ** (age_days / half_life)`` (age of the event the memory is about, against
   the reference "now") and ``recency = 0.5 ** (days since last retrieval / half_life)``
   (1 for a memory never retrieved since it was stored).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memworker.extract import STOPWORDS

_QUERY_WORD = re.compile(r"\w+", re.UNICODE)
DAY_MS = 86_400_000


def fts_query(text: str) -> str:
    """An FTS5 MATCH expression from free text: each word quoted, OR-ed; operators cannot leak in."""
    words = []
    for w in _QUERY_WORD.findall(text.lower()):
        if w in STOPWORDS or w in words:
            continue
        words.append(w)
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words[:64])


@dataclass(frozen=True)
class Weights:
    similarity: float = 0.5
    importance: float = 0.3
    recency: float = 0.2
    half_life_days: float = 30.0
    bm25_weight: float = 0.8
    floor: float = 0.45


@dataclass(frozen=True)
class Ranked:
    id: int
    score: float
    similarity: float
    bm25: float
    cosine: float


def rank(bm25: dict[int, float], cosine: dict[int, float], facts: dict[int, dict], now_ms: int,
         wall_ms: int, w: Weights, boost: dict[int, float] | None = None) -> list[Ranked]:
    """Fuse and rank candidates. ``facts[id]`` holds importance, event_epoch, last_accessed_epoch;
    ``boost[id]`` is added to a candidate's similarity (capped at 1)."""
    boost = boost or {}
    ids = set(bm25) | set(cosine)
    if not ids:
        return []
    bmax = max(bm25.values(), default=0.0) or 1.0
    sims = {i: min(1.0, w.bm25_weight * max(bm25.get(i, 0.0), 0.0) / bmax
                   + (1 - w.bm25_weight) * max(cosine.get(i, 0.0), 0.0) + boost.get(i, 0.0))
            for i in ids}
    best = max(sims.values())
    out = []
    for i in ids:
        f = facts.get(i)
        if f is None or sims[i] < w.floor * best:
            continue
        event = f.get("event_epoch")
        event = now_ms if event is None else event
        age_days = max(0.0, (now_ms - event) / DAY_MS)
        decay = 0.5 ** (age_days / w.half_life_days)
        last = f.get("last_accessed_epoch")
        recency = 1.0 if last is None else 0.5 ** (max(0.0, (wall_ms - last) / DAY_MS) / w.half_life_days)
        score = w.similarity * sims[i] + w.importance * float(f.get("importance", 0.5)) * decay + w.recency * recency
        out.append(Ranked(i, score, sims[i], bm25.get(i, 0.0), cosine.get(i, 0.0)))
    out.sort(key=lambda r: (-r.score, r.id))
    return out
