"""Systems broken in one way, for tests that must see the kit catch them (importable by module path:
``--system support.broken_systems:ExactTextOnly``)."""

from __future__ import annotations

from locomo_kit.systems.bm25 import BM25System


class ExactTextOnly(BM25System):
    """Finds only the turns that hold the whole query as it is (a substring match, as the official MCP
    memory server's search_nodes does): every turn's own words find it, no question does."""

    def search(self, conversation_id, query, top_k, context_budget=None):
        found = super().search(conversation_id, query, 100, context_budget)
        found.memories = [m for m in found.memories if query.casefold() in m.text.casefold()][:top_k]
        return found
