"""Resumable ingestion of LoCoMo conversations into a Worker, and its verification.

Per session: init → queue the transcript (one ``Read``) → wait for the Worker's queue → summarize,
then count the observations the session produced. One record per session goes to
``ingest.jsonl``; a rerun skips sessions already recorded ``ok`` for the same mode, and a session
interrupted mid-way is sent again with the same ``tool_use_id`` (a Worker that de-duplicates tool
uses ignores the repeat; in ``turns`` mode, turns already saved are skipped by title). ``--force``
forgets the project and starts a new generation with fresh tool_use_ids (claude-mem drops a
tool_use_id it has seen before for its whole lifetime, while still answering ``queued``).

Failures are loud: a Worker whose compressor cannot run stops transcript mode before anything is
sent (:func:`check_health`); a queue that makes no progress within one session timeout stops the
whole ingestion (:class:`IngestSummary.aborted`); a session that stored nothing counts as failed.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Iterable

from tqdm.auto import tqdm

from locomo_kit import adapter
from locomo_kit.dataset import Conversation, Session, questions
from locomo_kit.runs import RunFolder, utc_now
from locomo_kit.worker_client import WorkerClient, WorkerError, WorkerTimeout, WorkerUnavailable

INGEST_FILE = "ingest.jsonl"
ZERO_OBSERVATIONS = "the Worker stored ZERO observations for this session"
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
    turns: int | None = None  # transcript mode: the session's turns, and how many survive in its observations
    turns_kept: int | None = None
    fidelity: float | None = None
    lost_turns: list[str] | None = None


class WorkerNotUsable(WorkerError):
    """The Worker's own health says it cannot do what this ingestion needs."""


class QueueStuck(WorkerTimeout):
    """The Worker's queue made no progress within one session timeout."""


COMPRESSOR_HINT = ("configure a compressor provider the Worker can run (e.g. CLAUDE_MEM_PROVIDER=openrouter with "
                   "CLAUDE_MEM_OPENROUTER_BASE_URL, CLAUDE_MEM_OPENROUTER_MODEL and CLAUDE_MEM_OPENROUTER_API_KEY in "
                   "~/.claude-mem/settings.json, or install and log in the `claude` CLI) and restart the Worker, "
                   "or use --mode turns (no LLM: each turn saved as is)")


def dependency_statuses(health: dict) -> list[dict]:
    deps = health.get("dependencies") if isinstance(health, dict) else None
    statuses = deps.get("statuses") if isinstance(deps, dict) else None
    return [s for s in statuses or [] if isinstance(s, dict)]


def worker_capabilities(health: dict) -> dict:
    """What the Worker's ``/api/health`` says about its compressor and its semantic search.

    claude-mem reports a compressor that cannot run as dependency ``claude_cli`` (kind
    ``setup_required``) and a missing vector store as dependency ``uvx``: search then falls back to
    SQLite FTS5 phrase matching.
    """
    compressor, semantic = "ok", "available"
    for st in dependency_statuses(health):
        dep, kind = str(st.get("dependency", "")), str(st.get("kind", ""))
        msg = " ".join(str(st.get("message", "")).split())
        if dep == "uvx" or "vector" in kind:
            semantic = f"unavailable ({dep}: {msg}); search falls back to keyword (FTS5 phrase) matching"
        elif dep == "claude_cli" or kind == "setup_required":
            compressor = f"cannot run ({dep}: {kind}: {msg})"
    ai = health.get("ai") if isinstance(health, dict) else None
    return {"compressor_provider": ai.get("provider") if isinstance(ai, dict) else None,
            "compressor": compressor, "semantic_search": semantic}


