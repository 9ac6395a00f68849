"""Runs the report tests look at: ``make run``'s run (conv-26, embedded memworker with MiniLM, extractive,
the default 1,000-token budget) and a second configuration of it (top-k 8) to compare against, made
once per session in their own outputs folder (registered in tests/conftest.py); under xdist the first
worker to need them makes them, under a file lock, and the others read them."""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from locomo_kit.cli import main
from locomo_kit.runs import RunFolder

from support.runs import offline_outputs


@dataclass
class ReportRuns:
    outputs: Path
    default: RunFolder  # what `make run` makes
    top_k: RunFolder  # the same ingestion answered with --top-k 8


@pytest.fixture(scope="session")
def report_runs(tmp_path_factory: pytest.TempPathFactory, dataset_path: Path) -> ReportRuns:
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the session's folder, above each worker's own
    outputs = root / "report-outputs"
    with open(root / "report-outputs.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (outputs / "made").exists():
            outputs.mkdir(exist_ok=True)
            with offline_outputs(outputs, LOCOMO_EMBEDDER=None):  # make run's own embedder
                assert main(["run"]) == 0  # exactly `make run`'s command
                assert main(["run", "--top-k", "8"]) == 0
            (outputs / "made").touch()
    runs = [p.name for p in (outputs / "runs").iterdir()]
    default = RunFolder(next(name for name in runs if "-extractive-b1000-" in name), root=outputs / "runs")
    top_k = RunFolder(next(name for name in runs if "-extractive-k8-" in name), root=outputs / "runs")
    return ReportRuns(outputs, default, top_k)
