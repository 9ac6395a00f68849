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

__version__ = "0.1.0"

# Submodules named like the API's functions are imported first: importing a submodule for the
# first time sets it as an attribute of this package, which would hide the function bound below.
import locomo_kit.compare  # noqa: E402,F401
import locomo_kit.export  # noqa: E402,F401
import locomo_kit.ingest  # noqa: E402,F401
import locomo_kit.report  # noqa: E402,F401
from locomo_kit.compare import compare  # noqa: E402
from locomo_kit.export import export_run as export  # noqa: E402
from locomo_kit.outcome import Outcome, StageFailed  # noqa: E402
from locomo_kit.pipeline import load, retrieval, run_all, run_config  # noqa: E402
from locomo_kit.pipeline import run_answer as answer  # noqa: E402
from locomo_kit.pipeline import run_ingest as ingest  # noqa: E402
from locomo_kit.pipeline import run_judge as judge  # noqa: E402
from locomo_kit.pipeline import run_report as report  # noqa: E402
from locomo_kit.pipeline import run_score as score  # noqa: E402
from locomo_kit.runs import RunConfig, RunFolder  # noqa: E402

__all__ = ["load", "retrieval", "ingest", "answer", "score", "judge", "report", "compare", "export", "run_all", "run_config",
           "RunConfig", "RunFolder", "Outcome", "StageFailed", "__version__"]
