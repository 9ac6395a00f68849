"""Single turns as memories, kept in one SQLite file: what the ``bm25`` and ``dense`` baselines store.

Each memory is one LoCoMo turn with its session date and speaker, ``[8 May 2023] Caroline: …``
(the RAG rows of the Mem0 paper index single turns). A turn's ``dia_id`` is its key, so sending a
session again replaces its turns instead of adding them twice.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from locomo_kit.dataset import Conversation, Session
from locomo_kit.systems.turn_text import session_day, turn_line

SCHEMA = """CREATE TABLE IF NOT EXISTS memories (
    conversation TEXT NOT NULL, dia_id TEXT NOT NULL, position INTEGER NOT NULL, session INTEGER NOT NULL,
    date TEXT NOT NULL, text TEXT NOT NULL, vector BLOB, PRIMARY KEY (conversation, dia_id))"""


@dataclass(frozen=True)
class TurnMemory:
    conversation: str
    dia_id: str
    position: int  # order in the conversation (ties in score keep conversation order)
    session: int
    date: str
    text: str


def session_memories(conv: Conversation, session: Session) -> list[TurnMemory]:
    first = sum(len(s.turns) for s in conv.sessions if s.number < session.number)
    return [TurnMemory(conv.sample_id, t.dia_id, first + i, session.number, session_day(session),
                       turn_line(session, t)) for i, t in enumerate(session.turns)]


class TurnStore:
    """The SQLite file ``path`` (created on first use) holding turn memories and, optionally, a vector each."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._db: sqlite3.Connection | None = None

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(SCHEMA)
        return self._db

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def put(self, memories: list[TurnMemory], vectors: list[bytes | None] | None = None) -> None:
        rows = [(m.conversation, m.dia_id, m.position, m.session, m.date, m.text, v)
                for m, v in zip(memories, vectors or [None] * len(memories))]
        with self.db:
            self.db.executemany("INSERT OR REPLACE INTO memories VALUES (?, ?, ?, ?, ?, ?, ?)", rows)

    def missing(self, memories: list[TurnMemory], with_vector: bool = False) -> list[TurnMemory]:
        """The memories not stored yet (or stored without a vector, when ``with_vector``)."""
        cond = " AND vector IS NOT NULL" if with_vector else ""
        have = {r[0] for r in self.db.execute(f"SELECT dia_id FROM memories WHERE conversation = ?{cond}",
                                              (memories[0].conversation,))} if memories else set()
        return [m for m in memories if m.dia_id not in have]

    def count(self, conversation: str, session: int | None = None) -> int:
        sql, args = "SELECT COUNT(*) FROM memories WHERE conversation = ?", [conversation]
        if session is not None:
            sql, args = sql + " AND session = ?", args + [session]
        return int(self.db.execute(sql, args).fetchone()[0])

    def delete(self, conversation: str) -> int:
        with self.db:
            return self.db.execute("DELETE FROM memories WHERE conversation = ?", (conversation,)).rowcount

    def load(self, conversation: str) -> tuple[list[TurnMemory], list[bytes | None]]:
        rows = self.db.execute("SELECT conversation, dia_id, position, session, date, text, vector FROM memories "
                               "WHERE conversation = ? ORDER BY position", (conversation,)).fetchall()
        return [TurnMemory(*r[:6]) for r in rows], [r[6] for r in rows]
