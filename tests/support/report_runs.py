"""Runs the report tests look at: ``make run``'s run (conv-26, embedded memworker with MiniLM, extractive,
the default 1,000-token budget) and a second configuration of it (top-k 8) to compare against, made
once per session in their own outputs folder (registered in tests/conftest.py)."""

from __future__ import annotations

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
    outputs = tmp_path_factory.mktemp("report-outputs")
    with offline_outputs(outputs, LOCOMO_EMBEDDER=None):  # make run's own embedder
        assert main(["run"]) == 0  # exactly `make run`'s command
        default = next(RunFolder(p.name) for p in (outputs / "runs").iterdir() if "-extractive-b1000-" in p.name)
        assert main(["run", "--top-k", "8"]) == 0
        top_k = next(RunFolder(p.name) for p in (outputs / "runs").iterdir() if "-extractive-k8-" in p.name)
    return ReportRuns(outputs, default, top_k)
