"""Run folders: ``outputs/runs/<run_id>/`` with a manifest and append-only JSONL records.

One run is one configuration: a run's id derives from everything that changes its results
(:class:`RunConfig`), so ``--top-k 4`` and ``--top-k 8`` are two runs with two reports.
Ingestion is shared by the runs that use the same sample, mode and Worker: it lives in its own
folder ``outputs/runs/<sample>-<mode>-<worker>/`` (``ingest.jsonl``, and the embedded Worker's
database); a run named with ``--run-id`` keeps its ingestion in its own folder.

Each stage appends one record per item as soon as the item is done (flushed and fsynced), and
skips items already recorded for the same configuration, so a crash or Ctrl-C loses at most the
item in flight and rerunning the same command resumes. An append is a whole line or nothing: a
torn last line (a crash or a full disk mid-write) is cut off before the next append, and a
write that fails (disk full, read-only) raises :class:`RunStorageError`, saying what to do.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import platform
import re
import stat
import subprocess
import sys
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Iterator

from locomo_kit.paths import checkout, outputs_dir, write_atomic

# Record files parsed in this process, by (path, size, modification time, inode): a report, a leaderboard's page
# or a comparison reads the same answers and scores many times
PARSED_FILES = 16
_PARSED: dict[tuple[str, int, int, int], list[dict[str, Any]]] = {}


def _lock(fd: int, kind: int) -> None:
    """``flock`` the file (released when it is closed, or its process dies); a file system without locks leaves
    writers to the caller, as before."""
    try:
        fcntl.flock(fd, kind)
    except OSError:
        pass


def _parse_records(path: Path) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        _lock(fh.fileno(), fcntl.LOCK_SH)  # not while another process is halfway through a line (append)
        text = fh.read()
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError:
            warnings.warn(f"{path}:{number}: skipping an unreadable record (interrupted write?)")

TRACKED_PACKAGES = ("locomo-kit", "httpx", "anthropic", "openai", "nltk", "numpy", "pandas", "papermill")


class RunStorageError(RuntimeError):
    """The run folder cannot be written (disk full, read-only...); what is recorded stays valid."""


def _storage_error(path: Path, exc: OSError) -> RunStorageError:
    return RunStorageError(f"Cannot write {path}: {exc.strerror or exc}. Free space on that disk (or make it "
                           f"writable), then rerun the same command: everything recorded so far is kept.")


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:80] or "run"


def worker_slug(worker_url: str) -> str:
    if worker_url == "embedded":
        return f"embedded-{embedded_embedder()}"
    return slug(worker_url.split("://")[-1])


def embedded_embedder() -> str:
    """The embedder the embedded memworker uses (it changes what the Worker stores)."""
    return os.environ.get("LOCOMO_EMBEDDER", "minilm")


@dataclass(frozen=True)
class RunConfig:
    """Everything that changes a run's results. Its :meth:`run_id` names the run folder.

    ``extra`` holds further result-changing parameters by name (query strategy, context budget,
    gold key …): a value that is not None changes the id; None leaves ids as they were.
    """

    sample: str = "conv-26"
    mode: str = "transcript"
    worker_url: str = "embedded"
    answer_model: str = "extractive"  # resolved: extractive, anthropic/<m>, openai/<m>, fake/<m>
    top_k: int = 8
    source: str = "memory"  # memory | full-context
    include_adversarial: bool = False
    answer_prompt_version: str = ""
    extra: dict[str, Any] = field(default_factory=dict, hash=False)
    system: str | None = None  # a non-Worker memory system as "name-version" (None: the Worker at worker_url)

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"sample": self.sample, "mode": self.mode, "worker_url": self.worker_url,
                             "answer_model": self.answer_model, "source": self.source,
                             "top_k": self.top_k if self.source == "memory" else None,
                             "include_adversarial": self.include_adversarial,
                             "answer_prompt_version": self.answer_prompt_version}
        if self.worker_url == "embedded":
            d["embedder"] = embedded_embedder()
        if self.system:
            d["system"] = self.system
        d.update({k: v for k, v in sorted(self.extra.items()) if v is not None})
        return d

    def key(self) -> str:
        return hashlib.sha256(json.dumps(self.as_dict(), sort_keys=True, default=str).encode()).hexdigest()[:8]

    def label(self) -> str:
        """Human-readable: ``extractive, top_k 8`` or ``extractive, context budget 1,000 tokens (≤ 100
        memories)`` (what the report's title names)."""
        budget = self.extra.get("context_budget")
        if self.source == "oracle":
            where = "oracle: the question's gold evidence turns only"
        elif self.source != "memory":
            where = "full conversation"
        elif budget:
            where = f"context budget {budget:,} tokens (≤ {self.top_k} memories)"
        else:
            where = f"top_k {self.top_k}"
        parts = [self.answer_model, where]
        parts += [f"{k} {v}" for k, v in sorted(self.extra.items()) if v is not None and k != "context_budget"]
        return ", ".join(parts)

    def run_id(self) -> str:
        model = self.answer_model.split("/")[-1]
        budget = self.extra.get("context_budget")
        where = ("fullctx" if self.source != "memory" else f"b{budget}" if budget else f"k{self.top_k}")
        limit = f"-q{self.extra['limit']}" if self.extra.get("limit") else ""  # the first N questions per sample
        where += limit
        if self.source == "oracle":
            return slug(f"{self.sample}-oracle-{model}{limit}")[:70] + f"-{self.key()}"
        if self.system:
            return slug(f"{self.sample}-{self.system}-{model}-{where}")[:70] + f"-{self.key()}"
        return slug(f"{self.sample}-{self.mode}-{worker_slug(self.worker_url)}-{model}-{where}")[:70] + f"-{self.key()}"


def runs_root() -> Path:
    return outputs_dir() / "runs"


def known_runs(prefix: str = "") -> list[str]:
    """Ids of the runs under ``runs/`` that hold answers (ingestion folders hold none), sorted."""
    root = runs_root()
    if not root.is_dir():
        return []
    return sorted(d.name for d in root.glob(f"{prefix}*")
                  if (d / "manifest.json").is_file() and (d / "answers.jsonl").is_file())


def ingestion_folder(ingest_id: str) -> "RunFolder":
    """The folder of one ingestion (records, and the embedded Worker's database), under ``runs/``:
    a run named with ``--run-id`` holds its own ingestion in its own folder."""
    return RunFolder(ingest_id)


def git_commit() -> str | None:
    """The checkout's commit; None for an installed kit or without git."""
    root = checkout()
    if root is None:
        return None
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=5)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in TRACKED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def _cut_torn_tail(path: Path, fh, size: int) -> int:
    """If the file does not end with a newline, cut its last partial line; returns the new size."""
    if size == 0:
        return 0
    with open(path, "rb") as reader:
        reader.seek(max(0, size - 65536))
        tail = reader.read()
        if tail.endswith(b"\n"):
            return size
        cut = tail.rfind(b"\n")
        if cut < 0 and size > 65536:  # a line longer than the window: find its start
            reader.seek(0)
            whole = reader.read()
            cut, base = whole.rfind(b"\n"), 0
        else:
            base = max(0, size - 65536)
        new_size = base + cut + 1 if cut >= 0 else 0
    warnings.warn(f"{path}: cut a torn last line ({size - new_size} bytes, an interrupted write) before appending")
    fh.truncate(new_size)
    return new_size


