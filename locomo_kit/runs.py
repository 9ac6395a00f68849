"""Run folders: ``outputs/runs/<run_id>/`` with a manifest and append-only JSONL records.

Each stage appends one record per item as soon as the item is done (flushed and fsynced), and
skips items already recorded for the same configuration, so a crash or Ctrl-C loses at most the
item in flight and rerunning the same command resumes. An append is a whole line or nothing: a
torn last line (a crash or a full disk mid-write) is cut off before the next append, and a
write that fails (disk full, read-only) raises :class:`RunStorageError`, saying what to do.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
import warnings
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Iterator

from locomo_kit.paths import PROJECT_ROOT, outputs_dir

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


def default_run_id(sample: str, mode: str, worker_url: str) -> str:
    """Deterministic, so that the same command resumes the same run."""
    worker = "embedded" if worker_url == "embedded" else slug(worker_url.split("://")[-1])
    return slug(f"{sample}-{mode}-{worker}")


def runs_root() -> Path:
    return outputs_dir() / "runs"


def latest_run(sample: str | None = None) -> "RunFolder | None":
    """The most recently updated run (optionally for ``sample``), or None."""
    root = runs_root()
    if not root.is_dir():
        return None
    candidates = []
    for d in root.iterdir():
        manifest = d / "manifest.json"
        if not manifest.is_file():
            continue
        try:
            data = json.loads(manifest.read_text())
        except json.JSONDecodeError:
            continue
        if sample is None or data.get("parameters", {}).get("sample") == sample:
            candidates.append((manifest.stat().st_mtime, d.name))
    return RunFolder(max(candidates)[1]) if candidates else None


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(PROJECT_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
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


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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
        tmp = self.manifest_path.with_suffix(".json.tmp")
        try:
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(json.dumps(data, indent=2, default=str))
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.manifest_path)
            _fsync_dir(self.path)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise _storage_error(self.manifest_path, exc) from None
        return data

    # -- records ------------------------------------------------------------------------------
    def append(self, name: str, record: dict[str, Any]) -> None:
        """Append one record as one whole line (a torn tail left by a crash is cut off first)."""
        path = self.path / name
        line = (json.dumps(record, default=str, ensure_ascii=False) + "\n").encode("utf-8")
        try:
            self.create()
            with open(path, "ab", buffering=0) as fh:
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
        """Records of ``name``; a torn last line (a crash mid-write) is skipped with a warning."""
        path = self.path / name
        if not path.is_file():
            return
        with open(path, encoding="utf-8") as fh:
            for number, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    yield json.loads(line)
                except json.JSONDecodeError:
                    warnings.warn(f"{path}:{number}: skipping an unreadable record (interrupted write?)")
