"""Offline runs for tests, each in an outputs folder of its own (``LOCOMO_OUTPUTS_DIR``), and the
environment they run in: the fast hashing embedder, no progress bars, no API key."""

from __future__ import annotations

import signal
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from locomo_kit.cli import main
from locomo_kit.runs import RunFolder

OFFLINE = {"LOCOMO_EMBEDDER": "hashing", "ANTHROPIC_API_KEY": None}


def set_outputs(mp: pytest.MonkeyPatch, folder: Path, **env: str | None) -> Path:
    """``folder`` becomes LOCOMO_OUTPUTS_DIR, progress bars go (CI=1), and each of ``env`` is set (None: removed)."""
    mp.setenv("LOCOMO_OUTPUTS_DIR", str(folder))
    mp.setenv("CI", "1")
    for name, value in env.items():
        if value is None:
            mp.delenv(name, raising=False)
        else:
            mp.setenv(name, value)
    return folder


@contextmanager
def offline_outputs(folder: Path, **env: str | None) -> Iterator[Path]:
    """:func:`set_outputs` with the offline environment until the block ends."""
    mp = pytest.MonkeyPatch()
    try:
        yield set_outputs(mp, folder, **{**OFFLINE, **env})
    finally:
        mp.undo()


def run_offline(*argv: str, run_id: str) -> RunFolder:
    """``locomo-kit run ARGV --run-id RUN_ID`` in the current outputs folder; it must exit 0."""
    assert main(["run", *argv, "--run-id", run_id]) == 0
    return RunFolder(run_id)


def interruptible() -> None:
    """A child process's SIGINT back to its default (a Popen ``preexec_fn``): a test run started in the background
    (``nohup ... &``) ignores SIGINT, and so would the command a Ctrl-C test interrupts."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
