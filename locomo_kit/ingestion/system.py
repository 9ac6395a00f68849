"""The kit's side of ingesting into a :class:`~locomo_kit.systems.base.MemorySystem`: session by
session, one ``ingest.jsonl`` record per session (the same records as a Worker's ingestion, see
:mod:`locomo_kit.ingestion.worker`), resumable, and reused only while the system still holds what was recorded."""

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
from locomo_kit.runs.records import INGEST_FILE, done_sessions
from locomo_kit.systems.base import MemorySystem, MemorySystemError, SystemUnavailable
from locomo_kit.worker import transcript
from locomo_kit.worker.identity import WorkerMismatch, identity_changes


def _reset(folder: RunFolder, conv: Conversation, deleted: int, reason: str) -> None:
    folder.append(INGEST_FILE, {"kind": "reset", "sample_id": conv.sample_id, "project": conv.sample_id,
                                "deleted_observations": deleted, "generation": uuid.uuid4().hex[:12],
                                "reason": reason, "at": utc_now()})


def check_held(system: MemorySystem, folder: RunFolder, conversations: list[Conversation]) -> list[str]:
    """Before reusing ``folder``'s records: a system that now holds nothing of a recorded conversation is
    ingested again (a reset record); one whose identity changed, or that holds fewer memories than
    were recorded, raises :class:`WorkerMismatch` with what to do."""
    recorded = folder.manifest().get("ingest", {}).get("worker") or {}
    now = system.identity().as_dict()
    changed = [c for c in identity_changes(recorded, now) if not c.startswith("url ")]
    notes = []
    for conv in conversations:
        done = done_sessions(folder, conv.sample_id, system.unit)
        if not done:
            continue
        expected = sum(int(r.get("observations") or 0) for r in done.values())
        held = system.held(conv.sample_id)
        if held == 0:
            why = f"{system.name} holds none of {conv.sample_id}'s {expected} memories recorded at ingestion"
            _reset(folder, conv, 0, why)
            notes.append(f"{why}: ingesting {conv.sample_id} again")
        elif changed:
            raise WorkerMismatch(f"the memories of {conv.sample_id} were formed by another {system.name} "
                                 f"({'; '.join(changed[:4])}): they are not reused. Run `locomo-kit ingest --sample "
                                 f"{conv.sample_id} --system {system.name} --force` to forget them and ingest again")
        elif held < expected:
            raise WorkerMismatch(f"{system.name} holds {held} memories of {conv.sample_id}, fewer than the {expected} "
                                 f"recorded at ingestion: run `locomo-kit ingest --sample {conv.sample_id} --system "
                                 f"{system.name} --force` to forget them and ingest again")
    return notes


def ingest_system_conversation(system: MemorySystem, conv: Conversation, folder: RunFolder, force: bool = False,
                        progress: bool | None = None) -> IngestSummary:
    if force:
        _reset(folder, conv, system.forget(conv.sample_id), "--force")
    done = done_sessions(folder, conv.sample_id, system.unit)
    todo = [s for s in conv.sessions if s.number not in done]
    results: list[SessionResult] = []
    aborted = None
    url = system.identity().url
    bar = tqdm(todo, desc=f"ingest {conv.sample_id} ({system.name})", unit="session", total=len(conv.sessions),
               initial=len(conv.sessions) - len(todo),
               disable=tqdm_disable(progress))
    for session in bar:
        start = time.monotonic()
        result = SessionResult(conv.sample_id, session.number, transcript.content_session_id(conv.sample_id, session.number),
                               conv.sample_id, system.unit, "ok", worker_url=url)
        try:
            stored = system.ingest_session(conv, session)
            result.observations = stored.stored
            if stored.stored == 0:
                result.status, result.error = "failed", f"{system.name} stored ZERO memories for this session"
        except MemorySystemError as exc:
            result.status, result.error = "failed", f"{type(exc).__name__}: {exc}"
            if isinstance(exc, SystemUnavailable):
                aborted = f"{result.content_session_id}: {exc}"
        result.seconds = round(time.monotonic() - start, 3)
        folder.append(INGEST_FILE, {"kind": "session", "system": system.name, **asdict(result)})
        results.append(result)
        if aborted:
            break
    bar.close()
    return IngestSummary(results, skipped=len(done), aborted=aborted, not_attempted=len(todo) - len(results))


def ingest_into_system(system: MemorySystem, conversations: Iterable[Conversation], folder: RunFolder, force: bool = False,
           progress: bool | None = None) -> IngestSummary:
    """Ingest several conversations (one summary); stops when the system becomes unavailable."""
    results, skipped, aborted, not_attempted = [], 0, None, 0
    for conv in conversations:
        if aborted:
            not_attempted += len(conv.sessions)
            continue
        s = ingest_system_conversation(system, conv, folder, force, progress)
        results += s.results
        skipped += s.skipped
        aborted, not_attempted = s.aborted, not_attempted + s.not_attempted
    return IngestSummary(results, skipped, aborted, not_attempted)
