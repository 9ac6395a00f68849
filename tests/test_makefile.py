"""The Makefile recreates a .venv made by an unsupported Python, and says why."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from locomo_kit.paths import PROJECT_ROOT

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def fake_venv(tmp_path, version: str):
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    python = bin_dir / "python"
    python.write_text(f"#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'Python {version}'; exit 0; fi\nexit 1\n")
    python.chmod(0o755)
    return tmp_path / "venv"


def test_a_venv_from_an_old_python_is_removed_and_made_again(tmp_path):
    venv = fake_venv(tmp_path, "3.9.2")
    proc = subprocess.run(["make", "-n", "setup", f"VENV={venv}", f"PY={sys.executable}"], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert f"{venv} was made by Python 3.9.2; locomo-kit needs Python 3.11 or newer" in proc.stdout
    assert not venv.exists()
    assert f"{sys.executable} -m venv {venv}" in proc.stdout  # and it is made again


def test_a_good_venv_is_kept(tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    proc = subprocess.run(["make", "-n", "setup", f"VENV={venv}"], cwd=PROJECT_ROOT, capture_output=True, text=True,
                          timeout=60)
    assert "was made by" not in proc.stdout and venv.exists()
