"""``locomo-kit`` command line: thin wrappers over the library functions the notebooks call."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Callable, Sequence

from locomo_kit import __version__


class CliError(Exception):
    """An expected failure: printed as one line, exit code 1."""


def _cmd_data_fetch(args: argparse.Namespace) -> int:
    from locomo_kit.data_fetch import DataFetchError, fetch_dataset, sha256_file

    try:
        path = fetch_dataset(source=args.source, force=args.force)
    except DataFetchError as exc:
        raise CliError(str(exc)) from None
    print(f"{path} ok (sha256 {sha256_file(path)})")
    return 0


def _cmd_stats(args: argparse.Namespace) -> int:
    from locomo_kit.dataset import dataset_stats, load_dataset, select

    stats = dataset_stats(select(load_dataset(args.dataset), args.sample))
    print(json.dumps(stats, indent=2))
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    from locomo_kit.pipeline import run_all

    answer_model, judge_model = args.answer_model, args.judge_model
    if args.paid:
        answer_model = answer_model if answer_model != "extractive" else "anthropic/claude-opus-4-6"
        judge_model = judge_model or "anthropic/claude-sonnet-4-6"
    run, report, figures, summary = run_all(args.sample, args.worker_url, args.mode, args.run_id, answer_model,
                                            judge_model, args.judge_protocol, args.judge_runs, args.top_k,
                                            args.llm_base_url, query_strategy=args.query_strategy,
                                            consistency_timeout=args.consistency_timeout,
                                            session_timeout=args.session_timeout)
    f1 = next(r for r in summary["locomo_f1"] if r["category"] == "overall")
    print(f"official F1 {f1['mean']:.1f}% over {summary['questions']} questions ({summary['answerer_label']})")
    print(f"report:  {report}")
    print(f"figures: {report.parent / 'figures'} ({len(figures)} PNG)")
    return _ingest_outcome(run)


def _ingest_outcome(run) -> int:
    """1 (with the reason on stderr) when the run's ingestion or retrieval failed: the report says so too."""
    from locomo_kit.qa.answering import load_answers

    ingest = run.manifest().get("ingest", {})
    problems = []
    if ingest and not ingest.get("succeeded", True):
        problems.append(f"ingestion incomplete ({ingest.get('failed', 0)} session(s) failed, "
                        f"{ingest.get('not_attempted', 0)} not attempted)")
    memory = [a for a in load_answers(run) if a.get("source") == "memory"]
    if memory and not any(a.get("retrieved") for a in memory):
        problems.append(f"no memory was retrieved for any of {len(memory)} questions")
    for p in problems:
        print(f"locomo-kit: error: {p}; see the banner at the top of the report", file=sys.stderr)
    return 1 if problems else 0


def _cmd_answer(args: argparse.Namespace) -> int:
    from locomo_kit.pipeline import run_answer

    run, summary = run_answer(args.sample, args.worker_url, args.mode, args.run_id, args.answer_model, args.top_k,
                              args.source, args.include_adversarial, args.concurrency, args.llm_base_url,
                              query_strategy=args.query_strategy)
    print(summary.line())
    print(f"run folder: {run.path}")
    return 1 if summary.failed else 0


def _existing_run(args: argparse.Namespace):
    from locomo_kit.pipeline import resolve_run

    run = resolve_run(args.sample, args.mode, args.worker_url, args.run_id)
    if not run.exists():
        raise CliError(f"No run at {run.path}: run `locomo-kit run --sample {args.sample}` (or ingest and answer) first")
    return run


def _cmd_score(args: argparse.Namespace) -> int:
    from locomo_kit.pipeline import run_judge, run_score
    from locomo_kit.scoring import by_category

    run = _existing_run(args)
    scores = run_score(run, args.sample)
    for row in by_category([(s.category, s.locomo_f1) for s in scores]):
        print(f"{str(row.category):>8} {row.name:<12} n={row.count:<5} official F1 {100 * row.mean:5.1f}% "
              f"[{100 * row.ci_low:.1f}, {100 * row.ci_high:.1f}]")
    if args.judge_model:
        made = run_judge(run, args.judge_protocol, args.judge_model, args.judge_runs, args.llm_base_url)
        print(f"judged {len(made or [])} answers ({args.judge_protocol})")
    print(f"run folder: {run.path}")
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from locomo_kit.pipeline import run_report

    report, figures, _ = run_report(_existing_run(args), args.sample)
    print(f"report:  {report}")
    print(f"figures: {report.parent / 'figures'} ({len(figures)} PNG)")
    return 0


