"""The real claude-mem Worker (npm release, via ``scripts/claude-mem-peer``) as a test component."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parents[2]
PEER = ROOT / "scripts" / "claude-mem-peer"


def peer(*args: str, timeout: float = 900) -> str:
    proc = subprocess.run([sys.executable, str(PEER), *args], capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"claude-mem-peer {' '.join(args)} failed ({proc.returncode}): {proc.stderr[-3000:]}")
    return proc.stdout


def require_release(chroma: bool = False) -> None:
    """Skip (with the reason, shown by ``-ra``) without npm; otherwise set the release up or fail."""
    missing = [tool for tool in ("npm", "node") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"the real claude-mem Worker needs {' and '.join(missing)} on PATH (not found): "
                    "its integration tests did not run")
    peer("setup", *(["--chroma"] if chroma else []))


@contextmanager
def real_worker(home: Path, compressor_url: str | None = None, port: int = 0, chroma: bool = False,
                model: str | None = None, llm_timeout_ms: int | None = None) -> Iterator[dict]:
    """A running Worker with its own HOME and port; stopped (and waited for) on exit."""
    args = ["start", "--home", str(home)]
    if model:
        args += ["--model", model]
    if llm_timeout_ms:
        args += ["--llm-timeout-ms", str(llm_timeout_ms)]
    if compressor_url:
        args += ["--compressor-url", compressor_url]
    if port:
        args += ["--port", str(port)]
    if chroma:
        args += ["--chroma"]
    info = json.loads(peer(*args))
    try:
        yield info
    finally:
        peer("stop", "--home", str(home))


def worker_pid(home: Path) -> int:
    return int(json.loads((home / ".claude-mem" / "worker.pid").read_text())["pid"])


def worker_log(home: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in sorted((home / ".claude-mem" / "logs").glob("*.log")))


def env_without_outputs(tmp: Path) -> dict:
    return {**os.environ, "LOCOMO_OUTPUTS_DIR": str(tmp / "outputs"), "CI": "1"}
