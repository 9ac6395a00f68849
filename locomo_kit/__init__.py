"""locomo-kit: evaluate long-term memory systems on the LoCoMo benchmark.

The public API, one call per stage (the CLI and the notebooks call the same functions)::

    import locomo_kit as lk
    conversations, sha = lk.load("conv-26")
    ingestion, summary = lk.ingest("conv-26")                   # embedded memworker, offline
    run, answers = lk.answer("conv-26", top_k=8)                 # extractive floor unless a model is named
    scores = lk.score(run, "conv-26")
    lk.judge(run, "mem0", judge_model="anthropic/claude-sonnet-4-6")   # costs money: only when named
    report, figures, summary = lk.report(run, "conv-26")
    lk.export(run, "csv")
    lk.compare([run.run_id, other_run.run_id])                   # paired, per category, with intervals

Nothing here spends money unless a paid model is named.
"""

from __future__ import annotations

__version__ = "0.1.0"  # the one place the version is written: pyproject.toml reads it from here

from locomo_kit.outcome import Outcome, StageFailed
from locomo_kit.pipeline.stages import load, retrieval, run_all, run_config
from locomo_kit.pipeline.stages import run_answer as answer
from locomo_kit.pipeline.stages import run_ingest as ingest
from locomo_kit.pipeline.stages import run_judge as judge
from locomo_kit.pipeline.stages import run_report as report
from locomo_kit.pipeline.stages import run_score as score
from locomo_kit.reports.comparison import compare
from locomo_kit.reports.export_rows import export_run as export
from locomo_kit.runs import RunConfig, RunFolder

__all__ = ["Outcome", "RunConfig", "RunFolder", "StageFailed", "__version__", "answer", "compare", "export", "ingest",
           "judge", "load", "report", "retrieval", "run_all", "run_config", "score"]
