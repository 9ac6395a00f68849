"""Ingesting LoCoMo conversations into a memory system, session by session: the one loop every system goes
through (the claude-mem Workers as any other, see :mod:`locomo_kit.systems.workers`).

One record per session goes to ``ingest.jsonl``; a rerun skips sessions already recorded ``ok`` in the
system's unit, and a session interrupted mid-way is sent again (a system's ``ingest_session`` is
idempotent: a Worker de-duplicates by ``tool_use_id``, or skips turns already saved by title).
``force`` forgets the conversation first and starts a new generation (a reset record). A session that
stored nothing counts as failed; a system that becomes unavailable stops the ingestion (resumable).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import asdict
from typing import Iterable

from tqdm.auto import tqdm

from locomo_kit.dataset import Conversation
from locomo_kit.ingestion.summary import IngestSummary, SessionResult
from locomo_kit.progress import tqdm_disable
from locomo_kit.runs import RunFolder, utc_now
from locomo_kit.runs.records import INGEST_FILE, done_sessions, generation
from locomo_kit.scoring.compression import session_fidelity
from locomo_kit.systems.base import MemorySystem, MemorySystemError, SystemUnavailable
from locomo_kit.worker import transcript


def reset_record(system: MemorySystem, folder: RunFolder, conversation_id: str, deleted: int,
                 reason: str | None) -> None:
    """A new generation of the conversation's ingestion: every session is sent again after it."""
    record = {"kind": "reset", "sample_id": conversation_id, "project": system.store_name(conversation_id),
              "deleted_observations": deleted, "generation": uuid.uuid4().hex[:12]}
    if reason:
        record["reason"] = reason
    folder.append(INGEST_FILE, {**record, "at": utc_now()})


def held_now(system: MemorySystem, conversation_id: str) -> int | None:
    """What ``system`` holds of the conversation now; None when it cannot say (the ingestion goes on: the check
    after the last session counts again)."""
    try:
        return system.held(conversation_id)
    except MemorySystemError:
        return None


def ingest_conversation(system: MemorySystem, conv: Conversation, folder: RunFolder, force: bool = False,
                        progress: bool | None = None) -> IngestSummary:
    """Every session of ``conv`` not yet recorded ``ok`` into the open ``system``."""
    if force:
        reset_record(system, folder, conv.sample_id, system.forget(conv.sample_id),
                     None if system.worker_records else "--force")
    done = done_sessions(folder, conv.sample_id, system.unit)
    todo = [s for s in conv.sessions if s.number not in done]
    if todo:
        system.begin_conversation(conv.sample_id, generation(folder, conv.sample_id))
    results: list[SessionResult] = []
    aborted = None
    url = system.address() if todo else ""
    tags = {} if system.worker_records else {"system": system.name}
    bar = tqdm(todo, desc=f"ingest {conv.sample_id} ({system.name})", unit="session", total=len(conv.sessions),
               initial=len(conv.sessions) - len(todo),  # sessions already done count as done, not as 0/0
               disable=tqdm_disable(progress))
    for session in bar:
        start = time.monotonic()
        result = SessionResult(conv.sample_id, session.number, transcript.content_session_id(conv.sample_id, session.number),
                               system.store_name(conv.sample_id), system.unit, "ok", worker_url=url)
        try:
            stored = system.ingest_session(conv, session)
            result.observations = stored.stored
            if system.compresses and stored.texts is not None:  # which turns survive the compressor
                kept = session_fidelity(session, stored.texts)
                result.turns, result.turns_kept = kept["turns"], kept["turns_kept"]
                result.fidelity, result.lost_turns = kept["fidelity"], kept["lost_turns"]
            result.acknowledged = stored.acknowledged
            if stored.stored == 0:
                result.status, result.error = "failed", system.nothing_stored_text()
            elif not system.transforms:  # a system that stores what it is given: what it holds now, session by session
                result.held_after = held_now(system, conv.sample_id)
        except MemorySystemError as exc:
            result.status, result.error = "failed", system.failure_text(exc)
            if isinstance(exc, SystemUnavailable):
                aborted = f"{result.content_session_id}: {exc}"
        result.seconds = round(time.monotonic() - start, 3)
        result.finished_at = utc_now()
        folder.append(INGEST_FILE, {"kind": "session", **tags, **asdict(result)})
        results.append(result)
        if aborted:
            break
    bar.close()
    return IngestSummary(results, skipped=len(done), aborted=aborted, not_attempted=len(todo) - len(results),
                         noun=system.stored_noun)


def ingest_conversations(system: MemorySystem, conversations: Iterable[Conversation], folder: RunFolder,
                         force: bool = False, progress: bool | None = None) -> IngestSummary:
    """Ingest several conversations (one summary); stops when the system becomes unavailable, then lets it
    finish what it still works on (:meth:`~locomo_kit.systems.base.MemorySystem.settle`)."""
    conversations = list(conversations)
    results, skipped, aborted, not_attempted = [], 0, None, 0
    for conv in conversations:
        if aborted:
            not_attempted += len(conv.sessions)
            continue
        s = ingest_conversation(system, conv, folder, force, progress)
        results += s.results
        skipped += s.skipped
        aborted, not_attempted = s.aborted, not_attempted + s.not_attempted
    summary = IngestSummary(results, skipped, aborted, not_attempted, noun=system.stored_noun)
    if results and not aborted:
        if note := system.settle([c.sample_id for c in conversations]):
            summary.notes.append(note)
    return summary
