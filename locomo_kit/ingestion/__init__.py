"""The ingestion stage: LoCoMo conversations into a memory system, resumable, one record per session."""

from locomo_kit.ingestion.conversations import ingest_conversation, ingest_conversations
from locomo_kit.ingestion.held import check_answerable, check_held
from locomo_kit.ingestion.summary import (
           MODES,
           IngestFailed,
           IngestSummary,
           NotIngested,
           SessionResult,
           ingest_outcome,
           print_summary,
)
from locomo_kit.ingestion.verify import format_verification, verify_conversation, verify_system

__all__ = ["MODES", "IngestFailed", "IngestSummary", "NotIngested", "SessionResult", "check_answerable", "check_held",
           "format_verification", "ingest_conversation", "ingest_conversations", "ingest_outcome", "print_summary",
           "verify_conversation", "verify_system"]
