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

from support.helpers import wait_until


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


class SyncTrace:
    """The fsync and fdatasync calls of this process (every thread), with the file of each: ``strace
    -f -y`` attached to the test process. Skips the test where strace is missing or cannot attach.

    ``with SyncTrace(tmp_path) as t: op(); t.mark(); op(); t.mark()`` — each ``mark()`` fsyncs a
    marker file, which cuts the trace; ``t.intervals()`` lists the files synced before each mark.
    """

    def __init__(self, tmp_path: Path) -> None:
        self.log = tmp_path / "strace.log"
        self.marker = tmp_path / "strace.marker"  # the test's marks
        self.barrier = tmp_path / "strace.barrier"  # attached / all traced: strace has written this far
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> "SyncTrace":
        import shutil

        if not shutil.which("strace"):
            pytest.skip("strace is not installed (apt-get install strace): the fsync count needs it")
        self._marker = os.open(self.marker, os.O_WRONLY | os.O_CREAT)
        self._barrier = os.open(self.barrier, os.O_WRONLY | os.O_CREAT)
        self.proc = subprocess.Popen(["strace", "-f", "-y", "-qq", "-e", "trace=fsync,fdatasync", "-o",
                                      str(self.log), "-p", str(os.getpid())], stderr=subprocess.PIPE)
        try:
            self._wait_barrier(0)
        except AssertionError:
            self._stop()
            err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
            pytest.skip(f"strace cannot attach to the test process here: {err.strip()[:300] or 'no trace'}")
        return self

    def _text(self) -> str:
        return self.log.read_text() if self.log.exists() else ""

    def _wait_barrier(self, seen: int) -> None:
        def passed() -> bool:
            os.fsync(self._barrier)
            return self._text().count(str(self.barrier)) > seen

        wait_until(passed, timeout=10, interval=0.05)

    def mark(self) -> None:
        os.fsync(self._marker)

    def _stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)

    def __exit__(self, *exc) -> None:
        try:
            self._wait_barrier(self._text().count(str(self.barrier)))
        finally:
            self._stop()
            os.close(self._marker)
            os.close(self._barrier)

    def intervals(self) -> list[list[str]]:
        """For each mark, the files synced since the previous mark (or since strace attached)."""
        import re

        out: list[list[str]] = [[]]
        for line in self._text().splitlines():
            m = re.search(r"\b(?:fsync|fdatasync)\(\d+<([^>]*)>", line)
            if not m or "resumed>" in line or m.group(1) == str(self.barrier):
                continue
            if m.group(1) == str(self.marker):
                out.append([])
            else:
                out[-1].append(m.group(1))
        return out[:-1]