def check_health(client: WorkerClient, mode: str) -> dict:
    """Read ``/api/health`` before ingesting; raise :class:`WorkerNotUsable` when transcript mode
    cannot work (the compressor cannot run: every observation would queue forever)."""
    caps = worker_capabilities(client.health())
    if mode == "transcript" and caps["compressor"] != "ok":
        raise WorkerNotUsable(f"the Worker at {client.base_url} reports that its compressor {caps['compressor']}: "
                              f"transcript mode would queue every session forever. To fix: {COMPRESSOR_HINT}")
    return caps


@dataclass
class IngestSummary:
    results: list[SessionResult]
    skipped: int  # sessions already done in an earlier run
    aborted: str | None = None  # why ingestion stopped before the last session
    not_attempted: int = 0  # sessions left out because ingestion stopped
    compression: dict | None = None  # what the compressor kept (locomo_kit.scoring.compression.measure)
    notes: list[str] = field(default_factory=list)  # worth a line, not a failure

    @property
    def ingested(self) -> list[SessionResult]:
        return [r for r in self.results if r.status == "ok"]

    @property
    def failed(self) -> list[SessionResult]:
        return [r for r in self.results if r.status == "failed"]

    @property
    def zero_observation_sessions(self) -> list[SessionResult]:
        return [r for r in self.results if r.status == "ok" and r.observations == 0]

    @property
    def kept_nothing(self) -> bool:
        """Every session went through the compressor, whose fidelity was measured, and none stored
        anything: a result about the compressor (answered from the empty memory, reported, exit 1)."""
        return bool(self.results and self.compression and not self.aborted and not self.not_attempted
                    and not self.skipped and not self.ingested
                    and all(r.observations == 0 and ZERO_OBSERVATIONS in (r.error or "") for r in self.failed))

    @property
    def succeeded(self) -> bool:
        """Every session ingested and produced observations."""
        return not (self.failed or self.zero_observation_sessions or self.aborted or self.not_attempted)

    def lines(self) -> list[str]:
        out = [f"sessions ingested: {len(self.ingested)}, failed: {len(self.failed)}, "
               f"already done: {self.skipped}" + (f", not attempted: {self.not_attempted}" if self.not_attempted else "")]
        if self.aborted:
            out.append(f"INGESTION STOPPED: {self.aborted}")
        if self.ingested:
            obs = [r.observations for r in self.ingested]
            secs = [r.seconds for r in self.ingested]
            out.append(f"observations per session: min {min(obs)}, mean {sum(obs) / len(obs):.1f}, max {max(obs)}; "
                       f"seconds per session: mean {sum(secs) / len(secs):.2f}, max {max(secs):.2f}")
        from locomo_kit.scoring.compression import summary_lines

        out += summary_lines(self.compression)
        for r in self.failed:
            out.append(f"FAILED {r.content_session_id}: {r.error}")
        zero = self.zero_observation_sessions
        if zero:
            out.append(f"WARNING: {len(zero)} session(s) produced ZERO observations: "
                       + ", ".join(r.content_session_id for r in zero)
                       + " (the Worker stored nothing for them: its questions cannot be answered from memory)")
        return out


def _since_reset(run: RunFolder, sample_id: str, mode: str) -> list[dict]:
    """This sample's records in this mode since its last reset, in order."""
    out: list[dict] = []
    for rec in run.records(INGEST_FILE):
        if rec.get("sample_id") != sample_id:
            continue
        if rec.get("kind") == "reset":
            out.clear()
        elif rec.get("mode") == mode:
            out.append(rec)
    return out


def done_sessions(run: RunFolder, sample_id: str, mode: str) -> dict[int, dict]:
    """Sessions recorded ``ok`` for this sample and mode since the last reset (a session that
    stored zero observations is not done: a rerun sends it again)."""
    return {int(rec["session"]): rec for rec in _since_reset(run, sample_id, mode)
            if rec.get("status") == "ok" and rec.get("observations", 1) > 0}


