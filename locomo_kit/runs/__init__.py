"""Run folders (``outputs/runs/<run_id>/``) and the records they hold: one configuration per folder."""

from locomo_kit.runs.folder import (
           RunConfig,
           RunFolder,
           RunStorageError,
           git_commit,
           ingestion_folder,
           known_runs,
           package_versions,
           runs_root,
           slug,
           utc_now,
           worker_slug,
)
from locomo_kit.runs.records import (
           ANSWERS_FILE,
           FLOOR_FILE,
           INGEST_FILE,
           JUDGEMENTS_FILE,
           SCORES_FILE,
           done_sessions,
           empty_sessions,
           generation,
           load_answers,
           load_floor,
           load_judgements,
           load_scores,
           run_problems,
           session_table,
)

__all__ = ["ANSWERS_FILE", "FLOOR_FILE", "INGEST_FILE", "JUDGEMENTS_FILE", "RunConfig", "RunFolder", "RunStorageError",
           "SCORES_FILE", "done_sessions", "empty_sessions", "generation", "git_commit",
           "ingestion_folder", "known_runs", "load_answers", "load_floor", "load_judgements", "load_scores",
           "package_versions", "run_problems", "runs_root", "session_table", "slug", "utc_now", "worker_slug"]
