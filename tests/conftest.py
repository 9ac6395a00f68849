from __future__ import annotations

from pathlib import Path

import pytest

from locomo_kit.data_fetch import fetch_dataset
from locomo_kit.dataset import Conversation, load_dataset
import local_llm
from report_runs import report_runs  # noqa: F401  (one session fixture: make run's run, shared by the report tests)

LOCAL_LLM_TESTS = "test_local_llm.py"


def pytest_collection_finish(session: pytest.Session) -> None:
    """A session that will run the local-LLM tests starts the server's build now, in the background."""
    if not session.config.option.collectonly and any(item.path.name == LOCAL_LLM_TESTS for item in session.items):
        local_llm.build_in_background()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    local_llm.stop_background_build()


@pytest.fixture(scope="session")
def dataset_path() -> Path:
    """The real LoCoMo file: fetched (or copied from LOCOMO_SOURCE) once per session."""
    return fetch_dataset()


@pytest.fixture(scope="session")
def dataset(dataset_path: Path) -> list[Conversation]:
    return load_dataset(dataset_path)