def empty_sessions(run: RunFolder, sample_id: str, mode: str) -> set[int]:
    """Sessions whose latest record since the last reset says the Worker stored nothing for them."""
    latest = {int(rec["session"]): rec for rec in _since_reset(run, sample_id, mode) if rec.get("kind") == "session"}
    return {n for n, r in latest.items() if r.get("status") == "failed" and ZERO_OBSERVATIONS in (r.get("error") or "")}


def _session_observations(client: WorkerClient, project: str, csid: str, before: set[int]) -> tuple[list, int]:
    """(the observations this session produced, observations in the project now): those tagged with
    the session, else those that were not there before it."""
    obs = client.list_observations(project)
    if any("source_session" in o.metadata for o in obs):
        return [o for o in obs if o.metadata.get("source_session") == csid], len(obs)
    return [o for o in obs if o.id not in before], len(obs)


def generation(run: RunFolder, sample_id: str) -> str:
    """The id of the latest ``--force`` reset of this sample in this run ('' before any)."""
    gen = ""
    for rec in run.records(INGEST_FILE):
        if rec.get("sample_id") == sample_id and rec.get("kind") == "reset":
            gen = str(rec.get("generation") or "")
    return gen


def drain(client: WorkerClient, project: str, timeout: float, poll_interval: float) -> float:
    """Wait until the Worker's queue is empty (its compressor idle); returns the seconds waited.
    Raises :class:`QueueStuck` after ``timeout``, or ``GeneratorPaused`` (claude-mem's generator gave
    up on a slow compressor call)."""
    from locomo_kit.generator_watch import llm_timeout_s, wait_for_queue

    if not hasattr(client, "llm_timeout_s"):  # claude-mem's compressor timeout, read once per client
        client.llm_timeout_s = llm_timeout_s(client)  # type: ignore[attr-defined]
    try:
        return wait_for_queue(client, project, timeout, poll_interval, client.llm_timeout_s)  # type: ignore[attr-defined]
    except WorkerTimeout as exc:
        raise QueueStuck(f"{exc}; the Worker's compressor is not processing (check its provider settings and "
                         f"logs, e.g. ~/.claude-mem/logs/)") from exc


def _ingest_transcript(client: WorkerClient, conv: Conversation, session: Session, timeout: float,
                       poll_interval: float, before: int, gen: str) -> tuple[list, int]:
    """(the session's observations, observations in the project now).

    The queue is drained first, so that the previous session's summary is not still computing when
    this one's calls are queued: on a one-slot compressor server they would wait behind it, and
    claude-mem's per-call timeout counts that wait."""
    csid = adapter.content_session_id(conv.sample_id, session.number)
    project = adapter.project_name(conv.sample_id)
    drain(client, project, timeout, poll_interval)
    ids_before = {o.id for o in client.iter_observations(project)}
    init = client.init_session(csid, project, adapter.init_prompt(conv, session))
    # claude-mem answers "duplicate" when the same prompt reached the same session within 10 s (e.g. a
    # resume right after a Worker restart): the session exists, so go on; any other skip is a failure
    if init.get("skipped") and init.get("reason") != "duplicate":
        raise WorkerError(f"Worker skipped session init: {init.get('reason')}")
    failed_before = client.processing_status().get("failed")
    queued = client.queue_observation(csid, **adapter.read_tool_call(conv, session, gen))
    if queued.get("status") not in ("queued", "skipped") or (
            queued.get("status") == "skipped" and queued.get("reason") != "duplicate"):
        raise WorkerError(f"Worker did not queue the transcript: {queued}")
    drain(client, project, timeout, poll_interval)
    failed_after = client.processing_status().get("failed")
    if isinstance(failed_before, int) and isinstance(failed_after, int) and failed_after > failed_before:
        raise WorkerError(f"the Worker failed to process the transcript of session {session.number} (its failed "
                          f"count rose from {failed_before} to {failed_after}; see its log); rerun to send it again")
    client.summarize(csid, f"Session {session.number} of {conv.sample_id} ingested.")
    return _session_observations(client, project, csid, ids_before)


