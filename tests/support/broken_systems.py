"""Systems broken in one way, for tests that must see the kit catch them (importable by module path:
``--system support.broken_systems:ExactTextOnly``)."""

from __future__ import annotations

import dataclasses

from locomo_kit.systems.base import MemorySystemError, SessionIngest
from locomo_kit.systems.bm25 import BM25System
from locomo_kit.systems.turn_store import session_memories


class ExactTextOnly(BM25System):
    """Finds only the turns that hold the whole query as it is (a substring match, as the official MCP
    memory server's search_nodes does): every turn's own words find it, no question does."""

    def search(self, conversation_id, query, top_k, context_budget=None):
        found = super().search(conversation_id, query, 100, context_budget)
        found.memories = [m for m in found.memories if query.casefold() in m.text.casefold()][:top_k]
        return found


class DropsEveryOther(BM25System):
    """Acknowledges every turn of a session but keeps only every other one (a store that loses writes)."""

    def ingest_session(self, conversation, session):
        memories = session_memories(conversation, session)
        todo = self.turns.missing(memories[::2], with_vector=False)
        if todo:
            self.turns.put(todo)
            self._index.pop(conversation.sample_id, None)
        return SessionIngest(len(memories))


class OneKeyPerSpeaker(BM25System):
    """Stores each turn under its speaker's name, overwriting the one before (a write key that repeats): it
    acknowledges every turn and holds one memory per speaker."""

    def ingest_session(self, conversation, session):
        memories = session_memories(conversation, session)
        self.turns.put([dataclasses.replace(m, dia_id=t.speaker) for m, t in zip(memories, session.turns)])
        self._index.pop(conversation.sample_id, None)
        return SessionIngest(len(memories))


class CountFailsWhenEmpty(BM25System):
    """Its count fails on a conversation it holds nothing of (as a count tool answering plain text would)."""

    def held(self, conversation_id):
        held = super().held(conversation_id)
        if not held:
            raise MemorySystemError("not JSON: 'No matching context found'")
        return held


class Unplaceable(BM25System):
    """Returns what it finds rewritten past recognition and without turn ids: nothing it retrieves can be placed
    on a LoCoMo turn, by id or by text."""

    def search(self, conversation_id, query, top_k, context_budget=None):
        found = super().search(conversation_id, query, top_k, context_budget)
        for n, m in enumerate(found.memories):
            m.text, m.source_turns = f"memory number {n} of the conversation", []
        return found
