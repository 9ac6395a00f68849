"""Query strategies for any memory system: the kit's keyword fusion (:mod:`locomo_kit.qa.retrieval`) over a
:class:`~locomo_kit.systems.base.MemorySystem`'s own search, and the labels that say which one ran.

``--query-strategy keywords`` is the kit's fusion, never the system's own retrieval: every run, manifest
and report that carries its numbers says so. A system that declares it meaningless
(``keyword_fusion = False``) is refused before anything is ingested.
"""

from __future__ import annotations

from locomo_kit.qa.retrieval import LABELS, STRATEGIES
from locomo_kit.systems import registry
from locomo_kit.systems.base import MemorySystem
from locomo_kit.systems.runner import observation
from locomo_kit.worker.client import ObservationSearch


class SystemSearch:
    """A memory system behind the search the kit's keyword fusion calls (``project``: the conversation)."""

    def __init__(self, system: MemorySystem) -> None:
        self.system = system

    def search(self, query: str, project: str, limit: int = 8, context_budget: int | None = None) -> ObservationSearch:
        found = self.system.search(project, query, limit, context_budget)
        return ObservationSearch(query, [observation(m) for m in found.memories], found.latency_ms, len(found.memories))


def retrieval_label(name: str, strategy: str) -> str:
    """What a system run's retrieval was, as the manifest and the report say it (a Worker's as it always was)."""
    if registry.resolve(name).worker_records:  # a claude-mem Worker API: the labels its runs always had
        return LABELS[strategy]
    if strategy == "keywords":
        return (f"kit-side keyword fusion over {name}'s search (one search per content word, reciprocal rank "
                f"fusion): not {name}'s own retrieval")
    return f"{name}'s own search (question as query)"


def check_query_strategy(name: str, strategy: str) -> None:
    """Raise ``ValueError`` now (before any ingestion) for a strategy the system declares meaningless."""
    if strategy not in STRATEGIES:
        raise ValueError(f"query strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    if strategy != "question" and not registry.resolve(name).keyword_fusion:
        raise ValueError(f"--query-strategy {strategy} is meaningless for {name} (it declares that the kit's keyword "
                         f"fusion does not apply to its search): run it with --query-strategy question")
