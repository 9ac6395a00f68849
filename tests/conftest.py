from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Callable, Iterator

import pytest

from locomo_kit.data_fetch import fetch_dataset
from locomo_kit.dataset import Conversation, load_dataset
from locomo_kit.runs import RunFolder

from support import local_llm
from support.chromium import browser  # noqa: F401  (one headless Chromium per session, shared by the browser tests)
from support.report_runs import report_runs  # noqa: F401  (one session fixture: make run's run, shared by the report tests)
from support.runs import OFFLINE, offline_outputs, run_offline, set_outputs

LOCAL_LLM_TESTS = "test_local_llm.py"


def pytest_collection_finish(session: pytest.Session) -> None:
    """A session that will run the local-LLM tests starts the server's install now, in the background."""
    if not session.config.option.collectonly and any(item.path.name == LOCAL_LLM_TESTS for item in session.items):
        local_llm.install_in_background()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    local_llm.stop_background_install()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The order for ``make test``'s parallel run (``-n N --dist loadfile --no-loadscope-reorder``): each
    module's tests stay together and in their order, the integration modules first and the local-LLM one
    before them all (minutes of one CPU-bound call after another), then the notebooks (one worker's, see
    :func:`pytest_xdist_make_scheduler`), so that the short modules fill the other workers and the run does
    not end waiting on one long module."""
    modules: dict[Path, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.path, []).append(item)

    def first(path: Path) -> tuple[bool, bool, bool]:
        integration = any(item.get_closest_marker("integration") for item in modules[path])
        return path.name != LOCAL_LLM_TESTS, not integration, path.suffix != ".ipynb"

    items[:] = [item for path in sorted(modules, key=first) for item in modules[path]]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """``--dist loadfile``, except that the notebooks are one unit, run in their order on one worker: each goes on
    from the runs the one before made in that worker's outputs folder (02 ingests, 03 answers, 04 scores, …), as
    in a serial run, instead of making them again on another worker."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class NotebooksTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            return "notebooks" if scope.endswith(".ipynb") else scope

    return NotebooksTogether(config, log)


@pytest.fixture(scope="session")
def dataset_path() -> Path:
    """The real LoCoMo file: fetched (or copied from LOCOMO_SOURCE) once per session."""
    return fetch_dataset()


@pytest.fixture(scope="session")
def dataset(dataset_path: Path) -> list[Conversation]:
    return load_dataset(dataset_path)


@pytest.fixture
def own_outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own outputs folder (LOCOMO_OUTPUTS_DIR), without progress bars."""
    return set_outputs(monkeypatch, tmp_path / "outputs")


@pytest.fixture
def offline_outputs_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dataset_path: Path) -> Path:
    """This test's own outputs folder, offline: the hashing embedder, no API key, no progress bars."""
    return set_outputs(monkeypatch, tmp_path / "outputs", **OFFLINE)


@pytest.fixture(scope="module")
def offline_run(tmp_path_factory: pytest.TempPathFactory, dataset_path: Path) -> Iterator[Callable[..., RunFolder]]:
    """A factory for this module: ``offline_run("--sample", "conv-30", run_id="exp")`` runs ``locomo-kit run``
    offline in an outputs folder of its own and returns the run; that folder stays LOCOMO_OUTPUTS_DIR
    until the module ends."""
    with ExitStack() as stack:
        def make(*argv: str, run_id: str, **env: str | None) -> RunFolder:
            stack.enter_context(offline_outputs(tmp_path_factory.mktemp("outputs"), **env))
            return run_offline(*argv, run_id=run_id)

        yield make
