"""The claude-mem Worker calls that ingest one LoCoMo session, and the waits around them.

Per session: wait for the Worker's queue → init → queue the transcript (one ``Read``) → wait → summarize,
then read back the observations the session produced (:func:`ingest_transcript_session`); or, without
the compressor, each turn saved as is (:func:`save_session_turns`). Failures are loud: a Worker whose
compressor cannot run is refused before anything is sent (:func:`check_health`), a queue that makes no
progress within one session timeout raises :class:`QueueStuck`.
"""

from __future__ import annotations

from locomo_kit.dataset import Conversation, Session
from locomo_kit.worker import transcript
from locomo_kit.worker.client import WorkerClient, WorkerError, WorkerTimeout
from locomo_kit.worker.queue import llm_timeout_s, wait_for_queue


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


def session_observations(client: WorkerClient, project: str, csid: str, before: set[int]) -> tuple[list, int]:
    """(the observations this session produced, observations in the project now): those tagged with
    the session, else those that were not there before it."""
    obs = client.list_observations(project)
    if any("source_session" in o.metadata for o in obs):
        return [o for o in obs if o.metadata.get("source_session") == csid], len(obs)
    return [o for o in obs if o.id not in before], len(obs)


def drain(client: WorkerClient, project: str, timeout: float, poll_interval: float) -> float:
    """Wait until the Worker's queue is empty (its compressor idle); returns the seconds waited.
    Raises :class:`QueueStuck` after ``timeout``, or ``GeneratorPaused`` (claude-mem's generator gave
    up on a slow compressor call)."""
    if not hasattr(client, "llm_timeout_s"):  # claude-mem's compressor timeout, read once per client
        client.llm_timeout_s = llm_timeout_s(client)
    try:
        return wait_for_queue(client, project, timeout, poll_interval, client.llm_timeout_s)
    except WorkerTimeout as exc:
        raise QueueStuck(f"{exc}; the Worker's compressor is not processing (check its provider settings and "
                         f"logs, e.g. ~/.claude-mem/logs/)") from exc


def ingest_transcript_session(client: WorkerClient, conv: Conversation, session: Session, timeout: float,
                       poll_interval: float, before: int, gen: str) -> tuple[list, int]:
    """(the session's observations, observations in the project now).

    The queue is drained first, so that the previous session's summary is not still computing when
    this one's calls are queued: on a one-slot compressor server they would wait behind it, and
    claude-mem's per-call timeout counts that wait."""
    csid = transcript.content_session_id(conv.sample_id, session.number)
    project = transcript.project_name(conv.sample_id)
    drain(client, project, timeout, poll_interval)
    ids_before = {o.id for o in client.iter_observations(project)}
    init = client.init_session(csid, project, transcript.init_prompt(conv, session))
    # claude-mem answers "duplicate" when the same prompt reached the same session within 10 s (e.g. a
    # resume right after a Worker restart): the session exists, so go on; any other skip is a failure
    if init.get("skipped") and init.get("reason") != "duplicate":
        raise WorkerError(f"Worker skipped session init: {init.get('reason')}")
    failed_before = client.processing_status().get("failed")
    queued = client.queue_observation(csid, **transcript.read_tool_call(conv, session, gen))
    if queued.get("status") not in ("queued", "skipped") or (
            queued.get("status") == "skipped" and queued.get("reason") != "duplicate"):
        raise WorkerError(f"Worker did not queue the transcript: {queued}")
    drain(client, project, timeout, poll_interval)
    failed_after = client.processing_status().get("failed")
    if isinstance(failed_before, int) and isinstance(failed_after, int) and failed_after > failed_before:
        raise WorkerError(f"the Worker failed to process the transcript of session {session.number} (its failed "
                          f"count rose from {failed_before} to {failed_after}; see its log); rerun to send it again")
    client.summarize(csid, f"Session {session.number} of {conv.sample_id} ingested.")
    return session_observations(client, project, csid, ids_before)


def save_session_turns(client: WorkerClient, conv: Conversation, session: Session, existing_titles: set[str]) -> int:
    project = transcript.project_name(conv.sample_id)
    saved = 0
    for turn in session.turns:
        title = transcript.turn_title(conv.sample_id, turn)
        if title not in existing_titles:
            client.save_memory(transcript.turn_memory_text(conv, session, turn), project, title=title,
                               metadata=transcript.turn_metadata(conv.sample_id, session, turn))
            existing_titles.add(title)
        saved += 1
    return saved
