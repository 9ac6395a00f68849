"""``locomo-kit answer``: every question answered from the memory system's retrievals, resumable."""

from __future__ import annotations

import argparse

from locomo_kit.cli.common import call_settings, finish, retrieval_options, say_auto, system_options
from locomo_kit.cli.options import add_answer_options, add_call_options, add_source_options, add_worker_options
from locomo_kit.pipeline.stages import run_answer


def add_parser(sub: argparse._SubParsersAction) -> None:
    ans = sub.add_parser("answer", help="answer every question from the memory system's memories (resumable)",
                         description="Answer each question from the memories the memory system retrieves (or the full "
                         "conversation), appending to answers.jsonl; a rerun skips answered questions.")
    add_worker_options(ans)
    add_answer_options(ans)
    add_source_options(ans)
    add_call_options(ans)
    ans.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    top_k, budget = retrieval_options(args)
    say_auto("answer", args.answer_model)
    run, summary = run_answer(sample=args.sample, worker_url=args.worker_url, mode=args.mode, run_id=args.run_id,
                              answer_model=args.answer_model, top_k=top_k, source=args.source,
                              include_adversarial=args.include_adversarial, concurrency=args.concurrency,
                              llm_base_url=args.answer_base_url, calls=call_settings(args), timeout=args.timeout,
                              context_budget=budget, query_strategy=args.query_strategy, ingest_id=args.ingest_id,
                              system=args.system, system_options=system_options(args), limit=args.limit)
    for note in summary.outcome.notes:
        print(f"WARNING: {note}")
    print(summary.line())
    print(summary.outcome.line(reason=False) if summary.outcome.ok else summary.outcome.line())
    print(f"run folder: {run.path}")
    return finish([summary.outcome])
