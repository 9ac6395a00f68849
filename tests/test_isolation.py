"""`make test` (and plain pytest) runs with API keys removed and outputs in a temporary folder."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from locomo_kit.paths import PROJECT_ROOT, outputs_dir


def test_environment_is_clean():
    assert not [k for k in os.environ if k.endswith(("_API_KEY", "_AUTH_TOKEN", "_BASE_URL"))]
    assert "LOCOMO_WORKER_URL" not in os.environ and "LOCOMO_WORKER_TOKEN" not in os.environ
    out = outputs_dir().resolve()
    assert not out.is_relative_to(PROJECT_ROOT.resolve())


def test_only_loopback_connections():
    with socket.socket() as s, pytest.raises(ConnectionRefusedError, match="only connect to loopback"):
        s.connect(("192.0.2.1", 443))


def test_a_key_in_the_callers_environment_does_not_reach_the_tests():
    """pytest run directly (not through make) with keys set: the tests still see none."""
    env = {**os.environ, "ANTHROPIC_API_KEY": "sk-user", "OPENAI_API_KEY": "sk-user",
           "LOCOMO_OUTPUTS_DIR": str(PROJECT_ROOT / "outputs")}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           f"{Path(__file__)}::test_environment_is_clean"],
                          cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:]
