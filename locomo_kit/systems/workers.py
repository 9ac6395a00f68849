"""The two systems spoken to over the claude-mem Worker HTTP API: ``memworker`` (the kit's reference
Worker, embedded by default) and ``claude-mem`` (a Worker at a URL).

They go through the same stages as every other :class:`~locomo_kit.systems.base.MemorySystem`; what only a
Worker does is declared as its capabilities: its compressor (``compresses`` in transcript mode: the kit
measures which turns survive), a check of that compressor before ingesting, the queue watch between
sessions and after the last one (``settle``), read-your-writes after ingestion (``wait_until_consistent``),
its identity (instance id, settings) and the records in the shape Worker runs have always had.
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any

from locomo_kit.dataset import Conversation, Session
from locomo_kit.runs import RunFolder
from locomo_kit.runs.records import ZERO_OBSERVATIONS
from locomo_kit.systems.base import (
    Health,
    Identity,
    Memory,
    MemorySystem,
    MemorySystemError,
    SearchResult,
    SessionIngest,
    SystemOption,
    SystemUnavailable,
)
from locomo_kit.worker import transcript
from locomo_kit.worker.client import Observation, WorkerClient, WorkerError, WorkerUnavailable
from locomo_kit.worker.connect import connect
from locomo_kit.worker.consistency import wait_until_consistent
from locomo_kit.worker.identity import formation_changes, worker_identity
from locomo_kit.worker.queue import GeneratorPaused
from locomo_kit.worker.sessions import (
    QueueStuck,
    check_health,
    drain,
    ingest_transcript_session,
    save_session_turns,
    worker_capabilities,
)

EMBEDDED = "embedded"


def memory_of(o: Observation) -> Memory:
    meta = o.metadata
    return Memory(text=o.content, source_turns=o.source_turns, score=meta.get("score"), id=str(o.id),
                  session=meta.get("session"), date=meta.get("event_date") or meta.get("session_date"), metadata=meta,
                  raw=o)


class WorkerSystem(MemorySystem):
    """A Worker at ``url`` (``"embedded"``: memworker started on ``store/memworker.db``).
    ``mode``: ``transcript`` (one Read per session, compressed by the Worker) or ``turns`` (memory/save)."""

    system_options = (
        SystemOption("url", str, EMBEDDED, "the Worker's base URL ('embedded': memworker started for the run)"),
        SystemOption("mode", str, "transcript", "transcript (one Read per session, compressed by the Worker) or "
                     "turns (each turn saved as is)"),
        SystemOption("session_timeout", float, 180.0, "seconds to wait for the Worker's queue per session"),
        SystemOption("poll_interval", float, 3.0, "longest pause between queue polls"),
        SystemOption("ready_timeout", float, 120.0, "seconds to wait for the Worker to answer"),
    )
    worker_records = True
    read_your_writes = True
    stored_noun = "observations"

    def __init__(self, store: Path, url: str = EMBEDDED, mode: str = "transcript", session_timeout: float = 180.0,
                 poll_interval: float = 3.0, ready_timeout: float = 120.0) -> None:
        super().__init__(store, url=url, mode=mode)
        if mode not in ("transcript", "turns"):
            raise ValueError(f"mode must be transcript or turns, got {mode!r}")
        self.url, self.unit = url, mode
        self.compresses = mode == "transcript"
        self.transforms = ("a compressor: the Worker rewrites each session's transcript into observations"
                           if self.compresses else None)
        self.session_timeout, self.poll_interval, self.ready_timeout = session_timeout, poll_interval, ready_timeout
        self._stack: ExitStack | None = None
        self.client: WorkerClient | None = None
        self._conversation: str | None = None  # the conversation begun, its generation, what its project held
        self._generation = ""
        self._known = 0
        self._titles: set[str] = set()

    @classmethod
    def around(cls, client: WorkerClient, url: str = EMBEDDED, mode: str = "transcript", session_timeout: float = 180.0,
               poll_interval: float = 3.0) -> "WorkerSystem":
        """The system over a client already connected (its caller opens and closes it): memworker when the
        Worker says so, else claude-mem."""
        name = str((getattr(client, "identity", None) or {}).get("name") or "")
        kind = MemworkerSystem if name == "memworker" or url == EMBEDDED else ClaudeMemSystem
        system = WorkerSystem.__new__(kind)
        WorkerSystem.__init__(system, Path("."), url=url, mode=mode, session_timeout=session_timeout,
                              poll_interval=poll_interval)
        if client is not None and not hasattr(client, "identity"):  # as connect() names it
            client.identity = worker_identity(url, client.base_url, client.health())
        system.client = client
        return system

    def open(self) -> None:
        if self.client is not None:
            return
        self._stack = ExitStack()
        folder = RunFolder(self.store.name, root=self.store.parent)
        try:
            self.client = self._stack.enter_context(connect(self.url, folder, self.ready_timeout))
        except WorkerUnavailable as exc:
            self.close()
            raise SystemUnavailable(str(exc)) from exc

    def close(self) -> None:
        if self._stack is not None:
            self._stack.close()
            self._stack, self.client = None, None

    @property
    def _client(self) -> WorkerClient:
        if self.client is None:
            raise MemorySystemError(f"{self.name} is not open (use it as a context manager)")
        return self.client

    def identity(self) -> Identity:
        ident: dict[str, Any] = dict(self._client.identity)
        settings = ident.get("settings") if isinstance(ident.get("settings"), dict) else {}
        return Identity(str(ident.get("name") or self.name), ident.get("version"),
                        {**settings, "mode": self.unit}, url=str(ident.get("url")))

    def health(self) -> Health:
        """Whether the Worker answers (searching needs no more); its compressor is checked before ingesting."""
        try:
            h = self._client.health()
        except WorkerError as exc:
            return Health(False, str(exc))
        ok = str(h.get("status")).lower() not in ("error", "unhealthy", "failed")
        return Health(ok, str(h.get("status")), worker_capabilities(h))

    # -- the Worker's capabilities -----------------------------------------------------------------
    def store_name(self, conversation_id: str) -> str:
        return transcript.project_name(conversation_id)

    def address(self) -> str:
        return self._client.base_url

    def identity_record(self) -> dict[str, Any]:
        return dict(self._client.identity)

    def run_parameters(self) -> dict[str, Any]:
        return {"mode": self.unit, "worker_url": self.url}

    def formation_changes(self, recorded: dict[str, Any]) -> list[str]:
        now = self._client.identity
        changes = formation_changes(recorded, now)
        old, new = recorded.get("instance_id"), now.get("instance_id")
        if old and new and old != new:
            changes.append(f"instance_id {old} → {new}")
        return changes

    def prepare_ingest(self) -> None:
        check_health(self._client, self.unit)

    def begin_conversation(self, conversation_id: str, generation: str) -> None:
        existing = self._client.list_observations(self.store_name(conversation_id))
        self._conversation, self._generation = conversation_id, generation
        self._known, self._titles = len(existing), {o.title for o in existing}

    def failure_text(self, exc: MemorySystemError) -> str:
        return str(exc)

    def nothing_stored_text(self) -> str:
        return f"{ZERO_OBSERVATIONS} (its compressor dropped or skipped it; see the Worker's logs)"

    def settle(self, conversation_ids: list[str]) -> str | None:
        if self.unit != "transcript" or not conversation_ids:
            return None
        try:  # the last session's summary: the Worker is idle when ingestion returns
            drain(self._client, self.store_name(conversation_ids[-1]), self.session_timeout, self.poll_interval)
        except WorkerError as exc:
            return f"the Worker's last session summary is still being written: {exc}"
        return None

    def stored_texts(self, conversation_id: str) -> list[str]:
        try:
            return [o.content for o in self._client.iter_observations(self.store_name(conversation_id))]
        except WorkerError as exc:
            raise MemorySystemError(str(exc)) from exc

    def wait_until_consistent(self, conversation_ids: list[str], timeout: float,
                              progress: bool | None = None) -> dict[str, Any]:
        return wait_until_consistent(self._client, [self.store_name(c) for c in conversation_ids], timeout=timeout,
                                     progress=progress)

    # -- the interface ---------------------------------------------------------------------------
    def ingest_session(self, conversation: Conversation, session: Session) -> SessionIngest:
        if self._conversation != conversation.sample_id:
            self.begin_conversation(conversation.sample_id, "")
        try:
            if self.unit == "turns":
                return SessionIngest(save_session_turns(self._client, conversation, session, self._titles))
            stored, self._known = ingest_transcript_session(self._client, conversation, session, self.session_timeout,
                                                            self.poll_interval, self._known, self._generation)
            return SessionIngest(len(stored), texts=[o.content for o in stored])
        except WorkerError as exc:
            try:  # the failed session may still add observations: recount before the next one
                self._known = self.held(conversation.sample_id)
            except WorkerError:
                pass
            if isinstance(exc, (QueueStuck, WorkerUnavailable, GeneratorPaused)):
                raise SystemUnavailable(str(exc)) from exc
            raise MemorySystemError(str(exc)) from exc

    def held(self, conversation_id: str) -> int:
        return sum(1 for _ in self._client.iter_observations(self.store_name(conversation_id)))

    def forget(self, conversation_id: str) -> int:
        deleted = self._client.forget_project(self.store_name(conversation_id))
        if self._conversation == conversation_id:
            self._conversation = None
        return deleted

    def search(self, conversation_id: str, query: str, top_k: int,
               context_budget: int | None = None) -> SearchResult:
        """The Worker's search; ``context_budget`` goes to it (memworker packs to it, claude-mem ignores it)."""
        try:
            r = self._client.search(query, self.store_name(conversation_id), limit=top_k, context_budget=context_budget)
        except WorkerUnavailable as exc:
            raise SystemUnavailable(str(exc)) from exc
        except WorkerError as exc:
            raise MemorySystemError(str(exc)) from exc
        return SearchResult([memory_of(o) for o in r.observations], r.latency_ms,
                            budget_applied=context_budget is not None and self.own_budget, queries=[query])


class MemworkerSystem(WorkerSystem):
    """memworker: its search merges hits into spans of whole turns packed to the budget, each with exact turn ids."""

    name = "memworker"
    keeps_turn_ids = True
    own_budget = True


class ClaudeMemSystem(WorkerSystem):
    """claude-mem at ``url``: its observations carry no turn ids (the kit matches turns by text), no budget."""

    name = "claude-mem"
    keeps_turn_ids = False
    own_budget = False

    def __init__(self, store: Path, url: str = "", **options: Any) -> None:
        if not url or url == EMBEDDED:
            raise ValueError("claude-mem needs the Worker's URL (--worker-url http://127.0.0.1:37777)")
        super().__init__(store, url=url, **options)
