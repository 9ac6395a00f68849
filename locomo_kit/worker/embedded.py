"""Start the reference Worker (memworker) as a child process on a free loopback port.

The kit never imports memworker: it runs ``python -m memworker`` and talks to it over HTTP.
The child dies with the kit: it is told the kit's pid (``--parent-pid``) and shuts down when the
kit is gone, however the kit ended (SIGKILL included). memworker locks its database, so a Worker
still shutting down after a killed run makes the next run wait for it instead of serving twice.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from locomo_kit.worker.client import WorkerClient, WorkerError


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class EmbeddedWorker:
    """``with EmbeddedWorker(db_path) as url: ...``: a memworker for the duration of the block."""

    def __init__(self, db_path: Path, embedder: str | None = None, log_path: Path | None = None,
                 startup_timeout: float = 120.0, extra_args: list[str] | None = None) -> None:
        self.db_path = Path(db_path)
        self.embedder = embedder or os.environ.get("LOCOMO_EMBEDDER", "minilm")
        self.log_path = Path(log_path) if log_path else self.db_path.with_suffix(".log")
        self.startup_timeout = startup_timeout
        self.extra_args = extra_args or []
        self.port = 0
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> str:
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        deadline = time.monotonic() + self.startup_timeout
        self._spawn()
        while True:
            with WorkerClient(self.url, retries=0, token="") as client:
                health = self._wait_until_ready(client, deadline)
            if health.get("pid") == self.process.pid:
                return self.url
            # another server took the free port before memworker bound it: start again on a new one
            self.stop()
            if time.monotonic() > deadline:
                self._fail(f"port {self.port} answered as {health.get('name')!r} (pid {health.get('pid')}), "
                           "not as the memworker started here")
            self.port = free_port()
            self._spawn()

    def _wait_until_ready(self, client: WorkerClient, deadline: float) -> dict:
        """The health of whatever answers on the port once it is ready (memworker's, unless another took it)."""
        while True:
            if self.process.poll() is not None:
                if self._locked_by_previous_worker() and time.monotonic() < deadline:
                    time.sleep(0.5)  # a Worker of a killed run is still shutting down
                    self._spawn()
                    continue
                self._fail(f"memworker exited with code {self.process.returncode}")
            try:
                return client.wait_until_ready(timeout=0)
            except WorkerError as exc:
                if time.monotonic() > deadline:
                    self._fail(f"memworker not ready after {self.startup_timeout:.0f} s ({exc})")
            time.sleep(0.1)

    def _spawn(self) -> None:
        cmd = [sys.executable, "-m", "memworker", "--host", "127.0.0.1", "--port", str(self.port),
               "--db-path", str(self.db_path), "--embedder", self.embedder, "--parent-pid", str(os.getpid()),
               *self.extra_args]
        self._log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def _locked_by_previous_worker(self) -> bool:
        if not self.log_path.exists():
            return False
        with open(self.log_path, "rb") as fh:
            fh.seek(self._log_offset)
            return b"is already serving" in fh.read()

    def _fail(self, why: str) -> None:
        self.stop()
        tail = self.log_path.read_text(errors="replace")[-2000:] if self.log_path.exists() else ""
        raise RuntimeError(f"{why}. Its log ({self.log_path}):\n{tail}")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
