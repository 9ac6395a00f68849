"""What the single-turn baselines (``bm25``, ``dense``) share: the turn store, ingestion, forgetting,
and search over an index built per conversation from the store (rebuilt when the store changes)."""

from __future__ import annotations

import time
from abc import abstractmethod
from pathlib import Path
from typing import Any

from locomo_kit.dataset import Conversation, Session
from locomo_kit.systems.base import Health, Memory, MemorySystem, SearchResult, SessionIngest
from locomo_kit.systems.turn_store import TurnMemory, TurnStore, session_memories

STORE_FILE = "memories.sqlite"


class TurnSystem(MemorySystem):
    keeps_turn_ids = True
    own_budget = False
    unit = "turns"
    stored_noun = "turns"  # one memory per turn
    settings_defaults: dict[str, Any] = {}  # every setting a subclass takes, with its default
    semantic = "n/a"  # what its health reports as semantic search
    needs_vectors = False  # store a vector beside each turn (see vectors())

    def __init__(self, store: Path, **options: Any) -> None:
        unknown = set(options) - set(self.settings_defaults)
        if unknown:
            raise ValueError(f"{self.name}: unknown setting(s) {', '.join(sorted(unknown))}; known: "
                             f"{', '.join(self.settings_defaults) or 'none'}")
        super().__init__(store, **options)
        self.settings = {**self.settings_defaults, **options}
        self.turns = TurnStore(self.store / STORE_FILE)
        self._index: dict[str, tuple[int, list[TurnMemory], Any]] = {}

    def close(self) -> None:
        self.turns.close()
        self._index.clear()

    def health(self) -> Health:
        try:
            self.turns.db.execute("SELECT 1")
        except Exception as exc:
            return Health(False, f"cannot open {self.turns.path}: {exc}")
        return Health(True, f"store {self.turns.path}", {"semantic_search": self.semantic})

    def ingest_session(self, conversation: Conversation, session: Session) -> SessionIngest:
        memories = session_memories(conversation, session)
        todo = self.turns.missing(memories, with_vector=self.needs_vectors)
        if todo:
            self.turns.put(todo, self.vectors([m.text for m in todo]) if self.needs_vectors else None)
            self._index.pop(conversation.sample_id, None)
        return SessionIngest(self.turns.count(conversation.sample_id, session.number),
                             note=None if todo else "already stored")

    def held(self, conversation_id: str) -> int:
        return self.turns.count(conversation_id)

    def forget(self, conversation_id: str) -> int:
        self._index.pop(conversation_id, None)
        return self.turns.delete(conversation_id)

    def search(self, conversation_id: str, query: str, top_k: int,
               context_budget: int | None = None) -> SearchResult:
        start = time.perf_counter()
        count = self.turns.count(conversation_id)
        cached = self._index.get(conversation_id)
        if cached is None or cached[0] != count:
            memories, vectors = self.turns.load(conversation_id)
            cached = (count, memories, self.build_index(memories, vectors) if memories else None)
            self._index[conversation_id] = cached
        _, memories, index = cached
        ranked = self.rank(index, query, min(top_k, len(memories))) if memories else []
        out = [Memory(text=memories[i].text, source_turns=[memories[i].dia_id], score=round(float(s), 6),
                      id=f"{conversation_id}:{memories[i].dia_id}", session=memories[i].session,
                      date=memories[i].date) for i, s in ranked]
        return SearchResult(out, (time.perf_counter() - start) * 1000, budget_applied=False, queries=[query])

    def vectors(self, texts: list[str]) -> list[bytes | None]:
        """One stored vector per text (float32 bytes) when ``needs_vectors``."""
        return [None] * len(texts)

    @abstractmethod
    def build_index(self, memories: list[TurnMemory], vectors: list[bytes | None]) -> Any:
        """The conversation's search index from its stored memories (in conversation order)."""

    @abstractmethod
    def rank(self, index: Any, query: str, k: int) -> list[tuple[int, float]]:
        """(position in the memories, score) of the best ``k`` for ``query``, best first, score > 0."""
