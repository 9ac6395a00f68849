"""Test isolation for every pytest run (``make test``, ``pytest tests``, ``pytest --nbval notebooks``).

Before anything is collected: API keys, base URLs and Worker settings are removed from the
environment (the notebook kernels and subprocesses the tests start inherit that), and
``LOCOMO_OUTPUTS_DIR`` points at a temporary folder, so no test can spend money, reach a user's
Worker, or write under the project's ``outputs/``. In-process connections to anything but
loopback are refused. At the end the session fails if ``outputs/`` changed anyway.
"""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import socket
import tempfile
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]  # tests that run a pytest session of their own (the adapter contract's)
PROJECT_ROOT = Path(__file__).resolve().parent
SECRET = re.compile(r"(_API_KEY|_AUTH_TOKEN|_ACCESS_TOKEN|_BASE_URL|_API_BASE)$")
REMOVED = ("LOCOMO_WORKER_URL", "LOCOMO_WORKER_TOKEN", "LOCOMO_ANTHROPIC_API_VERSION", "LOCOMO_PRICES",
           "LOCOMO_EMBEDDER", "LOCOMO_OUTPUTS_DIR")
_state: dict = {}


def _outputs_snapshot() -> dict[str, tuple[int, int]]:
    root = PROJECT_ROOT / "outputs"
    if not root.is_dir():
        return {}
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in root.rglob("*") if p.is_file() and p.name != "README.md"}


def _loopback(address) -> bool:
    if not isinstance(address, tuple):  # AF_UNIX paths
        return True
    host = address[0]
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def pytest_configure(config: pytest.Config) -> None:
    for name in list(os.environ):
        if SECRET.search(name) or name in REMOVED:
            del os.environ[name]
    tmp = tempfile.mkdtemp(prefix="locomo-test-outputs-")
    os.environ["LOCOMO_OUTPUTS_DIR"] = tmp
    _state["tmp"] = tmp
    _state["outputs"] = _outputs_snapshot()
    real_connect = socket.socket.connect

    def guarded_connect(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address):
            raise ConnectionRefusedError(f"tests may only connect to loopback, not {address!r}")
        return real_connect(self, address)

    socket.socket.connect = guarded_connect  # type: ignore[method-assign]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if "outputs" in _state and _outputs_snapshot() != _state["outputs"]:
        session.exitstatus = 1
        print(f"\nERROR: the tests changed {PROJECT_ROOT / 'outputs'}: they must write under LOCOMO_OUTPUTS_DIR only")
    shutil.rmtree(_state.get("tmp", ""), ignore_errors=True)
