"""The option groups commands share, each added by one function (``add_worker_options(parser)`` …)."""

from __future__ import annotations

import argparse
import os

from locomo_kit.cli.common import budget_list, int_in, positive_float
from locomo_kit.llm.execute import DEFAULT_CONCURRENCY
from locomo_kit.settings import BUDGET_LIMIT, DEFAULT_CONTEXT_BUDGET


def add_answer_options(p: argparse.ArgumentParser, default_model: str = "extractive", server: bool = True,
                       budgets: bool = False) -> None:
    p.add_argument("--answer-model", default=default_model,
                   help=f"extractive (offline, free), anthropic/<model> or openai/<model> (paid/served), or auto "
                   f"(Anthropic when ANTHROPIC_API_KEY is set) (default {default_model})")
    p.add_argument("--context-budget", type=budget_list if budgets else int_in(1, 1_000_000),
                   metavar="TOKENS[,TOKENS...]" if budgets else "TOKENS",
                   help=f"tokens of memories per question (default {DEFAULT_CONTEXT_BUDGET} unless --top-k is given); "
                   "memworker merges hits into spans of whole turns, other Workers' results are cut to fit"
                   + ("; a list (250,500,1000,2000) makes one run per budget, then the accuracy-against-context "
                      "curve (outputs/curves/)" if budgets else ""))
    p.add_argument("--top-k", type=int_in(1, BUDGET_LIMIT), help=f"memories retrieved per question instead of a "
                   f"budget, 1-{BUDGET_LIMIT} (with --context-budget: at most this many; default {BUDGET_LIMIT})")
    p.add_argument("--limit", type=int_in(1, 100_000), metavar="N", help="only the first N questions of each sample, "
                   "in the dataset's order: a smoke test of a configuration before a full or paid run (a run of its "
                   "own, named ...-qN)")
    if server:
        p.add_argument("--answer-base-url", "--llm-base-url", dest="answer_base_url",
                       help="the answerer's server: an OpenAI-compatible base URL for openai/<model> "
                       "(http://127.0.0.1:8000/v1), or an Anthropic API address (default $ANTHROPIC_BASE_URL)")
    add_query_strategy_option(p)


def add_query_strategy_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--query-strategy", choices=["question", "keywords"], default="question",
                   help="question: the question is the query, as an agent would send it (default); keywords: one "
                   "search per content word fused by the kit (for keyword-only Workers; labelled as the kit's "
                   "fusion, not the Worker's retrieval)")


def add_judge_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--judge-model", help="anthropic/<model> or openai/<model>; judging is skipped without one")
    p.add_argument("--judge-protocol", choices=["playbook", "mem0", "strict"],
                   help="playbook (0-100), mem0 (lenient CORRECT/WRONG, Mem0's), strict (CORRECT/WRONG) "
                   "(playbook; needs --judge-model)")
    p.add_argument("--calibration-size", type=int_in(0, 10_000), default=100,
                   help="questions of the judge calibration set graded in every judged run (100; 0 = none)")
    p.add_argument("--judge-runs", type=int_in(1, 50),
                   help="judge runs per question, 1-50 (10 for both protocols, as the Mem0 paper)")
    p.add_argument("--judge-base-url", help="the judge's own server (never the answerer's): an OpenAI-compatible "
                   "base URL for openai/<model>, or an Anthropic API address (default $ANTHROPIC_BASE_URL)")


