"""The run pipeline's side of a :class:`~locomo_kit.systems.base.MemorySystem`: where a (non-Worker) system's
ingestion lives, its identity in run ids, how it is opened, and its memories as the answerer's context.
A claude-mem Worker's ingestion is named by its URL and mode instead (:func:`locomo_kit.runs.default_ingest_id`)."""

from __future__ import annotations

import hashlib
import json
from contextlib import contextmanager
from typing import Any, Iterator

from locomo_kit.runs import RunFolder, ingestion_folder, slug
from locomo_kit.runs import default_ingest_id as worker_ingest_id
from locomo_kit.systems import registry
from locomo_kit.systems.base import Memory, MemorySystem
from locomo_kit.worker.client import Observation


def system_tag(name: str) -> str:
    """``bm25-0.3.16``: the system's name and (where known before it starts) its version, for run ids."""
    cls = registry.resolve(name)
    version = cls.declared_version()
    return cls.run_tag() or (f"{name}-{version}" if version else name)


def options_tag(options: dict[str, Any] | None) -> str:
    """``o1a2b3c4d``: a short hash of a system's options ('' without any), so that each setting has its own
    ingestion and runs."""
    if not options:
        return ""
    return "o" + hashlib.sha256(json.dumps(options, sort_keys=True, default=str).encode()).hexdigest()[:8]


def default_ingest_id(sample: str, name: str, options: dict[str, Any] | None = None) -> str:
    """One ingestion per sample, system and options, shared by the runs that use it."""
    tag = options_tag(options)
    return slug(f"{sample}-{system_tag(name)}" + (f"-{tag}" if tag else ""))


def ingestion(sample: str, name: str, ingest_id: str | None = None,
              options: dict[str, Any] | None = None) -> RunFolder:
    return ingestion_folder(ingest_id or default_ingest_id(sample, name, options))


def system_settings(name: str, worker_url: str, mode: str, options: dict[str, Any] | None,
                    session_timeout: float | None = None, poll_interval: float | None = None) -> dict[str, Any]:
    """What ``name`` is opened with: a Worker's URL, mode and queue timings, or the system's own options."""
    if not registry.is_worker(name):
        return dict(options or {})
    settings: dict[str, Any] = {"url": worker_url, "mode": mode}
    if session_timeout is not None:
        settings["session_timeout"] = session_timeout
    if poll_interval is not None:
        settings["poll_interval"] = poll_interval
    return settings


def ingestion_of(name: str, sample: str, worker_url: str, mode: str, ingest_id: str | None,
                 options: dict[str, Any] | None) -> RunFolder:
    """The ingestion folder a run of ``name`` stands on (one per sample and Worker, or per sample, system and
    options), or the one named ``ingest_id``."""
    if registry.is_worker(name):
        return ingestion_folder(ingest_id or worker_ingest_id(sample, mode, worker_url))
    return ingestion(sample, name, ingest_id, options)


@contextmanager
def open_system(name: str, folder: RunFolder, options: dict[str, Any] | None = None) -> Iterator[MemorySystem]:
    """``name`` opened on ``folder`` (its store is the ingestion folder itself), checked healthy. A Worker's
    folder is made only once the Worker answers (the embedded one's database is in it)."""
    store = folder.path if registry.is_worker(name) else folder.create().path
    system = registry.create(name, store, **(options or {}))
    with system:
        health = system.health()
        if not health.ok:
            raise RuntimeError(f"{name} is not usable: {health.detail}")
        yield system


def observation(m: Memory) -> Observation:
    """A system's memory in the shape the kit's context builder, answerers and scorers read (a Worker's
    memory is its own observation, unchanged)."""
    if isinstance(m.raw, Observation):
        return m.raw
    meta = {**m.metadata, "source_turns": list(m.source_turns), "score": m.score}
    if m.session is not None:
        meta["session"] = m.session
    if m.date:
        meta["session_date"] = m.date
    return Observation(id=m.id or m.text[:40], project=None, type=None, title=None, subtitle=None, narrative=m.text,
                       text=None, facts=[], concepts=[], created_at=None, created_at_epoch=None, metadata=meta)

