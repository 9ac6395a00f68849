"""A ready client for a Worker: ``connect("embedded", folder)`` starts memworker on the folder's database;
``connect(url, folder)`` talks to the Worker at ``url``. Either way ``client.identity`` says which Worker
answered (:func:`~locomo_kit.worker.identity.worker_identity`)."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Iterator

import httpx

from locomo_kit.runs.folder import RunFolder
from locomo_kit.worker.client import WorkerClient, WorkerUnavailable
from locomo_kit.worker.embedded import EmbeddedWorker
from locomo_kit.worker.identity import worker_identity
from locomo_kit.worker.sessions import worker_capabilities

EMBEDDED = "embedded"


@contextmanager
def connect(worker_url: str, folder: RunFolder, ready_timeout: float = 120.0) -> Iterator[WorkerClient]:
    """A ready client for ``worker_url`` (``"embedded"`` starts memworker on ``folder``'s database).

    ``client.identity`` is the Worker's identity (:func:`worker_identity`). Nothing is written to
    ``folder`` (but the embedded Worker's database) until the Worker has answered.
    """
    if worker_url == EMBEDDED:
        with EmbeddedWorker(folder.create().path / "memworker.db") as url, WorkerClient(url, token="") as client:
            health = client.wait_until_ready(timeout=ready_timeout)
            client.identity = worker_identity(worker_url, client.base_url, health)
            yield client
        return
    with WorkerClient(worker_url) as client:
        say_if_waiting(client)
        client.health()  # raises WorkerUnavailable / WorkerAuthError with a clear message
        health = client.wait_until_ready(timeout=ready_timeout)
        client.identity = {**worker_identity(worker_url, client.base_url, health),
                           **worker_capabilities(health)}
        yield client


def say_if_waiting(client: WorkerClient) -> None:
    """One quick try first: when nothing answers, say so (and where the URL came from) before the
    client's retries wait for a Worker that may be restarting."""
    if client.restart_window < 1:
        return  # the retries take no noticeable time
    probe = WorkerClient(client.base_url, retries=0, restart_window=0)
    try:
        probe.health()
    except WorkerUnavailable as exc:
        if not isinstance(exc.__cause__, httpx.ConnectError):
            return  # not a Worker still starting (a bad URL, a reset): the real call says what
        source = " (from LOCOMO_WORKER_URL)" if os.environ.get("LOCOMO_WORKER_URL", "").rstrip("/") == client.base_url \
            else ""
        print(f"no Worker answers at {client.base_url}{source}; retrying for up to {client.restart_window:.0f} s",
              file=sys.stderr, flush=True)
    except Exception:
        pass
    finally:
        probe.close()