def add_call_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("paid calls", "Every paid stage prints its plan (calls still needed, tokens, cost) "
                             "and asks on a terminal before spending.")
    g.add_argument("--concurrency", type=int_in(1, 256), default=DEFAULT_CONCURRENCY,
                   help=f"LLM calls in flight at most, across questions, 1-256 (default {DEFAULT_CONCURRENCY}; a local "
                   "server starts with one, or the slots it reports, and gets what it serves without queueing)")
    g.add_argument("--rpm", type=positive_float, help="cap on requests per minute (default: none; 429s slow the pool down)")
    g.add_argument("--tpm", type=positive_float, help="cap on input tokens per minute (default: none)")
    g.add_argument("--timeout", type=positive_float, help="seconds per LLM call (default 120 on a hosted API, 900 on "
                   "a local server: loopback, private or unknown)")
    g.add_argument("--retries", type=int_in(0, 20), default=6, help="retries per call on 429/5xx/timeouts, 0-20 (6), "
                   "with jittered back-off honouring retry-after; a call that still fails stays pending for the next run")
    g.add_argument("--batch", action="store_true", help="Anthropic Message Batches: one batch per stage, half price, "
                   "results within 24 h; a rerun resumes the recorded batch")
    g.add_argument("--batch-poll", type=positive_float, default=30.0, help="seconds between batch status polls (30)")
    g.add_argument("--yes", "-y", action="store_true", help="spend without asking (needed when not on a terminal)")
    g.add_argument("--max-cost", type=positive_float, metavar="USD",
                   help="refuse a stage whose plan may cost more than USD")


def add_worker_options(p: argparse.ArgumentParser, run_id: bool = True) -> None:
    p.add_argument("--sample", default="conv-26", help="a sample id, a comma-separated list, or 'all' (default conv-26)")
    add_sessions_option(p)
    p.add_argument("--worker-url", default=os.environ.get("LOCOMO_WORKER_URL", "embedded"),
                   help="Worker base URL, or 'embedded' to start memworker for the run "
                   "(default: $LOCOMO_WORKER_URL, else embedded); token from $LOCOMO_WORKER_TOKEN")
    p.add_argument("--system", help="the memory system: memworker (default: the embedded reference Worker), "
                   "claude-mem (with --worker-url), bm25, dense, mempalace, mem0 (docs/systems.md); default: "
                   "claude-mem when --worker-url names a Worker, else memworker")
    p.add_argument("--system-option", action="append", default=[], metavar="NAME=VALUE", dest="system_option",
                   help="a setting of the system, repeatable (e.g. --system-option k1=1.2 for bm25); each system's "
                   "options are listed by `locomo-kit systems`; they are part of the run's configuration and id")
    p.add_argument("--mode", choices=["transcript", "turns"], default="transcript",
                   help="transcript: one Read per session (default); turns: each turn saved via memory/save "
                   "(Worker systems; the others store what their adapter stores)")
    if not run_id:  # ingest and verify: the run folder that holds the ingestion
        p.add_argument("--ingest-id", "--run-id", dest="ingest_id", help="folder name under outputs/runs for the "
                       "ingestion (default: derived from sample, mode and worker, shared by the runs that use it)")
        return
    p.add_argument("--ingest-id", help="the ingestion's folder under outputs/runs (default: --run-id when given, "
                   "else derived from sample, mode and worker)")
    p.add_argument("--run-id", help="run folder name under outputs/runs (default: derived from every option "
                   "that changes results: sample, mode, worker, answer model, top-k, source, prompt version)")


def add_sessions_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sessions", type=int_in(1, 1_000), metavar="N",
                   help="only the first N sessions of each conversation, and the questions whose evidence lies in "
                   "them (the sample becomes e.g. conv-26@s2: its own ingestion and runs): a smoke test of a slow "
                   "ingestion, such as a compressor on a CPU")


def add_source_options(p: argparse.ArgumentParser) -> None:
    add_source_option(p)
    p.add_argument("--include-adversarial", action="store_true", help="also answer category 5")


def add_source_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--source", choices=["memory", "full-context", "oracle"], default="memory",
                   help="memory: answer from retrieved memories (default); full-context: from the whole conversation "
                   "(needs an LLM answerer); oracle: from each question's gold evidence turns only (no memory "
                   "system: isolates the answerer)")


def add_session_timeout_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--session-timeout", type=positive_float, default=180.0,
                   help="seconds to wait for the Worker's queue per session; a queue still stuck after that stops "
                   "the whole ingestion (180)")


def add_consistency_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--consistency-timeout", type=positive_float, default=1200.0,
                   help="after ingesting, wait at most this many seconds until the Worker finds sampled memories "
                   "by their own words (read-your-writes; asynchronous indexes such as Chroma's) (1200)")
