"""The claude-mem Worker HTTP API, client side: the client, LoCoMo sessions as Worker calls, connecting (or
starting the embedded memworker), the Worker's identity, read-your-writes and the queue watch."""

from locomo_kit.worker.client import (
                                      Observation,
                                      ObservationSearch,
                                      WorkerAuthError,
                                      WorkerClient,
                                      WorkerError,
                                      WorkerTimeout,
                                      WorkerUnavailable,
)
from locomo_kit.worker.connect import EMBEDDED, connect
from locomo_kit.worker.embedded import EmbeddedWorker
from locomo_kit.worker.identity import WorkerMismatch, worker_identity
from locomo_kit.worker.transcript import content_session_id, project_name

__all__ = ["EMBEDDED", "EmbeddedWorker", "Observation", "ObservationSearch", "WorkerAuthError", "WorkerClient",
           "WorkerError", "WorkerMismatch", "WorkerTimeout", "WorkerUnavailable", "connect", "content_session_id",
           "project_name", "worker_identity"]
