from __future__ import annotations

from pathlib import Path

import pytest

from locomo_kit.data_fetch import fetch_dataset
from locomo_kit.dataset import Conversation, load_dataset
from chromium import browser  # noqa: F401  (one headless Chromium per session, shared by the browser tests)
from report_runs import report_runs  # noqa: F401  (one session fixture: make run's run, shared by the report tests)


@pytest.fixture(scope="session")
def dataset_path() -> Path:
    """The real LoCoMo file: fetched (or copied from LOCOMO_SOURCE) once per session."""
    return fetch_dataset()


@pytest.fixture(scope="session")
def dataset(dataset_path: Path) -> list[Conversation]:
    return load_dataset(dataset_path)
