"""The stages as one call each, shared by the CLI and the notebooks: worker → ingest → answer → score."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from locomo_kit.data_fetch import sha256_file
from locomo_kit.dataset import Conversation, load_dataset, select
from locomo_kit.embedded import EmbeddedWorker
from locomo_kit.ingest import IngestSummary, ingest
from locomo_kit.paths import default_dataset_path
from locomo_kit.runs import RunFolder, default_run_id, utc_now
from locomo_kit.worker_client import WorkerClient

EMBEDDED = "embedded"


def load(sample: str, dataset_path: str | None = None) -> tuple[list[Conversation], str]:
    """The selected conversations and the dataset's sha256."""
    path = dataset_path or default_dataset_path()
    return select(load_dataset(path), sample), sha256_file(path)


@contextmanager
def connect(worker_url: str, run: RunFolder, ready_timeout: float = 120.0) -> Iterator[WorkerClient]:
    """A ready client for ``worker_url`` (``"embedded"`` starts memworker on the run's database).

    For an external Worker, nothing is written to the run folder until it has answered.
    """
    if worker_url == EMBEDDED:
        with EmbeddedWorker(run.create().path / "memworker.db") as url, WorkerClient(url, token="") as client:
            health = client.wait_until_ready(timeout=ready_timeout)
            run.update_manifest(worker={"url": EMBEDDED, "name": health.get("name", "memworker"),
                                        "version": health.get("version"), "settings": health.get("settings")})
            yield client
        return
    with WorkerClient(worker_url) as client:
        client.health()  # raises WorkerUnavailable / WorkerAuthError with a clear message
        health = client.wait_until_ready(timeout=ready_timeout)
        run.update_manifest(worker={"url": client.base_url, "name": health.get("name", "claude-mem"),
                                    "version": health.get("version"), "settings": health.get("settings")})
        yield client


def resolve_run(sample: str, mode: str, worker_url: str, run_id: str | None) -> RunFolder:
    return RunFolder(run_id or default_run_id(sample, mode, worker_url))


def run_ingest(sample: str = "conv-26", worker_url: str = EMBEDDED, mode: str = "transcript",
               run_id: str | None = None, force: bool = False, session_timeout: float = 180.0,
               poll_interval: float = 3.0, dataset_path: str | None = None,
               progress: bool | None = None) -> tuple[RunFolder, IngestSummary]:
    conversations, sha = load(sample, dataset_path)
    run = resolve_run(sample, mode, worker_url, run_id)
    with connect(worker_url, run) as client:
        run.update_manifest(parameters={"sample": sample, "mode": mode, "worker_url": worker_url},
                            dataset={"path": str(dataset_path or default_dataset_path()), "sha256": sha},
                            ingest={"started_at": utc_now()})
        summary = ingest(client, conversations, run, mode=mode, session_timeout=session_timeout,
                         poll_interval=poll_interval, force=force, progress=progress)
        run.update_manifest(ingest={"finished_at": utc_now(), "ingested": len(summary.ingested),
                                    "failed": len(summary.failed), "skipped": summary.skipped})
    return run, summary
