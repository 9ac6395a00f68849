"""The adapter contract (locomo_kit.testing.system_contract) against the shipped in-kit systems:
bm25 (bm25s), dense (MiniLM ONNX) and memworker (embedded, both ingestion modes)."""

from __future__ import annotations

import dataclasses
import json
import re
import textwrap
from pathlib import Path

import pytest

from locomo_kit.systems import create
from locomo_kit.systems.bm25 import BM25System
from locomo_kit.systems.turn_store import session_memories
from locomo_kit.testing.system_contract import SystemContract, contract_conversations

from support.broken_systems import CountFailsWhenEmpty, DropsEveryOther, ExactTextOnly, OneKeyPerSpeaker


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


def docs_adapter() -> type:
    """The complete minimal adapter docs/systems.md shows, as written there."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "systems.md").read_text()
    code = next(block for block in re.findall(r"```python\n(.*?)```", text, re.S) if "class TinyMemory" in block)
    namespace: dict = {}
    exec(textwrap.dedent(code), namespace)
    return namespace["TinyMemory"]


class TestTheDocsMinimalAdapter(SystemContract):
    @pytest.fixture(scope="class")
    @classmethod
    def system(cls, tmp_path_factory):
        with docs_adapter()(tmp_path_factory.mktemp("tiny")) as s:
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


def test_the_contract_names_both_numbers_of_a_lost_write(tmp_path):
    convs = contract_conversations()
    with OneKeyPerSpeaker(tmp_path / "store") as system:
        with pytest.raises(AssertionError, match=r"acknowledged \d+ writes of conv-26's first 2 sessions and holds 2: "
                                                 r"it lost \d+ of them\. A write key that repeats"):
            SystemContract().test_holds_what_it_acknowledged(system, convs)


@pytest.mark.parametrize("cls, test", [
    (Duplicating, "test_ingest_is_idempotent"),
    (NotForgetting, "test_forget_removes_the_conversation"),
    (WorstFirst, "test_search_best_first_with_text"),
    (WithoutTurnIds, "test_search_best_first_with_text"),
    (ExactTextOnly, "test_search_answers_locomo_questions"),
    (OneKeyPerSpeaker, "test_holds_what_it_acknowledged"),
    (DropsEveryOther, "test_holds_what_it_acknowledged"),
    (CountFailsWhenEmpty, "test_count_on_an_empty_store"),
])
def test_contract_catches_a_broken_system(cls, test, tmp_path):
    convs = contract_conversations()
    with cls(tmp_path / "store") as system:
        for conv in convs:
            system.forget(conv.sample_id)
        with pytest.raises(AssertionError):
            getattr(SystemContract(), test)(system, convs)


SHARING = '''
import pytest
from locomo_kit.systems.bm25 import BM25System
from locomo_kit.testing.system_contract import SystemContract

SENT = []


class Counting(BM25System):
    test = ""

    def ingest_session(self, conversation, session):
        SENT.append((Counting.test, conversation.sample_id, session.number))
        return super().ingest_session(conversation, session)


class TestCounting(SystemContract):
    @pytest.fixture(scope="class")
    @classmethod
    def system(cls, tmp_path_factory):
        with Counting(tmp_path_factory.mktemp("store")) as s:
            yield s

    @pytest.fixture(autouse=True)
    def _name(self, request):
        Counting.test = request.node.name


def test_report():
    import json, pathlib
    pathlib.Path("sent.json").write_text(json.dumps(SENT))
'''


def test_the_read_only_checks_share_one_ingestion_and_the_others_start_empty(pytester, dataset_path, monkeypatch):
    """The five read-only checks ingest both conversations once between them and the forget check uses that
    ingestion up; every other check starts from an empty system; a check that writes in between makes the next
    read-only one ingest again (here: run in the order given)."""
    monkeypatch.setenv("LOCOMO_DATASET", str(dataset_path))
    pytester.makepyfile(test_sharing=SHARING)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=13)
    sent = json.loads((pytester.path / "sent.json").read_text())
    by_test: dict[str, list] = {}
    for test, sample, session in sent:
        by_test.setdefault(test, []).append((sample, session))
    both = [("conv-26", 1), ("conv-26", 2), ("conv-30", 1), ("conv-30", 2)]
    assert by_test["test_search_best_first_with_text"] == both
    for test in ("test_search_answers_locomo_questions", "test_top_k_respected", "test_context_budget_respected",
                 "test_conversations_stay_apart", "test_forget_removes_the_conversation"):
        assert test not in by_test, f"{test} ingested again: {by_test[test]}"
    # a writing check between two read-only ones: the second ingests again, into an emptied system; after the
    # forget check the next read-only one does too
    order = ["test_search_best_first_with_text", "test_ingest_is_idempotent", "test_top_k_respected",
             "test_forget_removes_the_conversation", "test_conversations_stay_apart", "test_report"]
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", *(f"test_sharing.py::{t}" if t == "test_report"
                                           else f"test_sharing.py::TestCounting::{t}" for t in order))
    result.assert_outcomes(passed=6)
    sent = [tuple(s) for s in json.loads((pytester.path / "sent.json").read_text())]
    for test in ("test_top_k_respected", "test_conversations_stay_apart"):
        assert [s[1:] for s in sent if s[0] == test] == both, test
    assert not [s for s in sent if s[0] == "test_forget_removes_the_conversation"]
