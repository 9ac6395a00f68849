"""Resumable ingestion of LoCoMo conversations into a claude-mem Worker (memworker or claude-mem).

One record per session goes to ``ingest.jsonl``; a rerun skips sessions already recorded ``ok`` for the
same mode, and a session interrupted mid-way is sent again with the same ``tool_use_id`` (a Worker that
de-duplicates tool uses ignores the repeat; in ``turns`` mode, turns already saved are skipped by title).
``--force`` forgets the project and starts a new generation with fresh tool_use_ids (claude-mem drops a
tool_use_id it has seen before for its whole lifetime, while still answering ``queued``). The calls of
one session are :mod:`locomo_kit.worker.sessions`'s; a session that stored nothing counts as failed.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import asdict
from typing import Iterable

from tqdm.auto import tqdm

from locomo_kit.dataset import Conversation
from locomo_kit.ingestion.summary import MODES, IngestSummary, SessionResult
from locomo_kit.progress import tqdm_disable
from locomo_kit.runs.folder import RunFolder, utc_now
from locomo_kit.runs.records import INGEST_FILE, ZERO_OBSERVATIONS, done_sessions, generation
from locomo_kit.scoring.compression import session_fidelity
from locomo_kit.worker import transcript
from locomo_kit.worker.client import WorkerClient, WorkerError, WorkerUnavailable
from locomo_kit.worker.queue import GeneratorPaused
from locomo_kit.worker.sessions import QueueStuck, drain, ingest_transcript_session, save_session_turns


def ingest_worker_conversation(client: WorkerClient, conv: Conversation, run: RunFolder, mode: str = "transcript",
                        session_timeout: float = 180.0, poll_interval: float = 3.0, force: bool = False,
                        progress: bool | None = None) -> IngestSummary:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    project = transcript.project_name(conv.sample_id)
    if force:
        deleted = client.forget_project(project)
        run.append(INGEST_FILE, {"kind": "reset", "sample_id": conv.sample_id, "project": project,
                                 "deleted_observations": deleted, "generation": uuid.uuid4().hex[:12],
                                 "at": utc_now()})
    gen = generation(run, conv.sample_id)
    done = done_sessions(run, conv.sample_id, mode)
    todo = [s for s in conv.sessions if s.number not in done]
    existing = client.list_observations(project) if todo else []
    titles = {o.title for o in existing}
    known = len(existing)  # observations in the project before the next session
    results = []
    aborted = None
    bar = tqdm(todo, desc=f"ingest {conv.sample_id}", unit="session", total=len(conv.sessions),
               initial=len(conv.sessions) - len(todo),  # sessions already done count as done, not as 0/0
               disable=tqdm_disable(progress))
    for session in bar:
        csid = transcript.content_session_id(conv.sample_id, session.number)
        start = time.monotonic()
        result = SessionResult(conv.sample_id, session.number, csid, project, mode, "ok", worker_url=client.base_url)
        try:
            if mode == "transcript":
                stored, known = ingest_transcript_session(client, conv, session, session_timeout, poll_interval, known, gen)
                result.observations = len(stored)
                kept = session_fidelity(session, [o.content for o in stored])
                result.turns, result.turns_kept = kept["turns"], kept["turns_kept"]
                result.fidelity, result.lost_turns = kept["fidelity"], kept["lost_turns"]
            else:
                result.observations = save_session_turns(client, conv, session, titles)
            if result.observations == 0:
                result.status = "failed"
                result.error = (f"{ZERO_OBSERVATIONS} (its compressor dropped "
                                "or skipped it; see the Worker's logs)")
        except WorkerError as exc:
            result.status, result.error = "failed", str(exc)
            if isinstance(exc, (QueueStuck, WorkerUnavailable, GeneratorPaused)):
                aborted = f"{csid}: {exc}"
            try:  # the failed session may still add observations: recount before the next one
                known = sum(1 for _ in client.iter_observations(project))
            except WorkerError:
                pass
        result.seconds = round(time.monotonic() - start, 3)
        result.finished_at = utc_now()
        run.append(INGEST_FILE, {"kind": "session", **asdict(result)})
        results.append(result)
        if aborted:
            break
    bar.close()
    return IngestSummary(results, skipped=len(done), aborted=aborted, not_attempted=len(todo) - len(results))


def ingest_into_worker(client: WorkerClient, conversations: Iterable[Conversation], run: RunFolder, **kwargs) -> IngestSummary:
    """Ingest several conversations; one summary over all of them. Stops at the first stuck queue."""
    conversations = list(conversations)
    results, skipped, aborted, not_attempted = [], 0, None, 0
    for conv in conversations:
        if aborted:
            not_attempted += len(conv.sessions)
            continue
        s = ingest_worker_conversation(client, conv, run, **kwargs)
        results += s.results
        skipped += s.skipped
        aborted, not_attempted = s.aborted, not_attempted + s.not_attempted
    summary = IngestSummary(results, skipped, aborted, not_attempted)
    if kwargs.get("mode", "transcript") == "transcript" and results and not aborted and conversations:
        try:  # the last session's summary: the Worker is idle when ingestion returns
            drain(client, transcript.project_name(conversations[-1].sample_id), kwargs.get("session_timeout", 180.0),
                  kwargs.get("poll_interval", 3.0))
        except WorkerError as exc:
            summary.notes.append(f"the Worker's last session summary is still being written: {exc}")
    return summary
