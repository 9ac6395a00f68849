"""Shared by the real-package tests of the subprocess-hosted systems (MemPalace, Mem0)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys

import pytest


def require_toolchain() -> None:
    """Skip, saying why, when this Python cannot make the virtual environment a system is built in."""
    if importlib.util.find_spec("venv") is None or importlib.util.find_spec("ensurepip") is None:
        pytest.skip(f"{sys.executable} has no venv/ensurepip module: the kit cannot build a system's own "
                    "environment here (install python3-venv)")
    probe = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True, text=True)
    if probe.returncode != 0 or shutil.which("tar") is None:
        pytest.skip(f"pip does not run under {sys.executable}: {probe.stderr.strip()[-300:]}")
