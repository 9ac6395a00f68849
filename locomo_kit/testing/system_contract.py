"""The contract every memory-system adapter must pass, as a pytest base class.

Use it from a test file of your own::

    import pytest
    from locomo_kit.systems import create
    from locomo_kit.testing.system_contract import SystemContract

    class TestMySystem(SystemContract):
        @pytest.fixture(scope="class")
        @classmethod
        def system(cls, tmp_path_factory):
            with create("mysystem", tmp_path_factory.mktemp("store")) as s:
                yield s

The ``system`` fixture yields an *opened* system; it may be shared by the class (every test first
forgets the conversations it uses, except that the read-only checks share one ingestion of both, which the
forget check then uses up). The conversations are the first sessions of two LoCoMo
conversations from ``data/locomo10.json`` (``LOCOMO_DATASET`` to point elsewhere); override the
``conversations`` fixture to use others. What is checked: identity and health; ingestion is
idempotent; a system that stores what it is given holds every write it acknowledged (one that declares it
transforms what it is given, ``transforms``, is exempt); a count on an empty store answers 0; search returns text best first, at most ``top_k``, with exact turn ids when the system
claims them, and finds a stored turn by its own words; real LoCoMo questions about those sessions
(:data:`PROBE_QUESTIONS`, asked as an agent asks them, never a turn's own words) find their evidence
turns, so a search that only matches exact stored text fails; a context budget is respected (by the
system when it claims one, else by the kit's cut); conversations stay apart; forget removes one; and
the kit's resumable ingestion re-sends only what failed.

A system that answers questions only through the kit's keyword fusion (a keyword-only search, such as
claude-mem without its vector store) sets ``query_strategy = "keywords"`` on its test class: the
questions are then asked through that fusion, as ``--query-strategy keywords`` runs do.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from locomo_kit.dataset import Conversation, Question, get_conversation, load_dataset, questions
from locomo_kit.ingestion import ingest_conversations
from locomo_kit.paths import default_dataset_path
from locomo_kit.qa.context import approx_tokens, fit_budget
from locomo_kit.qa.retrieval import retrieve
from locomo_kit.qa.system_search import SystemSearch
from locomo_kit.runs import RunFolder
from locomo_kit.runs.records import INGEST_FILE
from locomo_kit.systems.base import Health, Identity, MemorySystem, MemorySystemError, SearchResult
from locomo_kit.systems.runner import observation

SESSIONS = 2  # sessions of each conversation the contract ingests
SAMPLES = ("conv-26", "conv-30")
# LoCoMo questions (by index) whose evidence lies in the first two sessions: temporal, single-hop and
# open-domain ones, each asked with its own words ("When did Caroline go to the LGBTQ support group?")
PROBE_QUESTIONS = {"conv-26": (0, 1, 3, 5, 6, 82, 84, 86), "conv-30": (0, 1, 6, 7, 8, 39, 41, 46)}
ANSWERED_SHARE = 0.5  # at least this share of the probe questions must find an evidence turn among top_k


def _dataset_path() -> Path:
    return Path(os.environ.get("LOCOMO_DATASET") or default_dataset_path())


def contract_conversations() -> list[Conversation]:
    """The first ``SESSIONS`` sessions of each of ``SAMPLES``."""
    path = _dataset_path()
    if not path.is_file():
        pytest.fail(f"the contract tests need the LoCoMo dataset at {path} (make data)")
    data = load_dataset(path)
    return [dataclasses.replace(get_conversation(data, s), sessions=get_conversation(data, s).sessions[:SESSIONS])
            for s in SAMPLES]


class FailOnce:
    """A proxy for a system whose ``ingest_session`` fails once, for the session numbered ``session``."""

    def __init__(self, system: MemorySystem, session: int) -> None:
        self._system, self._session, self.failed = system, session, False

    def __getattr__(self, name: str):
        return getattr(self._system, name)

    def ingest_session(self, conversation, session):
        if session.number == self._session and not self.failed:
            self.failed = True
            raise MemorySystemError("injected failure (contract test)")
        return self._system.ingest_session(conversation, session)


def probe_questions(conv: Conversation) -> list[Question]:
    """The fixed probe questions of ``conv`` (:data:`PROBE_QUESTIONS`), or, for another conversation, its
    first eight questions of categories 1-4 whose evidence lies in the sessions given."""
    held = {t.dia_id for s in conv.sessions for t in s.turns}
    usable = [q for q in questions(conv) if q.category in (1, 2, 3, 4) and q.evidence and set(q.evidence) <= held]
    fixed = PROBE_QUESTIONS.get(conv.sample_id)
    chosen = [q for q in usable if q.index in fixed] if fixed else usable[:8]
    return chosen or usable[:8]


def reads_only(test):
    """Marks a check that only reads what :meth:`SystemContract.hold` ingested: such checks share one ingestion
    (a slow system's writes are most of the contract's time)."""
    test.reads_only = True
    return test


def uses_up_hold(test):
    """Marks a check that starts from what :meth:`SystemContract.hold` ingested and changes it: the next check
    that reads it ingests again."""
    test.uses_up_hold = True
    return test


class SystemContract:
    """Subclass it and provide a ``system`` fixture (an opened :class:`MemorySystem`)."""

    search_top_k = 10
    query_strategy = "question"  # "keywords": the questions are asked through the kit's keyword fusion

    @pytest.fixture(scope="class")
    @classmethod
    def conversations(cls) -> list[Conversation]:
        return contract_conversations()

    @pytest.fixture(scope="class")
    @classmethod
    def _shared(cls, system) -> dict:
        """The conversation the class's system holds for the read-only checks (``holding``), if any."""
        return {}

    @pytest.fixture(autouse=True)
    def _forget_first(self, request, system, conversations, _shared):
        """Each test starts from an empty system, except that the read-only checks (:func:`reads_only`) and the
        one that uses their ingestion up (:func:`uses_up_hold`) go on from the ingestion the previous such check
        made (:meth:`hold`)."""
        self._shared_state = _shared
        shares = getattr(request.function, "reads_only", False) or getattr(request.function, "uses_up_hold", False)
        if not (shares and _shared.get("holding")):
            _shared["holding"] = None
            for conv in conversations:
                system.forget(conv.sample_id)
        yield
        if getattr(request.function, "uses_up_hold", False):
            _shared["holding"] = None

    @staticmethod
    def ingest_all(system: MemorySystem, conv: Conversation) -> None:
        for session in conv.sessions:
            assert system.ingest_session(conv, session).stored > 0, f"{system.name} stored nothing for session " \
                                                                    f"{session.number}"

    def hold(self, system: MemorySystem, conversations: list[Conversation]) -> None:
        """``conversations`` ingested whole into an otherwise empty system: ingested here unless a read-only
        check of this class did so already and nothing else ran since."""
        shared = getattr(self, "_shared_state", {})
        ids = tuple(conv.sample_id for conv in conversations)
        if shared.get("holding") == ids:
            return
        shared["holding"] = None
        for conv in conversations:
            self.ingest_all(system, conv)
        shared["holding"] = ids

    @staticmethod
    def probe(conv: Conversation):
        """A turn with distinctive words (the longest of the first session) and the query that quotes it."""
        turn = max(conv.sessions[0].turns, key=lambda t: len(t.text))
        return turn, turn.text

    # -- identity and health -------------------------------------------------------------------
    def test_identity_names_name_version_settings(self, system):
        ident = system.identity()
        assert isinstance(ident, Identity)
        assert ident.name and isinstance(ident.name, str)
        assert ident.version is None or (isinstance(ident.version, str) and ident.version)
        assert isinstance(ident.settings, dict)
        assert ident.url
        json.dumps(ident.as_dict())  # plain data: it goes into manifests and over process boundaries
        assert ident.label.startswith(ident.name)

    def test_health(self, system):
        health = system.health()
        assert isinstance(health, Health)
        assert health.ok, f"{system.name} reports it is not usable: {health.detail}"

    # -- ingestion ------------------------------------------------------------------------------
    def test_ingest_is_idempotent(self, system, conversations):
        conv = conversations[0]
        first = system.ingest_session(conv, conv.sessions[0])
        held = system.held(conv.sample_id)
        assert first.stored > 0 and held > 0
        again = system.ingest_session(conv, conv.sessions[0])
        assert again.stored > 0
        assert system.held(conv.sample_id) == held, "sending a session again stored its memories twice"

    def test_holds_what_it_acknowledged(self, system, conversations):
        if system.transforms:
            pytest.skip(f"{system.name} declares it transforms what it is given ({system.transforms}): it holds "
                        "what it makes of it, measured by the kit, not every write")
        conv = conversations[0]
        acknowledged = 0
        for session in conv.sessions:
            got = system.ingest_session(conv, session)
            acknowledged += got.stored if got.acknowledged is None else got.acknowledged
        held = system.held(conv.sample_id)
        assert held >= acknowledged, (
            f"{system.name} acknowledged {acknowledged} writes of {conv.sample_id}'s first {len(conv.sessions)} "
            f"sessions and holds {held}: it lost {acknowledged - held} of them. A write key that repeats (the server "
            "keeps one item per key and overwrites it) is the usual cause: make each write's key unique, e.g. "
            "{dia_id} in an MCP profile; `locomo-kit systems check SYSTEM` shows the writes. A system that rewrites what "
            "it is given declares it (its class's ``transforms``).")

    def test_count_on_an_empty_store(self, system, conversations):
        for conversation_id in (conv.sample_id for conv in conversations):  # each forgotten before this check
            try:
                held = system.held(conversation_id)
            except MemorySystemError as exc:
                raise AssertionError(
                    f"{system.name} cannot count a conversation it holds nothing of ({conversation_id}): {exc}. "
                    "Counting must answer 0 on an empty store (an MCP profile whose count tool answers text such as "
                    "\"No matching context found\" names it in [count] none_if)") from None
            assert held == 0, f"{system.name} holds {held} memories of {conversation_id}, which holds nothing"

    def test_resumable_ingestion(self, system, conversations, tmp_path):
        conv = conversations[0]
        folder = RunFolder("contract", root=tmp_path)
        flaky = FailOnce(system, session=conv.sessions[-1].number)
        first = ingest_conversations(flaky, [conv], folder)
        assert [r.status for r in first.results] == ["ok"] * (SESSIONS - 1) + ["failed"]
        second = ingest_conversations(system, [conv], folder)
        assert second.skipped == SESSIONS - 1, "sessions already recorded ok were sent again"
        assert [r.session for r in second.results] == [conv.sessions[-1].number]
        assert second.succeeded
        held = system.held(conv.sample_id)
        system.forget(conv.sample_id)
        self.ingest_all(system, conv)
        assert system.held(conv.sample_id) == held, "a resumed ingestion holds other memories than a clean one"
        records = [json.loads(line) for line in (folder.path / INGEST_FILE).read_text().splitlines()]
        assert [r["status"] for r in records] == ["ok"] * (SESSIONS - 1) + ["failed", "ok"]

    # -- search ---------------------------------------------------------------------------------
    @reads_only
    def test_search_best_first_with_text(self, system, conversations):
        conv = conversations[0]
        self.hold(system, conversations)
        turn, query = self.probe(conv)
        result = system.search(conv.sample_id, query, self.search_top_k)
        assert isinstance(result, SearchResult)
        assert result.memories, f"{system.name} found nothing for the exact words of turn {turn.dia_id}"
        assert len(result.memories) <= self.search_top_k
        assert result.latency_ms >= 0
        for m in result.memories:
            assert isinstance(m.text, str) and m.text.strip()
        scores = [m.score for m in result.memories]
        if all(isinstance(s, (int, float)) for s in scores):
            assert scores == sorted(scores, reverse=True), f"results are not best first: {scores}"
        known = {t.dia_id for s in conv.sessions for t in s.turns}
        if system.keeps_turn_ids:
            for m in result.memories:
                assert m.source_turns, f"{system.name} claims turn ids, but a result has none: {m.text[:80]!r}"
                assert set(m.source_turns) <= known, f"turn ids not of this conversation: {m.source_turns}"
            found = [t for m in result.memories for t in m.source_turns]
            assert turn.dia_id in found, f"turn {turn.dia_id} not among the results' turns {found}"

    def ask(self, system: MemorySystem, conversation_id: str, question: str) -> list[tuple[str, list[str]]]:
        """(text, source turns) of what the system returns for ``question``, best first."""
        if self.query_strategy == "question":
            found = system.search(conversation_id, question, self.search_top_k)
            return [(m.text, list(m.source_turns)) for m in found.memories]
        fused = retrieve(SystemSearch(system), question, conversation_id, self.search_top_k, self.query_strategy)
        return [(o.content, list(o.source_turns)) for o in fused.observations]

    @reads_only
    def test_search_answers_locomo_questions(self, system, conversations):
        conv = conversations[0]
        self.hold(system, conversations)
        turns = {t.dia_id: t.text for s in conv.sessions for t in s.turns}
        asked = probe_questions(conv)
        assert asked, f"no LoCoMo question of {conv.sample_id} has its evidence in the sessions given"
        answered, report = 0, []
        for q in asked:
            found = self.ask(system, conv.sample_id, q.question)
            if system.keeps_turn_ids:
                hit = any(e in turns_ for _, turns_ in found for e in q.evidence)
            else:
                hit = any(turns[e][:60] in text for text, _ in found for e in q.evidence if e in turns)
            answered += hit
            got = "; ".join(f"{','.join(t) or '-'} {text[:70]!r}" for text, t in found[:3]) or "nothing"
            report.append(f"  {'ok  ' if hit else 'MISS'} asked {q.question!r} (evidence {', '.join(q.evidence)}): "
                          f"{len(found)} results, first: {got}")
        assert answered >= ANSWERED_SHARE * len(asked), (
            f"{system.name} found the evidence of only {answered} of {len(asked)} LoCoMo questions among its top "
            f"{self.search_top_k} results ({self.query_strategy} strategy); a search that cannot answer questions "
            "asked in their own words fails the contract:\n" + "\n".join(report))

    @reads_only
    def test_top_k_respected(self, system, conversations):
        conv = conversations[0]
        self.hold(system, conversations)
        _, query = self.probe(conv)
        assert len(system.search(conv.sample_id, query, 2).memories) <= 2

    @reads_only
    def test_context_budget_respected(self, system, conversations):
        conv = conversations[0]
        self.hold(system, conversations)
        _, query = self.probe(conv)
        budget = 120
        result = system.search(conv.sample_id, query, 50, context_budget=budget)
        kept = fit_budget([observation(m) for m in result.memories], budget)  # the kit's cut (one place)
        assert sum(approx_tokens(o.content) for o in kept) <= budget
        if system.own_budget:
            assert result.budget_applied
            assert sum(approx_tokens(m.text) for m in result.memories) <= budget, "the system's own budget is exceeded"
            assert len(kept) == len(result.memories)

    @reads_only
    def test_conversations_stay_apart(self, system, conversations):
        a, b = conversations
        self.hold(system, conversations)
        turn, query = self.probe(b)
        mine = {t.dia_id for s in a.sessions for t in s.turns}
        texts_b = {t.text for s in b.sessions for t in s.turns}
        for m in system.search(a.sample_id, query, self.search_top_k).memories:
            assert not any(text in m.text for text in texts_b if len(text) > 40), "another conversation's memory"
            assert set(m.source_turns) <= mine

    @uses_up_hold
    def test_forget_removes_the_conversation(self, system, conversations):
        a, b = conversations
        self.hold(system, conversations)
        held_b = system.held(b.sample_id)
        deleted = system.forget(a.sample_id)
        assert deleted > 0
        assert system.held(a.sample_id) == 0
        _, query = self.probe(a)
        assert system.search(a.sample_id, query, self.search_top_k).memories == []
        assert system.held(b.sample_id) == held_b, "forgetting one conversation touched another"
