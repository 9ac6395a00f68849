"""The run pipeline's side of a non-Worker :class:`~locomo_kit.systems.base.MemorySystem` (bm25, dense,
mempalace, mem0...): where its ingestion lives, its identity in run ids, and its memories as the
answerer's context. Worker systems (memworker, claude-mem) keep :mod:`locomo_kit.pipeline.stages`'s Worker path."""

from __future__ import annotations

import hashlib
import json
from contextlib import contextmanager
from typing import Any, Iterator

from locomo_kit.runs import RunFolder, ingestion_folder, slug
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


@contextmanager
def open_system(name: str, folder: RunFolder, options: dict[str, Any] | None = None) -> Iterator[MemorySystem]:
    """``name`` opened on ``folder`` (its store is the ingestion folder itself), checked healthy."""
    system = registry.create(name, folder.create().path, **(options or {}))
    with system:
        health = system.health()
        if not health.ok:
            raise RuntimeError(f"{name} is not usable: {health.detail}")
        yield system


def observation(m: Memory) -> Observation:
    """A system's memory in the shape the kit's context builder, answerers and scorers read."""
    meta = {**m.metadata, "source_turns": list(m.source_turns), "score": m.score}
    if m.session is not None:
        meta["session"] = m.session
    if m.date:
        meta["session_date"] = m.date
    return Observation(id=m.id or m.text[:40], project=None, type=None, title=None, subtitle=None, narrative=m.text,
                       text=None, facts=[], concepts=[], created_at=None, created_at_epoch=None, metadata=meta)


def identity_record(system: MemorySystem) -> dict[str, Any]:
    """The identity as the manifest's ``worker`` / ``system`` entry (the report reads name, version, url)."""
    ident = system.identity().as_dict()
    health = system.health()
    ident["semantic_search"] = health.capabilities.get("semantic_search")
    return ident
