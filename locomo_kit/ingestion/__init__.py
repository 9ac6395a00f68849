"""The ingestion stage: LoCoMo conversations into a memory system, resumable, one record per session."""

from locomo_kit.ingestion.summary import (
           MODES,
           IngestFailed,
           IngestSummary,
           NotIngested,
           SessionResult,
           ingest_outcome,
           print_summary,
)
from locomo_kit.ingestion.system import check_held, ingest_into_system
from locomo_kit.ingestion.verify import format_verification, verify_system, verify_worker_project
from locomo_kit.ingestion.worker import ingest_into_worker, ingest_worker_conversation

__all__ = ["MODES", "IngestFailed", "IngestSummary", "NotIngested", "SessionResult", "check_held",
           "format_verification", "ingest_into_system", "ingest_into_worker", "ingest_outcome",
           "ingest_worker_conversation", "print_summary", "verify_system", "verify_worker_project"]