def _answer_options(p: argparse.ArgumentParser, default_model: str) -> None:
    p.add_argument("--answer-model", default=default_model,
                   help=f"extractive, auto, anthropic/<model> or openai/<model> (default {default_model})")
    p.add_argument("--top-k", type=int, default=8, help="memories retrieved per question (8)")
    p.add_argument("--llm-base-url", help="base URL of an OpenAI-compatible server for openai/<model>")
    _query_strategy_option(p)


def _query_strategy_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--query-strategy", choices=["question", "keywords"], default="question",
                   help="question: the question is the query, as an agent would send it (default); keywords: one "
                   "search per content word fused by the kit (for keyword-only Workers; labelled as the kit's "
                   "fusion, not the Worker's retrieval)")


def _judge_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--judge-model", help="anthropic/<model> or openai/<model>; judging is skipped without one")
    p.add_argument("--judge-protocol", choices=["playbook", "mem0"], default="playbook", help="(playbook)")
    p.add_argument("--judge-runs", type=int, help="judge runs per question (playbook 10, mem0 3)")


def _worker_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sample", default="conv-26", help="a sample id, a comma-separated list, or 'all' (default conv-26)")
    p.add_argument("--worker-url", default=os.environ.get("LOCOMO_WORKER_URL", "embedded"),
                   help="Worker base URL, or 'embedded' to start memworker for the run "
                   "(default: $LOCOMO_WORKER_URL, else embedded); token from $LOCOMO_WORKER_TOKEN")
    p.add_argument("--mode", choices=["transcript", "turns"], default="transcript",
                   help="transcript: one Read per session (default); turns: each turn saved via memory/save")
    p.add_argument("--run-id", help="run folder name under outputs/runs (default: derived from sample, mode, worker)")


def _session_timeout_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--session-timeout", type=float, default=180.0,
                   help="seconds to wait for the Worker's queue per session; a queue still stuck after that stops "
                   "the whole ingestion (180)")


def _consistency_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--consistency-timeout", type=float, default=1200.0,
                   help="after ingesting, wait at most this many seconds until the Worker finds sampled memories "
                   "by their own words (read-your-writes; asynchronous indexes such as Chroma's) (1200)")


def _cmd_ingest(args: argparse.Namespace) -> int:
    from locomo_kit.ingest import print_summary
    from locomo_kit.pipeline import run_ingest

    run, summary = run_ingest(args.sample, args.worker_url, args.mode, args.run_id, force=args.force,
                              session_timeout=args.session_timeout, poll_interval=args.poll_interval,
                              consistency_timeout=args.consistency_timeout)
    print_summary(summary)
    print(f"run folder: {run.path}")
    return 0 if summary.succeeded else 1


def _cmd_verify(args: argparse.Namespace) -> int:
    from locomo_kit.ingest import format_verification, verify
    from locomo_kit.pipeline import connect, load, resolve_run

    conversations, _ = load(args.sample)
    run = resolve_run(args.sample, args.mode, args.worker_url, args.run_id)
    if args.worker_url == "embedded" and not run.exists():
        raise CliError(f"No run at {run.path}: ingest first (locomo-kit ingest --sample {args.sample})")
    with connect(args.worker_url, run) as client:
        ok = True
        for conv in conversations:
            report = verify(client, conv, query_strategy=args.query_strategy)
            print(format_verification(report))
            empty = [p for p in report["probes"] if not p["results"]]
            if not report["observations"] or empty:
                ok = False
                print(f"locomo-kit: error: {report['project']}: {report['observations']} observations; "
                      f"{len(empty)} of {len(report['probes'])} probes found nothing"
                      + (" (a keyword-only Worker? try --query-strategy keywords)"
                         if empty and args.query_strategy == "question" and report["observations"] else ""),
                      file=sys.stderr)
    return 0 if ok else 1


