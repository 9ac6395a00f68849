"""A Worker's identity (what answers, with which settings, holding what) and the checks that keep
results from one Worker from being reused for another.

- :func:`check_run_worker`: a run's answers came from one Worker identity (name, version, settings,
  instance id); when the Worker now answering differs, the run stops with the differences instead
  of mixing the two.
- :func:`check_ingestion_held`: before reusing a recorded ingestion, the Worker must still hold the
  project's observations. A Worker that holds none of them (restarted on an empty database) is
  ingested again; one that holds fewer than were recorded stops with what to do.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from locomo_kit.dataset import Conversation
from locomo_kit.runs import RunFolder, utc_now
from locomo_kit.runs.records import INGEST_FILE, done_sessions
from locomo_kit.worker import transcript
from locomo_kit.worker.client import WorkerClient

# settings that say where a Worker runs, not what it answers
PLACEMENT_SETTINGS = frozenset({"host", "port", "db_path", "token", "llm_api_key", "log_level", "max_body_bytes",
                                "max_query_chars", "parent_pid", "allowed_hosts", "header_timeout", "static_cache",
                                "search_concurrency", "max_attempts", "retry_base_seconds", "chunk_memories"})


# settings that change the memories a Worker forms from the same conversation (not how it searches them)
FORMATION_SETTINGS = frozenset({"embedder", "extractor", "llm_provider", "llm_model", "llm_base_url",
                                "dedup_threshold"})


def formation_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What differs between two identities in how their memories were formed: name, version, and the
    settings in :data:`FORMATION_SETTINGS` (a search setting may change over the same memories)."""
    changes = [f"{key} {old[key]} → {new[key]}" for key in ("name", "version")
               if old.get(key) is not None and new.get(key) is not None and old[key] != new[key]]
    a, b = old.get("settings"), new.get("settings")
    if isinstance(a, dict) and isinstance(b, dict):
        changes += [f"setting {k} {json.dumps(a.get(k))} → {json.dumps(b.get(k))}" for k in sorted(FORMATION_SETTINGS)
                    if k in a and k in b and a[k] != b[k]]
    return changes


class WorkerMismatch(RuntimeError):
    """The Worker now answering is not the one a run's or an ingestion's records came from."""


def worker_identity(worker_url: str, base_url: str, health: dict) -> dict[str, Any]:
    """What identifies a Worker's results: URL (not for the embedded one, whose port changes),
    name, version, settings and, where the Worker reports one, its instance id."""
    ident = {"url": "embedded" if worker_url == "embedded" else base_url,
             "name": health.get("name") or ("memworker" if worker_url == "embedded" else "claude-mem"),
             "version": health.get("version"), "settings": _result_settings(health.get("settings"))}
    instance = health.get("instance_id") or health.get("instanceId")
    if instance:
        ident["instance_id"] = instance
    return ident


def _result_settings(settings: Any) -> Any:
    if not isinstance(settings, dict):
        return settings
    return {k: v for k, v in settings.items() if k not in PLACEMENT_SETTINGS}


