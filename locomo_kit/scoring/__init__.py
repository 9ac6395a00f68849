"""Scorers named for the published numbers they reproduce."""

from locomo_kit.scoring.aggregate import Summary, bootstrap_ci, by_category, summarize, wilson_ci
from locomo_kit.scoring.agreement import cohen_kappa
from locomo_kit.scoring.diagnostics import answer_in_context, evidence_coverage
from locomo_kit.scoring.judge import Judge, aggregate_runs, judge_answers, mem0_j_by_run, parse_mem0, parse_playbook
from locomo_kit.scoring.locomo_f1 import locomo_f1, normalize_answer, token_f1
from locomo_kit.scoring.mem0_f1 import bleu1, mem0_f1
from locomo_kit.scoring.verdict_sets import run_verdict_sets

__all__ = [
    "Judge",
    "Summary",
    "aggregate_runs",
    "answer_in_context",
    "evidence_coverage",
    "judge_answers",
    "mem0_j_by_run",
    "parse_mem0",
    "parse_playbook",
    "bleu1",
    "bootstrap_ci",
    "by_category",
    "cohen_kappa",
    "locomo_f1",
    "mem0_f1",
    "normalize_answer",
    "run_verdict_sets",
    "summarize",
    "token_f1",
    "wilson_ci",
]
