"""Fault-injection helpers: a small real filesystem to fill, memworker as a real process, process checks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from helpers import wait_until


def _mount_tmpfs(path: Path, size: str) -> str | None:
    """Mount a tmpfs of ``size`` at ``path``; the reason it failed, or None."""
    path.mkdir(parents=True, exist_ok=True)
    try:
        out = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    return None if out.returncode == 0 else (out.stderr.strip() or f"mount exited {out.returncode}")


@contextmanager
def small_filesystem(tmp_path: Path, size: str = "16m") -> Iterator[Path]:
    """A real filesystem of ``size`` (tmpfs) that a test can fill up; skips where mounting is not allowed."""
    mnt = tmp_path / "smallfs"
    why = _mount_tmpfs(mnt, size)
    if why:
        pytest.skip(f"cannot mount a small tmpfs here ({why}); the injected-fault tests cover the same paths")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True, timeout=10)


def fill(directory: Path, leave_bytes: int = 0) -> Path:
    """Fill the filesystem holding ``directory`` until no space is left, then free ``leave_bytes``.

    Returns the filler file; deleting it frees the space.
    """
    filler = directory / "filler.bin"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        for size in (1 << 20, 65536, 4096, 512, 1):  # down to the last byte
            block = b"\0" * size
            try:
                while True:
                    os.write(fd, block)
            except OSError:
                pass
    finally:
        os.close(fd)
    if leave_bytes:
        os.truncate(filler, max(0, filler.stat().st_size - leave_bytes))
    return filler


def start_memworker(db: Path, port: int, *args: str, embedder: str = "hashing", env: dict | None = None,
                    stderr=subprocess.DEVNULL) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "memworker", "--port", str(port), "--db-path", str(db),
                             "--embedder", embedder, *args], stdout=subprocess.DEVNULL, stderr=stderr,
                            start_new_session=True, env={**os.environ, **(env or {})})


def wait_ready(url: str, timeout: float = 60.0) -> None:
    def check() -> bool:
        try:
            return httpx.get(f"{url}/api/readiness", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False
    wait_until(check, timeout=timeout)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie counts as dead)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def processes_using(path: Path) -> list[int]:
    """Live processes whose command line names ``path``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(path) in cmdline and alive(int(entry.name)):
            pids.append(int(entry.name))
    return pids
