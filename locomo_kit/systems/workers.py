"""The two systems spoken to over the claude-mem Worker HTTP API: ``memworker`` (the kit's reference
Worker, embedded by default) and ``claude-mem`` (a Worker at a URL).

The kit's run pipeline drives Workers through :mod:`locomo_kit.ingestion.worker` (transcripts queued for the
Worker's compressor, read-your-writes waits, instance checks); these members give the same Workers
the :class:`~locomo_kit.systems.base.MemorySystem` interface, with the same calls underneath.
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any

from locomo_kit.dataset import Conversation, Session
from locomo_kit.runs import RunFolder
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
from locomo_kit.worker.sessions import ingest_transcript_session, save_session_turns, worker_capabilities

EMBEDDED = "embedded"


def memory_of(o: Observation) -> Memory:
    meta = o.metadata
    return Memory(text=o.content, source_turns=o.source_turns, score=meta.get("score"), id=str(o.id),
                  session=meta.get("session"), date=meta.get("event_date") or meta.get("session_date"), metadata=meta)


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

    def __init__(self, store: Path, url: str = EMBEDDED, mode: str = "transcript", session_timeout: float = 180.0,
                 poll_interval: float = 3.0, ready_timeout: float = 120.0) -> None:
        super().__init__(store, url=url, mode=mode)
        if mode not in ("transcript", "turns"):
            raise ValueError(f"mode must be transcript or turns, got {mode!r}")
        self.url, self.unit = url, mode
        self.session_timeout, self.poll_interval, self.ready_timeout = session_timeout, poll_interval, ready_timeout
        self._stack: ExitStack | None = None
        self.client: WorkerClient | None = None

    def open(self) -> None:
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
        try:
            h = self._client.health()
        except WorkerError as exc:
            return Health(False, str(exc))
        caps = worker_capabilities(h)
        ok = str(h.get("status")).lower() not in ("error", "unhealthy", "failed")
        if self.unit == "transcript" and caps["compressor"] != "ok":
            return Health(False, f"its compressor {caps['compressor']}", caps)
        return Health(ok, str(h.get("status")), caps)

    def ingest_session(self, conversation: Conversation, session: Session) -> SessionIngest:
        project = transcript.project_name(conversation.sample_id)
        try:
            existing = self._client.list_observations(project)
            if self.unit == "turns":
                return SessionIngest(save_session_turns(self._client, conversation, session, {o.title for o in existing}))
            stored, _ = ingest_transcript_session(self._client, conversation, session, self.session_timeout,
                                           self.poll_interval, len(existing), "")
            return SessionIngest(len(stored))
        except WorkerUnavailable as exc:
            raise SystemUnavailable(str(exc)) from exc
        except WorkerError as exc:
            raise MemorySystemError(str(exc)) from exc

    def held(self, conversation_id: str) -> int:
        return sum(1 for _ in self._client.iter_observations(transcript.project_name(conversation_id)))

    def forget(self, conversation_id: str) -> int:
        return self._client.forget_project(transcript.project_name(conversation_id))

    def search(self, conversation_id: str, query: str, top_k: int,
               context_budget: int | None = None) -> SearchResult:
        budget = context_budget if self.own_budget else None
        try:
            r = self._client.search(query, transcript.project_name(conversation_id), limit=top_k, context_budget=budget)
        except WorkerUnavailable as exc:
            raise SystemUnavailable(str(exc)) from exc
        except WorkerError as exc:
            raise MemorySystemError(str(exc)) from exc
        return SearchResult([memory_of(o) for o in r.observations], r.latency_ms,
                            budget_applied=budget is not None, queries=[query])


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