def identity_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Human-readable differences between two identities (empty when they are the same Worker)."""
    changes = []
    for key in ("url", "name", "version", "instance_id"):
        if old.get(key) is not None and new.get(key) is not None and old[key] != new[key]:
            changes.append(f"{key} {old[key]} → {new[key]}")
    a, b = old.get("settings") or {}, new.get("settings") or {}
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                changes.append(f"setting {key} {json.dumps(a.get(key))} → {json.dumps(b.get(key))}")
    elif a != b:
        changes.append("settings changed")
    return changes


def ingestion_generations(ingestion: RunFolder, conversations: list[Conversation]) -> dict[str, str]:
    """Per sample, the id of the latest reset of its ingestion ('' before any): it changes whenever
    the Worker was ingested again, so answers from before no longer describe what it holds."""
    gens = {c.sample_id: "" for c in conversations}
    for rec in ingestion.records(INGEST_FILE):
        if rec.get("kind") == "reset" and rec.get("sample_id") in gens:
            gens[rec["sample_id"]] = str(rec.get("generation") or rec.get("at") or "reset")
    return gens


def check_run_worker(run: RunFolder, identity: dict[str, Any], has_results: bool,
                     generations: dict[str, str] | None = None) -> None:
    """Raise :class:`WorkerMismatch` when ``run`` already holds results from another Worker, or from
    before the Worker was ingested again (``generations``, see :func:`ingestion_generations`)."""
    answer = run.manifest().get("answer", {})
    recorded = answer.get("worker")
    if not has_results or not recorded:
        return
    changes = identity_changes(recorded, identity)
    old_gens = answer.get("ingestion_generations")
    if generations is not None and old_gens is not None:
        again = sorted(s for s, g in generations.items() if s in old_gens and old_gens[s] != g)
        if again:
            changes.append(f"{', '.join(again)} ingested again since these answers")
    if changes:
        raise WorkerMismatch(
            f"run {run.run_id} holds results from another Worker ({'; '.join(changes[:4])}"
            f"{'; …' if len(changes) > 4 else ''}): they are not reused for this one. Give this Worker its own run "
            f"with --run-id NAME (or delete {run.path} to start this run again).")


def check_ingestion_held(client: WorkerClient, ingestion: RunFolder, conversations: list[Conversation], mode: str,
                         identity: dict[str, Any]) -> list[str]:
    """Check that the Worker still holds what ``ingestion`` recorded, conversation by conversation.

    Returns one line per conversation to ingest again (a reset record is appended, so the next
    ingestion sends every session again); raises :class:`WorkerMismatch` when the Worker holds part
    of it or is another instance holding other data.
    """
    recorded = ingestion.manifest().get("ingest", {}).get("worker") or {}
    old_instance, new_instance = recorded.get("instance_id"), identity.get("instance_id")
    formed = formation_changes(recorded, identity)
    notes = []
    for conv in conversations:
        done = done_sessions(ingestion, conv.sample_id, mode)
        if not done:
            continue
        project = transcript.project_name(conv.sample_id)
        expected = sum(int(r.get("observations") or 0) for r in done.values())
        held = sum(1 for _ in client.iter_observations(project))
        check_partial(client, ingestion, conv, done, held)
        other_instance = bool(old_instance and new_instance and old_instance != new_instance)
        if held == 0:
            why = (f"the Worker at {client.base_url} holds none of {project}'s {expected} observations recorded at "
                   f"ingestion" + (f" (another instance: {old_instance} → {new_instance})" if other_instance else ""))
            ingestion.append(INGEST_FILE, {"kind": "reset", "sample_id": conv.sample_id, "project": project,
                                           "deleted_observations": 0, "generation": uuid.uuid4().hex[:12],
                                           "reason": why, "at": utc_now()})
            notes.append(f"{why}: ingesting {conv.sample_id} again")
        elif formed:
            raise WorkerMismatch(
                f"the memories of {project} were formed by another Worker ({'; '.join(formed[:4])}): they are not "
                f"reused. Run `locomo-kit ingest --sample {conv.sample_id} --force` to forget them and ingest again "
                f"with this one (or give it its own ingestion with --ingest-id NAME)")
        elif other_instance:
            raise WorkerMismatch(
                f"the Worker at {client.base_url} is another instance ({old_instance} → {new_instance}) holding "
                f"{held} observations of {project}: run `locomo-kit ingest --sample {conv.sample_id} --force` to "
                "forget them and ingest again")
        elif held < expected:
            raise WorkerMismatch(
                f"the Worker at {client.base_url} holds {held} observations of {project}, fewer than the {expected} "
                f"recorded at ingestion (it lost data since): run `locomo-kit ingest --sample {conv.sample_id} "
                "--force` to forget the project and ingest again")
    return notes


def check_partial(client: WorkerClient, ingestion: RunFolder, conv: Conversation, done: dict[int, dict],
                  held: int) -> None:
    """For a conversation cut to its first sessions (``--sessions``): raise :class:`WorkerMismatch`
    when the ingestion recorded later sessions, or the Worker holds more of the project than it
    recorded (sessions another ingestion gave it), which the answers would search."""
    if not conv.partial or not done:
        return
    beyond = sorted(n for n in done if n > len(conv.sessions))
    if beyond:
        raise WorkerMismatch(
            f"the ingestion {ingestion.run_id} holds sessions {beyond[0]}-{beyond[-1]} of {conv.sample_id}, past the "
            f"first {len(conv.sessions)} this run asks for: the answers would search them. Leave the ingestion id "
            "to its default (one per --sessions) or name another with --ingest-id")
    expected = sum(int(r.get("observations") or 0) for r in done.values())
    if held > expected:
        raise WorkerMismatch(
            f"the Worker at {client.base_url} holds {held} observations of {transcript.project_name(conv.sample_id)}, "
            f"more than the {expected} this ingestion of {conv.sample_id}'s first {len(conv.sessions)} sessions "
            "recorded: it holds sessions another ingestion gave it, which the answers would search. Use a Worker "
            "of its own for a run over the first sessions (a fresh one, or another CLAUDE_MEM_DATA_DIR)")


def ingestion_state(ingestion: RunFolder, conv: Conversation, mode: str) -> tuple[int, int]:
    """(sessions recorded ok, sessions in the conversation)."""
    return len(done_sessions(ingestion, conv.sample_id, mode)), len(conv.sessions)
