"""How the kit asks the Worker for memories: the question as the query, or the kit's keyword fusion.

``question`` (the default) sends the question as the query, as an agent would: what is measured is
the Worker's own retrieval. ``keywords`` is for Workers whose search is keyword-only (claude-mem
without its vector store matches the whole query as one FTS5 phrase, so a whole question finds
nothing): one search per content word of the question, fused on the kit's side by reciprocal rank
fusion. What it measures is the *kit's fusion over the Worker's keyword search*, never the
Worker's own retrieval, and every output that carries its numbers says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from locomo_kit.qa.extractive import STOP
from locomo_kit.worker.client import Observation, WorkerClient

STRATEGIES = ("question", "keywords")
RRF_K = 60
LABELS = {
    "question": "the Worker's own search (question as query)",
    "keywords": "kit-side keyword fusion over the Worker's search (one search per content word, "
                "reciprocal rank fusion): not the Worker's own retrieval",
}
_WORD = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)?")


def content_words(question: str, limit: int = 8) -> list[str]:
    """The question's content words, in order, without stop words or repeats (at most ``limit``)."""
    out: list[str] = []
    for w in _WORD.findall(question):
        w = w.lower()
        w = w[:-2] if w.endswith("'s") else w
        if len(w) > 1 and w not in STOP and w not in out:
            out.append(w)
    return out[:limit]


@dataclass
class Retrieval:
    observations: list[Observation]
    latency_ms: float  # total time the Worker spent answering (all searches, in sequence)
    queries: list[str]


def retrieve(client: WorkerClient | Any, question: str, project: str, k: int, strategy: str = "question",
             context_budget: int | None = None) -> Retrieval:
    """Up to ``k`` memories for ``question``; ``context_budget`` is passed on to the system's own search
    (the kit's fusion ranks single memories: the caller cuts them to the budget). ``client``: anything with
    a Worker client's ``search`` (:class:`~locomo_kit.qa.system_search.SystemSearch` puts any system behind it)."""
    if strategy not in STRATEGIES:
        raise ValueError(f"query strategy must be one of {STRATEGIES}, got {strategy!r}")
    if strategy == "question":
        r = client.search(question, project, limit=k, context_budget=context_budget)
        return Retrieval(r.observations, r.latency_ms, [question])
    words = content_words(question) or [question]
    scores: dict[int, float] = {}
    first: dict[int, Observation] = {}
    latency = 0.0
    for word in words:
        r = client.search(word, project, limit=k)
        latency += r.latency_ms
        for rank, o in enumerate(r.observations):
            scores[o.id] = scores.get(o.id, 0.0) + 1.0 / (RRF_K + rank + 1)
            first.setdefault(o.id, o)
    ranked = sorted(scores, key=lambda oid: (-scores[oid], oid))[:k]
    for oid in ranked:
        first[oid].metadata.setdefault("kit_fusion_score", round(scores[oid], 6))
    return Retrieval([first[oid] for oid in ranked], latency, words)
