"""The kit's side of a system host: a subprocess in the system's own environment, spoken to in JSON lines.

Every failure is an error that names the system: the host could not start, an operation raised inside
it (its message and the host's traceback), or the host died or stopped answering (its exit status and
the end of its stderr). A call never waits longer than its timeout.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

HOSTS_DIR = Path(__file__).resolve().parent / "hosts"


class SystemHostError(RuntimeError):
    """A memory system's host failed; the message names the system and what to do."""


class SystemHost:
    """One running host process. Use as a context manager, or call :meth:`close`.

    ``script``: a host script in the kit's ``hosts/`` folder by name, or any host script by path; it runs
    with ``python`` (the system's environment) and imports ``from hostloop import serve``."""

    def __init__(self, system: str, python: Path, script: str, settings: dict, *, env: dict | None = None,
                 cwd: Path | None = None, start_timeout: float = 300.0, call_timeout: float = 1800.0):
        self.system = system
        self.call_timeout = call_timeout
        self._next_id = 0
        self._lock = threading.Lock()
        self._stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")
        full_env = dict(os.environ if env is None else env)
        full_env["PYTHONUNBUFFERED"] = "1"
        # a host script anywhere (``script``: a name in hosts/, or a path) imports ``hostloop`` from hosts/
        full_env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HOSTS_DIR), full_env.get("PYTHONPATH")) if p)
        try:
            self._proc = subprocess.Popen([str(python), "-u", str(HOSTS_DIR / script)], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=self._stderr, env=full_env,
                                          cwd=str(cwd) if cwd else None, text=True, encoding="utf-8")
        except OSError as exc:
            raise SystemHostError(f"{system}: could not start its host ({python} {script}): {exc}") from exc
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True, name=f"{system}-host-reader").start()
        self._send(settings)
        ready = self._receive(start_timeout, "starting")
        if not ready.get("ready"):
            self.close()
            raise SystemHostError(f"{system}: its host could not open the system: {ready.get('error')}\n"
                                  f"{ready.get('traceback', '')}".rstrip())
        self.info: dict = ready.get("info", {})

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _send(self, message: dict) -> None:
        try:
            assert self._proc.stdin is not None
            self._proc.stdin.write(json.dumps(message, ensure_ascii=False) + "\n")
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise self._died("sending a request") from exc

    def stderr_tail(self, chars: int = 3000) -> str:
        if self._stderr.closed:
            return ""
        self._stderr.flush()
        self._stderr.seek(0)
        text = self._stderr.read()
        self._stderr.seek(0, 2)
        return "\n".join(line for line in text.splitlines() if line.strip())[-chars:]

    def _died(self, doing: str) -> SystemHostError:
        try:
            code = self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        tail = self.stderr_tail()
        return SystemHostError(f"{self.system}: its host died while {doing} (exit status {code})"
                               + (f"; the end of its stderr:\n{tail}" if tail else ""))

    def _receive(self, timeout: float, doing: str) -> dict:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            self._kill()
            raise SystemHostError(f"{self.system}: its host gave no answer within {timeout:.0f} s while {doing}; "
                                  f"it was stopped. The end of its stderr:\n{self.stderr_tail()}") from None
        if line is None:
            raise self._died(doing)
        try:
            return json.loads(line)
        except ValueError:
            self._kill()
            raise SystemHostError(f"{self.system}: its host wrote a line that is not JSON while {doing}: "
                                  f"{line[:300]!r}") from None

    def call(self, op: str, timeout: float | None = None, **args: Any) -> Any:
        """Run ``op`` in the host and return its result; raise :class:`SystemHostError` on any failure."""
        with self._lock:
            if self._proc.poll() is not None:
                raise self._died(f"idle before {op}")
            self._next_id += 1
            self._send({"id": self._next_id, "op": op, "args": args})
            answer = self._receive(self.call_timeout if timeout is None else timeout, f"running {op}")
        if not answer.get("ok"):
            raise SystemHostError(f"{self.system}: {op} failed inside the system: {answer.get('error')}\n"
                                  f"{answer.get('traceback', '')}".rstrip())
        return answer.get("result")

    def alive(self) -> bool:
        return self._proc.poll() is None

    def _kill(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()

    def close(self, timeout: float = 30.0) -> None:
        """Close stdin (the host's cue to exit) and wait; kill it if it does not go."""
        if self._proc.poll() is None:
            try:
                assert self._proc.stdin is not None
                self._proc.stdin.close()
            except OSError:
                pass
            try:
                self._proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self._kill()
        self._stderr.close()

    def __enter__(self) -> "SystemHost":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
