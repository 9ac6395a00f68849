"""One call per stage (``run_ingest``, ``run_answer``, ``run_score``, ``run_judge``, ``run_report``), the whole
pipeline (``run_all``), runs over several context budgets and the leaderboard over several systems."""

from locomo_kit.pipeline.budgets import curve_points, parse_budgets, run_budgets, write_curve
from locomo_kit.pipeline.leaderboard import (
                                             DEFAULT_SYSTEMS,
                                             LeaderboardError,
                                             LeaderboardResult,
                                             leaderboard_lines,
                                             paired_lines,
                                             paired_rows,
                                             questions_across,
                                             quoted_lines,
                                             quoted_rows,
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

__all__ = ["BUDGET_LIMIT", "DEFAULT_CONTEXT_BUDGET", "DEFAULT_SYSTEMS", "LeaderboardError", "LeaderboardResult",
           "PipelineResult", "curve_points", "leaderboard_lines", "llm_cache_path", "load", "paired_lines",
           "paired_rows", "parse_budgets", "questions_across", "quoted_lines", "quoted_rows", "resolve_ingestion",
           "resolve_run", "run_all", "run_answer", "run_budgets", "run_config", "run_ingest",
           "run_judge", "run_leaderboard", "run_report", "run_score", "strategy_key", "write_curve"]