def _add_data(sub: argparse._SubParsersAction) -> None:
    data = sub.add_parser("data", help="get the LoCoMo dataset", description="Get the LoCoMo dataset.")
    data_sub = data.add_subparsers(dest="data_command", required=True)
    fetch = data_sub.add_parser(
        "fetch",
        help="download or copy locomo10.json into data/ and verify its sha256",
        description="Download the pinned locomo10.json into data/, or copy it from LOCOMO_SOURCE "
        "(a path or URL); the sha256 is verified either way.",
    )
    fetch.add_argument("--source", help="path or URL (default: $LOCOMO_SOURCE, else the upstream URL)")
    fetch.add_argument("--force", action="store_true", help="replace an existing file")
    fetch.set_defaults(func=_cmd_data_fetch)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="locomo-kit", description="Evaluate memory systems on LoCoMo.")
    parser.add_argument("--version", action="version", version=f"locomo-kit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_data(sub)
    stats = sub.add_parser("stats", help="validate the dataset and print its statistics",
                           description="Validate the dataset and print its statistics as JSON.")
    stats.add_argument("--dataset", help="path to locomo10.json (default data/locomo10.json)")
    stats.add_argument("--sample", default="all", help="'all', a sample id, or a comma-separated list")
    stats.set_defaults(func=_cmd_stats)
    ing = sub.add_parser("ingest", help="ingest conversations into a Worker (resumable)",
                         description="Ingest LoCoMo conversations into a Worker over the claude-mem API. "
                         "Resumable: a rerun skips sessions already ingested.")
    _worker_options(ing)
    ing.add_argument("--force", action="store_true", help="forget the project in the Worker and ingest again")
    _session_timeout_option(ing)
    ing.add_argument("--poll-interval", type=float, default=3.0, help="longest pause between queue polls (3 s)")
    _consistency_option(ing)
    ing.set_defaults(func=_cmd_ingest)
    ver = sub.add_parser("verify", help="count a project's observations and probe search",
                         description="Count the observations of each sample's project and show the top 3 "
                         "results for one single-hop, one multi-hop and one temporal question.")
    _worker_options(ver)
    _query_strategy_option(ver)
    ver.set_defaults(func=_cmd_verify)
    ans = sub.add_parser("answer", help="answer every question from the Worker's memories (resumable)",
                         description="Answer each question from the memories the Worker retrieves (or the full "
                         "conversation), appending to answers.jsonl; a rerun skips answered questions.")
    _worker_options(ans)
    _answer_options(ans, "auto")
    ans.add_argument("--source", choices=["memory", "full-context"], default="memory", help="(memory)")
    ans.add_argument("--include-adversarial", action="store_true", help="also answer category 5")
    ans.add_argument("--concurrency", type=int, default=4, help="parallel LLM calls (4)")
    ans.set_defaults(func=_cmd_answer)
    sc = sub.add_parser("score", help="score saved answers (F1s, diagnostics) and optionally judge them",
                        description="Score a run's saved answers: official LoCoMo F1, Mem0 F1 and BLEU-1, retrieval "
                        "diagnostics; with --judge-model also LLM-as-a-Judge. Never queries the Worker.")
    _worker_options(sc)
    _judge_options(sc)
    sc.add_argument("--llm-base-url", help="base URL of an OpenAI-compatible judge server")
    sc.set_defaults(func=_cmd_score)
    rep = sub.add_parser("report", help="write report.md and figures for a run",
                         description="Write report.md and figures/*.png into the run folder from its records.")
    _worker_options(rep)
    rep.set_defaults(func=_cmd_report)
    run = sub.add_parser("run", help="the whole pipeline: ingest, answer, score, (judge), report",
                         description="Run the whole pipeline on the embedded Worker offline by default; --paid runs "
                         "the paid protocol (answerer claude-opus-4-6, judge claude-sonnet-4-6) with ANTHROPIC_API_KEY.")
    _worker_options(run)
    _answer_options(run, "extractive")
    _judge_options(run)
    _consistency_option(run)
    _session_timeout_option(run)
    run.add_argument("--paid", action="store_true", help="use the Anthropic answerer and judge (needs ANTHROPIC_API_KEY)")
    run.set_defaults(func=_cmd_run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from locomo_kit.dataset import DatasetError
    from locomo_kit.worker_client import WorkerError

    args = build_parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except (CliError, DatasetError, KeyError, WorkerError, RuntimeError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        print(f"locomo-kit: error: {message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("locomo-kit: interrupted; rerun the same command to resume.", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
