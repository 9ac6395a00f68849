"""A Worker's identity (what answers, with which settings, holding what) and the checks that keep
results from one Worker from being reused for another.

- :func:`check_run_worker`: a run's answers came from one Worker identity (name, version, settings,
  instance id); when the Worker now answering differs, the run stops with the differences instead
  of mixing the two.
- :func:`formation_changes`: what differs in how two Workers form memories (the held-check of
  :mod:`locomo_kit.ingestion.held` refuses to reuse an ingestion formed differently).
"""

from __future__ import annotations

import json
from typing import Any

from locomo_kit.dataset import Conversation
from locomo_kit.runs import RunFolder
from locomo_kit.runs.records import INGEST_FILE, done_sessions

# settings that say where a Worker runs, not what it answers
PLACEMENT_SETTINGS = frozenset({"host", "port", "db_path", "token", "llm_api_key", "log_level", "max_body_bytes",
                                "max_query_chars", "parent_pid", "allowed_hosts", "header_timeout", "static_cache",
                                "search_concurrency", "max_attempts", "retry_base_seconds", "chunk_memories",
                                "embed_threads"})


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


def ingestion_state(ingestion: RunFolder, conv: Conversation, mode: str) -> tuple[int, int]:
    """(sessions recorded ok, sessions in the conversation)."""
    return len(done_sessions(ingestion, conv.sample_id, mode)), len(conv.sessions)