class RunFolder:
    def __init__(self, run_id: str, root: Path | None = None) -> None:
        if not run_id or "/" in run_id or run_id in (".", ".."):
            raise ValueError(f"a run id is a folder name, got {run_id!r}")
        self.run_id = run_id
        self.path = (root or runs_root()) / run_id

    def __repr__(self) -> str:
        return f"RunFolder({str(self.path)!r})"

    def exists(self) -> bool:
        return (self.path / "manifest.json").is_file()

    def create(self) -> "RunFolder":
        self.path.mkdir(parents=True, exist_ok=True)
        return self

    # -- manifest -----------------------------------------------------------------------------
    @property
    def manifest_path(self) -> Path:
        return self.path / "manifest.json"

    def manifest(self) -> dict[str, Any]:
        if not self.manifest_path.is_file():
            return {}
        return json.loads(self.manifest_path.read_text())

    def update_manifest(self, **updates: Any) -> dict[str, Any]:
        """Merge ``updates`` (dicts merged one level deep) into the manifest, atomically."""
        self.create()
        data = self.manifest()
        if not data:
            data = {"run_id": self.run_id, "created_at": utc_now(), "git_commit": git_commit(),
                    "packages": package_versions(), "argv": sys.argv}
        for key, value in updates.items():
            if isinstance(value, dict) and isinstance(data.get(key), dict):
                data[key] = {**data[key], **value}
            else:
                data[key] = value
        data["updated_at"] = utc_now()
        try:
            write_atomic(self.manifest_path, json.dumps(data, indent=2, default=str), fsync=True)
        except OSError as exc:
            raise _storage_error(self.manifest_path, exc) from None
        return data

    # -- records ------------------------------------------------------------------------------
    def append(self, name: str, record: dict[str, Any]) -> None:
        """Append one record as one whole line (a torn tail left by a crash is cut off first). Writers take turns
        on the file (an exclusive ``flock``, released when a writer's process dies): processes that append to one
        file at once (a system's conversations split over processes) would otherwise see each other's line half
        written, as a torn tail to cut."""
        path = self.path / name
        line = (json.dumps(record, default=str, ensure_ascii=False) + "\n").encode("utf-8")
        try:
            self.create()
            with open(path, "ab", buffering=0) as fh:
                _lock(fh.fileno(), fcntl.LOCK_EX)
                size = _cut_torn_tail(path, fh, fh.seek(0, os.SEEK_END))
                try:
                    view = memoryview(line)
                    while view:
                        view = view[fh.write(view):]
                    os.fsync(fh.fileno())
                except OSError:
                    os.ftruncate(fh.fileno(), size)  # no half line left behind
                    raise
        except OSError as exc:
            raise _storage_error(path, exc) from None

    def records(self, name: str) -> Iterator[dict[str, Any]]:
        """Records of ``name``; a torn last line (a crash mid-write) is skipped with a warning. A file read before
        and unchanged since (its size, time and inode) is not parsed again: each record comes as a copy of its
        top level, as a new read would give it."""
        path = self.path / name
        try:
            st = path.stat()
        except OSError:
            return
        if not stat.S_ISREG(st.st_mode):
            return
        key = (str(path), st.st_size, st.st_mtime_ns, st.st_ino)
        parsed = _PARSED.pop(key, None)
        if parsed is None:
            parsed = list(_parse_records(path))
        _PARSED[key] = parsed  # the most recent last
        while len(_PARSED) > PARSED_FILES:
            _PARSED.pop(next(iter(_PARSED)))
        for record in parsed:
            yield dict(record)
