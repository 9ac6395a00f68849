"""Shared test helpers: a memworker in-process or as a real process, and polling."""

from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from fastapi.testclient import TestClient

from memworker.app import create_app
from memworker.config import Settings

TRANSCRIPT = (
    "[Session 1 — 1:56 pm on 8 May, 2023]\n"
    "[Conversation between Caroline and Melanie]\n"
    "[D1:1] Caroline: Hey Mel! Good to see you!\n"
    "[D1:2] Caroline: I went to a LGBTQ support group yesterday and it was so powerful.\n"
    "[D1:3] Melanie: I love painting sunsets with my kids. [shares an image: a painting of a sunset]\n"
    "[D1:4] Caroline: I'm researching adoption agencies because I want to give kids a loving home.\n"
)


def wait_until(predicate: Callable[[], bool], timeout: float = 30.0, interval: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(interval)


@contextmanager
def memworker_app(tmp_path: Path, **settings) -> Iterator[TestClient]:
    """memworker in-process (ASGI) with the hashing embedder, ready to use."""
    settings.setdefault("allowed_hosts", "testserver")  # the TestClient's Host header
    s = Settings(db_path=str(tmp_path / "mw.db"), embedder=settings.pop("embedder", "hashing"), **settings)
    with TestClient(create_app(s)) as client:
        wait_until(lambda: client.get("/api/readiness").status_code == 200)
        yield client


def drain(client: TestClient) -> dict:
    """Wait for memworker's queue to empty; return the final processing status."""
    status: dict = {}

    def empty() -> bool:
        nonlocal status
        status = client.get("/api/processing-status").json()
        return status["queueDepth"] == 0 and not status["isProcessing"]

    wait_until(empty)
    return status
