"""The run pipeline's side of a :class:`~locomo_kit.systems.base.MemorySystem`: a :class:`~locomo_kit.settings.SystemSpec`
resolved once (:func:`resolve_system`) into the system's name, its checked options, its identity in run ids,
its ingestion folder and how it is opened; and its memories as the answerer's context."""

from __future__ import annotations

import hashlib
import json
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

from locomo_kit.runs import RunFolder, ingestion_folder, slug, worker_slug
from locomo_kit.settings import SystemSpec, as_system
from locomo_kit.systems import registry
from locomo_kit.systems.base import Memory, MemorySystem
from locomo_kit.systems.options import checked_options
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


@dataclass(frozen=True)
class ResolvedSystem:
    """A :class:`~locomo_kit.settings.SystemSpec` resolved: the system's name, its options checked and typed,
    and everything the stages ask of it (its ingestion folder, its fields in a run's configuration, how it is
    opened). Made by :func:`resolve_system`."""

    spec: SystemSpec
    name: str
    options: dict[str, Any] | None

    @property
    def worker(self) -> bool:
        """Spoken to over the claude-mem Worker HTTP API (memworker, claude-mem)."""
        return registry.is_worker(self.name)

    def ingestion(self, sample: str, ingest_id: str | None = None) -> RunFolder:
        """The ingestion folder a run of this system on ``sample`` stands on: ``ingest_id`` (or the spec's) when
        given, else one per sample, mode and Worker (``conv-26-transcript-embedded-minilm``), or per sample,
        system and options (``conv-26-bm25-0.3.16``), shared by the runs that use it."""
        chosen = ingest_id or self.spec.ingest_id
        if chosen:
            return ingestion_folder(chosen)
        if self.worker:
            return ingestion_folder(slug(f"{sample}-{self.spec.mode}-{worker_slug(self.spec.worker_url)}"))
        tag = options_tag(self.options)
        return ingestion_folder(slug(f"{sample}-{system_tag(self.name)}" + (f"-{tag}" if tag else "")))

    def run_fields(self) -> dict[str, Any]:
        """What a run's configuration records of the system: a Worker's URL and mode, or the system's tag
        (``bm25-0.3.16``) and unit, with its options."""
        if self.worker:
            return {"worker_url": self.spec.worker_url, "mode": self.spec.mode, "system": None}
        return {"worker_url": "none", "mode": registry.resolve(self.name).unit, "system": system_tag(self.name)}

    def settings(self, *, ingest: bool = False) -> dict[str, Any]:
        """What the system is opened with: a Worker's URL and mode (``ingest``: and its queue timings), or the
        system's own options."""
        if not self.worker:
            return dict(self.options or {})
        settings: dict[str, Any] = {"url": self.spec.worker_url, "mode": self.spec.mode}
        if ingest:
            settings.update(session_timeout=self.spec.session_timeout, poll_interval=self.spec.poll_interval)
        return settings

    def holds_its_ingestion_elsewhere(self) -> bool:
        """A Worker at a URL of its own keeps its memories there: no ingestion folder is needed to read them."""
        return self.worker and self.spec.worker_url != "embedded"

    def ingest_command(self, sample: str) -> str:
        """The command that ingests ``sample`` into this system."""
        return f"locomo-kit ingest --sample {sample}" + ("" if self.worker else f" --system {self.name}")

    @contextmanager
    def open(self, folder: RunFolder, *, ingest: bool = False) -> Iterator[MemorySystem]:
        """The system opened on ``folder`` (its store is the ingestion folder itself), checked healthy."""
        with open_system(self.name, folder, self.settings(ingest=ingest)) as system:
            yield system


def resolve_system(spec: SystemSpec | ResolvedSystem | str | None = None) -> ResolvedSystem:
    """``spec`` (a :class:`~locomo_kit.settings.SystemSpec`, a name, or None for the default) resolved once: the
    system it names (``--system`` when given, else claude-mem for a Worker URL, else memworker), checked to
    exist, with its options checked against what it declares and typed (so that ``"1.2"`` from the command
    line and ``1.2`` from the library name the same run)."""
    if isinstance(spec, ResolvedSystem):
        return spec
    spec = as_system(spec)
    name = registry.system_name(spec.name, spec.worker_url)
    options = None
    if spec.options:
        if registry.is_worker(name):
            raise ValueError(f"{name} is set by --worker-url, --mode and the Worker's own configuration: "
                             "--system-option is for the other systems")
        options = checked_options(name, registry.resolve(name), spec.options) or None
    return ResolvedSystem(spec, name, options)


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

