"""Resumable ingestion of LoCoMo conversations into a Worker, and its verification.

Per session: init → queue the transcript (one ``Read``) → wait for the Worker's queue → summarize,
then count the observations the session produced. One record per session goes to
``ingest.jsonl``; a rerun skips sessions already recorded ``ok`` for the same mode, and a session
interrupted mid-way is sent again with the same ``tool_use_id`` (a Worker that de-duplicates tool
uses ignores the repeat; in ``turns`` mode, turns already saved are skipped by title).
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Iterable

from tqdm.auto import tqdm

from locomo_kit import adapter
from locomo_kit.dataset import Conversation, Session, questions
from locomo_kit.runs import RunFolder, utc_now
from locomo_kit.worker_client import WorkerClient, WorkerError

INGEST_FILE = "ingest.jsonl"
MODES = ("transcript", "turns")


def progress_enabled() -> bool | None:
    """tqdm's ``disable``: off in CI and when not on a terminal."""
    return True if os.environ.get("CI") else None


@dataclass
class SessionResult:
    sample_id: str
    session: int
    content_session_id: str
    project: str
    mode: str
    status: str  # ok | failed
    observations: int = 0
    seconds: float = 0.0
    error: str | None = None
    worker_url: str = ""
    finished_at: str = field(default_factory=utc_now)


@dataclass
class IngestSummary:
    results: list[SessionResult]
    skipped: int  # sessions already done in an earlier run

    @property
    def ingested(self) -> list[SessionResult]:
        return [r for r in self.results if r.status == "ok"]

    @property
    def failed(self) -> list[SessionResult]:
        return [r for r in self.results if r.status == "failed"]

    @property
    def zero_observation_sessions(self) -> list[SessionResult]:
        return [r for r in self.results if r.status == "ok" and r.observations == 0]

    def lines(self) -> list[str]:
        out = [f"sessions ingested: {len(self.ingested)}, failed: {len(self.failed)}, "
               f"already done: {self.skipped}"]
        if self.ingested:
            obs = [r.observations for r in self.ingested]
            secs = [r.seconds for r in self.ingested]
            out.append(f"observations per session: min {min(obs)}, mean {sum(obs) / len(obs):.1f}, max {max(obs)}; "
                       f"seconds per session: mean {sum(secs) / len(secs):.2f}, max {max(secs):.2f}")
        for r in self.failed:
            out.append(f"FAILED {r.content_session_id}: {r.error}")
        zero = self.zero_observation_sessions
        if zero:
            out.append(f"WARNING: {len(zero)} session(s) produced ZERO observations: "
                       + ", ".join(r.content_session_id for r in zero)
                       + " (the Worker stored nothing for them: its questions cannot be answered from memory)")
        return out


def done_sessions(run: RunFolder, sample_id: str, mode: str) -> dict[int, dict]:
    """Sessions recorded ``ok`` for this sample and mode since the last reset (a session that
    stored zero observations is not done: a rerun sends it again)."""
    done: dict[int, dict] = {}
    for rec in run.records(INGEST_FILE):
        if rec.get("sample_id") != sample_id:
            continue
        if rec.get("kind") == "reset":
            done.clear()
        elif rec.get("mode") == mode and rec.get("status") == "ok" and rec.get("observations", 1) > 0:
            done[int(rec["session"])] = rec
    return done


def _count_session_observations(client: WorkerClient, project: str, csid: str, before: int) -> tuple[int, int]:
    """(observations this session produced, observations in the project now)."""
    obs = client.list_observations(project)
    if any("source_session" in o.metadata for o in obs):
        return sum(1 for o in obs if o.metadata.get("source_session") == csid), len(obs)
    return max(0, len(obs) - before), len(obs)


def _ingest_transcript(client: WorkerClient, conv: Conversation, session: Session, timeout: float,
                       poll_interval: float, before: int) -> tuple[int, int]:
    csid = adapter.content_session_id(conv.sample_id, session.number)
    project = adapter.project_name(conv.sample_id)
    init = client.init_session(csid, project, adapter.init_prompt(conv, session))
    if init.get("skipped"):
        raise WorkerError(f"Worker skipped session init: {init.get('reason')}")
    failed_before = client.processing_status().get("failed")
    queued = client.queue_observation(csid, **adapter.read_tool_call(conv, session))
    if queued.get("status") not in ("queued", "skipped") or (
            queued.get("status") == "skipped" and queued.get("reason") != "duplicate"):
        raise WorkerError(f"Worker did not queue the transcript: {queued}")
    client.wait_for_processing(timeout=timeout, poll_interval=poll_interval)
    failed_after = client.processing_status().get("failed")
    if isinstance(failed_before, int) and isinstance(failed_after, int) and failed_after > failed_before:
        raise WorkerError(f"the Worker failed to process the transcript of session {session.number} (its failed "
                          f"count rose from {failed_before} to {failed_after}; see its log); rerun to send it again")
    client.summarize(csid, f"Session {session.number} of {conv.sample_id} ingested.")
    return _count_session_observations(client, project, csid, before)


