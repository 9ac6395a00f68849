"""One call per stage (``run_ingest``, ``run_answer``, ``run_score``, ``run_judge``, ``run_report``), the whole
pipeline (``run_all``), runs over several context budgets and the leaderboard over several systems (their tables, figures and
pages are :mod:`locomo_kit.reports`')."""

from locomo_kit.pipeline.budgets import parse_budgets, run_budgets
from locomo_kit.pipeline.leaderboard import (
                                             DEFAULT_SYSTEMS,
                                             ImportedRuns,
                                             LeaderboardError,
                                             LeaderboardResult,
                                             run_leaderboard,
)
from locomo_kit.pipeline.stages import (
                                             PipelineResult,
                                             llm_cache_path,
                                             load,
                                             resolve_ingestion,
                                             resolve_run,
                                             run_all,
                                             run_answer,
                                             run_config,
                                             run_ingest,
                                             run_judge,
                                             run_report,
                                             run_score,
                                             strategy_key,
)
from locomo_kit.settings import BUDGET_LIMIT, DEFAULT_CONTEXT_BUDGET

__all__ = ["BUDGET_LIMIT", "DEFAULT_CONTEXT_BUDGET", "DEFAULT_SYSTEMS", "ImportedRuns", "LeaderboardError", "LeaderboardResult",
           "PipelineResult", "llm_cache_path", "load", "parse_budgets", "resolve_ingestion", "resolve_run",
           "run_all", "run_answer", "run_budgets", "run_config", "run_ingest", "run_judge", "run_leaderboard",
           "run_report", "run_score", "strategy_key"]