def _ingest_turns(client: WorkerClient, conv: Conversation, session: Session, existing_titles: set[str]) -> int:
    project = adapter.project_name(conv.sample_id)
    saved = 0
    for turn in session.turns:
        title = adapter.turn_title(conv.sample_id, turn)
        if title not in existing_titles:
            client.save_memory(adapter.turn_memory_text(conv, session, turn), project, title=title,
                               metadata=adapter.turn_metadata(conv.sample_id, session, turn))
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
               disable=progress_enabled() if progress is None else not progress)
    for session in bar:
        csid = adapter.content_session_id(conv.sample_id, session.number)
        start = time.monotonic()
        result = SessionResult(conv.sample_id, session.number, csid, project, mode, "ok", worker_url=client.base_url)
        try:
            if mode == "transcript":
                from locomo_kit.scoring.compression import session_fidelity

                stored, known = _ingest_transcript(client, conv, session, session_timeout, poll_interval, known, gen)
                result.observations = len(stored)
                kept = session_fidelity(session, [o.content for o in stored])
                result.turns, result.turns_kept = kept["turns"], kept["turns_kept"]
                result.fidelity, result.lost_turns = kept["fidelity"], kept["lost_turns"]
            else:
                result.observations = _ingest_turns(client, conv, session, titles)
            if result.observations == 0:
                result.status = "failed"
                result.error = (f"{ZERO_OBSERVATIONS} (its compressor dropped "
                                "or skipped it; see the Worker's logs)")
        except WorkerError as exc:
            result.status, result.error = "failed", str(exc)
            from locomo_kit.generator_watch import GeneratorPaused

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


def ingest(client: WorkerClient, conversations: Iterable[Conversation], run: RunFolder, **kwargs) -> IngestSummary:
    """Ingest several conversations; one summary over all of them. Stops at the first stuck queue."""
    conversations = list(conversations)
    results, skipped, aborted, not_attempted = [], 0, None, 0
    for conv in conversations:
        if aborted:
            not_attempted += len(conv.sessions)
            continue
        s = ingest_conversation(client, conv, run, **kwargs)
        results += s.results
        skipped += s.skipped
        aborted, not_attempted = s.aborted, not_attempted + s.not_attempted
    summary = IngestSummary(results, skipped, aborted, not_attempted)
    if kwargs.get("mode", "transcript") == "transcript" and results and not aborted and conversations:
        try:  # the last session's summary: the Worker is idle when ingestion returns
            drain(client, adapter.project_name(conversations[-1].sample_id), kwargs.get("session_timeout", 180.0),
                  kwargs.get("poll_interval", 3.0))
        except WorkerError as exc:
            summary.notes.append(f"the Worker's last session summary is still being written: {exc}")
    return summary


def session_table(run: RunFolder, sample_id: str, mode: str) -> list[dict]:
    """The latest ``ok`` record per session, for display."""
    return [done_sessions(run, sample_id, mode)[k] for k in sorted(done_sessions(run, sample_id, mode))]


# -- verification ----------------------------------------------------------------------------
def verify(client: WorkerClient, conv: Conversation, top: int = 3, query_strategy: str = "question") -> dict:
    """Count the project's observations and probe search with one question of categories 4, 1, 2."""
    from locomo_kit.qa.retrieval import retrieve

    project = adapter.project_name(conv.sample_id)
    obs = client.list_observations(project)
    probes = []
    for category in (4, 1, 2):
        q = next((q for q in questions(conv) if q.category == category), None)
        if q is None:
            continue
        result = retrieve(client, q.question, project, top, query_strategy)
        probes.append({
            "question": q.question, "category": q.category_name, "gold": q.answer,
            "latency_ms": round(result.latency_ms, 1),
            "results": [{"id": o.id, "title": o.title, "text": (o.narrative or "")[:200]} for o in result.observations],
        })
    return {
        "project": project,
        "query_strategy": query_strategy,
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