def _ingest_turns(client: WorkerClient, conv: Conversation, session: Session, existing_titles: set[str]) -> int:
    project = adapter.project_name(conv.sample_id)
    saved = 0
    for turn in session.turns:
        title = adapter.turn_title(conv.sample_id, turn)
        if title not in existing_titles:
            client.save_memory(adapter.turn_memory_text(conv, session, turn), project, title=title)
            existing_titles.add(title)
        saved += 1
    return saved


def ingest_conversation(client: WorkerClient, conv: Conversation, run: RunFolder, mode: str = "transcript",
                        session_timeout: float = 180.0, poll_interval: float = 3.0, force: bool = False,
                        progress: bool | None = None) -> IngestSummary:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    project = adapter.project_name(conv.sample_id)
    if force:
        deleted = client.forget_project(project)
        run.append(INGEST_FILE, {"kind": "reset", "sample_id": conv.sample_id, "project": project,
                                 "deleted_observations": deleted, "at": utc_now()})
    done = done_sessions(run, conv.sample_id, mode)
    todo = [s for s in conv.sessions if s.number not in done]
    existing = client.list_observations(project) if todo else []
    titles = {o.title for o in existing}
    known = len(existing)  # observations in the project before the next session
    results = []
    bar = tqdm(todo, desc=f"ingest {conv.sample_id}", unit="session",
               disable=progress_enabled() if progress is None else not progress)
    for session in bar:
        csid = adapter.content_session_id(conv.sample_id, session.number)
        start = time.monotonic()
        result = SessionResult(conv.sample_id, session.number, csid, project, mode, "ok", worker_url=client.base_url)
        try:
            if mode == "transcript":
                result.observations, known = _ingest_transcript(client, conv, session, session_timeout,
                                                                poll_interval, known)
            else:
                result.observations = _ingest_turns(client, conv, session, titles)
        except WorkerError as exc:
            result.status, result.error = "failed", str(exc)
            try:  # the failed session may still add observations: recount before the next one
                known = sum(1 for _ in client.iter_observations(project))
            except WorkerError:
                pass
        result.seconds = round(time.monotonic() - start, 3)
        run.append(INGEST_FILE, {"kind": "session", **asdict(result)})
        results.append(result)
    return IngestSummary(results, skipped=len(done))


def ingest(client: WorkerClient, conversations: Iterable[Conversation], run: RunFolder, **kwargs) -> IngestSummary:
    """Ingest several conversations; one summary over all of them."""
    results, skipped = [], 0
    for conv in conversations:
        s = ingest_conversation(client, conv, run, **kwargs)
        results += s.results
        skipped += s.skipped
    return IngestSummary(results, skipped)


def session_table(run: RunFolder, sample_id: str, mode: str) -> list[dict]:
    """The latest ``ok`` record per session, for display."""
    return [done_sessions(run, sample_id, mode)[k] for k in sorted(done_sessions(run, sample_id, mode))]


# -- verification ----------------------------------------------------------------------------
def verify(client: WorkerClient, conv: Conversation, top: int = 3) -> dict:
    """Count the project's observations and probe search with one question of categories 4, 1, 2."""
    project = adapter.project_name(conv.sample_id)
    obs = client.list_observations(project)
    probes = []
    for category in (4, 1, 2):
        q = next((q for q in questions(conv) if q.category == category), None)
        if q is None:
            continue
        result = client.search(q.question, project, limit=top)
        probes.append({
            "question": q.question, "category": q.category_name, "gold": q.answer,
            "latency_ms": round(result.latency_ms, 1),
            "results": [{"id": o.id, "title": o.title, "text": (o.narrative or "")[:200]} for o in result.observations],
        })
    return {
        "project": project,
        "observations": len(obs),
        "samples": [{"id": o.id, "title": o.title, "narrative": (o.narrative or "")[:100]} for o in obs[:10]],
        "probes": probes,
    }


def format_verification(report: dict) -> str:
    lines = [f"{report['project']}: {report['observations']} observations"]
    for s in report["samples"]:
        lines.append(f"  #{s['id']} {s['title']!r}: {s['narrative']}")
    for p in report["probes"]:
        lines.append(f"\nQ [{p['category']}] {p['question']}\n  gold: {p['gold']}  ({p['latency_ms']} ms)")
        for i, r in enumerate(p["results"], 1):
            lines.append(f"  {i}. #{r['id']} {r['text']}")
    return "\n".join(lines)


def print_summary(summary: IngestSummary, file=None) -> None:
    for line in summary.lines():
        print(line, file=file or sys.stdout)
