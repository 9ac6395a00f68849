"""The adapter contract (locomo_kit.testing.system_contract) against the shipped in-kit systems:
bm25 (bm25s), dense (MiniLM ONNX) and memworker (embedded, both ingestion modes)."""

from __future__ import annotations

import dataclasses

import pytest

from locomo_kit.systems import create
from locomo_kit.systems.bm25 import BM25System
from locomo_kit.systems.turn_store import session_memories
from locomo_kit.testing.system_contract import SystemContract, contract_conversations

from support.broken_systems import ExactTextOnly


class TestBM25(SystemContract):
    @pytest.fixture(scope="class")
    @classmethod
    def system(cls, tmp_path_factory):
        with create("bm25", tmp_path_factory.mktemp("bm25")) as s:
            yield s


class TestDense(SystemContract):
    @pytest.fixture(scope="class")
    @classmethod
    def system(cls, tmp_path_factory):
        with create("dense", tmp_path_factory.mktemp("dense")) as s:
            yield s


class TestMemworker(SystemContract):
    @pytest.fixture(scope="class")
    @classmethod
    def system(cls, tmp_path_factory):
        with create("memworker", tmp_path_factory.mktemp("memworker")) as s:
            yield s


class TestMemworkerTurns(SystemContract):
    @pytest.fixture(scope="class")
    @classmethod
    def system(cls, tmp_path_factory):
        with create("memworker", tmp_path_factory.mktemp("memworker-turns"), mode="turns") as s:
            yield s


# -- the contract can fail: systems broken in one way each are caught ------------------------------
class Duplicating(BM25System):
    """Stores a session's turns again under new keys each time it is sent."""

    sent = 0

    def ingest_session(self, conversation, session):
        out = super().ingest_session(conversation, session)
        self.sent += 1
        self.turns.put([dataclasses.replace(m, dia_id=f"{m.dia_id}-copy{self.sent}")
                        for m in session_memories(conversation, session)])
        return out


class NotForgetting(BM25System):
    def forget(self, conversation_id):
        return 1


class WorstFirst(BM25System):
    def search(self, conversation_id, query, top_k, context_budget=None):
        found = super().search(conversation_id, query, top_k, context_budget)
        found.memories.reverse()
        return found


class WithoutTurnIds(BM25System):
    def search(self, conversation_id, query, top_k, context_budget=None):
        found = super().search(conversation_id, query, top_k, context_budget)
        for m in found.memories:
            m.source_turns = []
        return found



@pytest.mark.parametrize("cls, test", [
    (Duplicating, "test_ingest_is_idempotent"),
    (NotForgetting, "test_forget_removes_the_conversation"),
    (WorstFirst, "test_search_best_first_with_text"),
    (WithoutTurnIds, "test_search_best_first_with_text"),
    (ExactTextOnly, "test_search_answers_locomo_questions"),
])
def test_contract_catches_a_broken_system(cls, test, tmp_path):
    convs = contract_conversations()
    with cls(tmp_path / "store") as system:
        for conv in convs:
            system.forget(conv.sample_id)
        with pytest.raises(AssertionError):
            getattr(SystemContract(), test)(system, convs)
