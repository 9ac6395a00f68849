"""locomo-kit: evaluate long-term memory systems on the LoCoMo benchmark.

The public API, one call per stage (the CLI and the notebooks call the same functions, and build their
configuration through the same settings objects, so the same options name the same run)::

    import locomo_kit as lk
    conversations, sha = lk.load("conv-26")
    ingestion, summary = lk.ingest("conv-26")                    # embedded memworker, offline
    run, answers = lk.answer("conv-26")                          # a 1,000-token budget, the extractive floor
    run, answers = lk.answer("conv-26", system=lk.SystemSpec("bm25"), retrieval=lk.Retrieval(top_k=8),
                             answerer=lk.Answerer("openai/qwen", base_url="http://127.0.0.1:8000/v1"))
    scores = lk.score(run)
    lk.judge(run, judge=lk.Judge("anthropic/claude-sonnet-4-6", protocol="mem0"))   # costs money: only when named
    report, figures, summary = lk.report(run)
    lk.export(run, "csv")
    lk.compare([run.run_id, other_run.run_id])                   # paired, per category, with intervals

Each stage takes its subject (a sample, or a run) by position and the rest by keyword: the settings objects
``SystemSpec``, ``Retrieval``, ``Answerer``, ``Judge`` (:mod:`locomo_kit.settings`) and ``CallSettings``
(concurrency, rate limits, spending, progress bars, where console lines go). Nothing here spends money unless
a paid model is named.
"""

from __future__ import annotations

__version__ = "0.1.0"  # the one place the version is written: pyproject.toml reads it from here

from locomo_kit.llm.execute import CallSettings
from locomo_kit.outcome import Outcome, StageFailed
from locomo_kit.pipeline.stages import load, run_all, run_config
from locomo_kit.pipeline.stages import run_answer as answer
from locomo_kit.pipeline.stages import run_ingest as ingest
from locomo_kit.pipeline.stages import run_judge as judge
from locomo_kit.pipeline.stages import run_report as report
from locomo_kit.pipeline.stages import run_score as score
from locomo_kit.reports.comparison import compare
from locomo_kit.reports.export_rows import export_run as export
from locomo_kit.runs import RunConfig, RunFolder
from locomo_kit.settings import Answerer, Judge, Retrieval, SystemSpec

__all__ = ["Answerer", "CallSettings", "Judge", "Outcome", "Retrieval", "RunConfig", "RunFolder", "StageFailed", "SystemSpec",
           "__version__", "answer", "compare", "export", "ingest", "judge", "load", "report", "run_all", "run_config",
           "score"]
