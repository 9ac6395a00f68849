"""``locomo-kit answer``: every question answered from the memory system's retrievals, resumable."""

from __future__ import annotations

import argparse

from locomo_kit.cli.common import answerer_options, call_settings, finish, retrieval_options, say_auto, system_spec
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
    retrieval = retrieval_options(args)
    say_auto("answer", args.answer_model)
    run, summary = run_answer(args.sample, system=system_spec(args), retrieval=retrieval,
                              answerer=answerer_options(args), run_id=args.run_id, calls=call_settings(args))
    for note in summary.outcome.notes:
        print(f"WARNING: {note}")
    print(summary.line())
    print(summary.outcome.line(reason=False) if summary.outcome.ok else summary.outcome.line())
    print(f"run folder: {run.path}")
    return finish([summary.outcome])
