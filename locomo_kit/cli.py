"""``locomo-kit`` command line: thin wrappers over the library functions the notebooks call."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Callable, Sequence

from locomo_kit import __version__
from locomo_kit.pipeline import BUDGET_LIMIT, DEFAULT_CONTEXT_BUDGET, retrieval


class CliError(Exception):
    """An expected failure: printed as one line, exit code 1."""


def int_in(lo: int, hi: int) -> Callable[[str], int]:
    """An argparse type: an integer from ``lo`` to ``hi`` (a clear error otherwise)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"must be from {lo} to {hi}, got {value}")
        return value
    parse.__name__ = "integer"
    return parse


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, got {text}")
    return value


def _finish(outcomes, run=None, ok_code: int = 0) -> int:
    """Exit status for a command whose stages ended with ``outcomes``: non-zero, with the first
    failure's reason and a count of the rest, when any is not ok, or while ``run`` has answer or
    judge calls pending."""
    from locomo_kit.outcome import first_error

    message = first_error(outcomes)
    if message:
        print(f"locomo-kit: error: {message}", file=sys.stderr)
    pending = []
    if run is not None:
        from locomo_kit.llm.pending import pending_calls

        pending = pending_calls(run)
        for line in pending:
            print(f"locomo-kit: {line}", file=sys.stderr)
    return 1 if message or pending else ok_code


def _cmd_data_fetch(args: argparse.Namespace) -> int:
    from locomo_kit.data_fetch import (DataFetchError, default_audit_path, fetch_audit, fetch_dataset,
                                       sha256_file)
    from locomo_kit.paths import default_dataset_path

    kept = {option: path for option, given, path in (("--source", args.source, default_dataset_path()),
                                                     ("--audit-source", args.audit_source, default_audit_path()))
            if given and path.exists() and not args.force}  # a verified copy is kept: the source goes unread
    try:
        path = fetch_dataset(source=args.source, force=args.force)
        print(f"{path} ok (sha256 {sha256_file(path)})")
        audit = fetch_audit(source=args.audit_source, force=args.force)
        print(f"{audit} ok (sha256 {sha256_file(audit)})")
        for option, kept_path in kept.items():
            print(f"note: {kept_path} was already there and verified, so {option} was not read "
                  "(add --force to copy it again)")
    except DataFetchError as exc:
        raise CliError(str(exc)) from None
    return 0


def _cmd_stats(args: argparse.Namespace) -> int:
    from locomo_kit.dataset import dataset_stats, load_dataset, select

    stats = dataset_stats(select(load_dataset(args.dataset), args.sample))
    print(json.dumps(stats, indent=2))
    return 0


def _say_auto(role: str, spec: str | None) -> None:
    """Say what ``auto`` chose, and why: it falls back to the free extractive answerer without a key."""
    if spec != "auto":
        return
    from locomo_kit.llm import DEFAULT_ANSWER_MODEL, DEFAULT_JUDGE_MODEL, resolve_auto

    chosen = resolve_auto(spec, DEFAULT_ANSWER_MODEL if role == "answer" else DEFAULT_JUDGE_MODEL)
    why = "ANTHROPIC_API_KEY is set" if os.environ.get("ANTHROPIC_API_KEY") else "ANTHROPIC_API_KEY is not set"
    if chosen == "extractive" and role == "judge":
        chosen = "no judge (F1 only)"  # there is no extractive judge
    print(f"{role} model: auto → {chosen} ({why})")


def _paid_models(args: argparse.Namespace) -> tuple[str, str | None]:
    answer_model, judge_model = args.answer_model, args.judge_model
    if args.paid:
        answer_model = answer_model if answer_model != "extractive" else "anthropic/claude-opus-4-6"
        judge_model = judge_model or "anthropic/claude-sonnet-4-6"
    return answer_model, judge_model


def _run_one(args: argparse.Namespace, budget: int | None, answer_model: str, judge_model: str | None):
    """One configuration through the whole pipeline (``budget``: this run's context budget, or None)."""
    from locomo_kit.pipeline import run_all

    top_k, budget = _retrieval(argparse.Namespace(top_k=args.top_k, context_budget=budget))
    return run_all(args.sample, args.worker_url, args.mode, args.run_id, answer_model, judge_model,
                   args.judge_protocol or "playbook", args.judge_runs, top_k, args.answer_base_url,
                   calibration_size=args.calibration_size, judge_base_url=args.judge_base_url,
                   calls=_call_settings(args), timeout=args.timeout, context_budget=budget,
                   query_strategy=args.query_strategy, consistency_timeout=args.consistency_timeout,
                   session_timeout=args.session_timeout, ingest_id=args.ingest_id, system=args.system,
                   source=args.source, limit=args.limit)


def _cmd_run(args: argparse.Namespace) -> int:
    answer_model, judge_model = _paid_models(args)
    _say_auto("answer", answer_model)
    _say_auto("judge", judge_model)
    budgets = args.context_budget or [None]
    if len(budgets) > 1:
        from locomo_kit.budget_cli import run_budget_list

        return run_budget_list(args, budgets, answer_model, judge_model)
    return _print_run(_run_one(args, budgets[0], answer_model, judge_model))


def _print_run(result) -> int:
    """The run's one-line result, its report's path, and the exit status of its outcomes."""
    summary, report = result.summary, result.report
    f1 = next(r for r in summary["locomo_f1"] if r["category"] == "overall")
    done = "" if result.ok else "PARTIAL: "
    print(f"{done}official F1 {f1['mean']:.1f}% over {summary['questions']} questions "
          f"({result.run.manifest().get('config_label', summary['answerer_label'])})")
    print(f"report:  {report}")
    print(f"html:    {report.with_suffix('.html')} (with the question explorer)")
    print(f"figures: {report.parent / 'figures'} ({len(result.figures)} PNG)")
    return max(_finish(result.outcomes, result.run), _ingest_outcome(result.run))


def _ingest_outcome(run) -> int:
    """1 (with the reason on stderr) when the run's ingestion or retrieval failed: the report says so too."""
    from locomo_kit.qa.answering import load_answers
    from locomo_kit.runs import ingestion_folder

    ingestion_id = run.manifest().get("ingestion", {}).get("id")
    ingest = (ingestion_folder(ingestion_id) if ingestion_id else run).manifest().get("ingest", {})
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

    top_k, budget = _retrieval(args)
    _say_auto("answer", args.answer_model)
    run, summary = run_answer(args.sample, args.worker_url, args.mode, args.run_id, args.answer_model, top_k,
                              args.source, args.include_adversarial, args.concurrency, args.answer_base_url,
                              calls=_call_settings(args), timeout=args.timeout, context_budget=budget,
                              query_strategy=args.query_strategy, ingest_id=args.ingest_id, system=args.system,
                              limit=args.limit)
    for note in summary.outcome.notes:
        print(f"WARNING: {note}")
    print(summary.line())
    print(summary.outcome.line(reason=False) if summary.outcome.ok else summary.outcome.line())
    print(f"run folder: {run.path}")
    return _finish([summary.outcome])


def _existing_run(args: argparse.Namespace):
    from locomo_kit.pipeline import _strategy_key, resolve_run, run_config
    from locomo_kit.runs import RunFolder, known_runs, slug

    if getattr(args, "run", None):
        run = RunFolder(args.run) if "/" not in args.run else RunFolder(Path(args.run).name, root=Path(args.run).parent)
        if not run.exists():
            known = known_runs()
            raise CliError(f"No run at {run.path}." + (f" Known runs: {', '.join(known[:12])}" if known else ""))
        return run
    top_k, budget = _retrieval(args)
    config = run_config(args.sample, args.worker_url, args.mode, args.answer_model, top_k,
                        getattr(args, "source", "memory"), getattr(args, "include_adversarial", False),
                        system=args.system, context_budget=budget, query_strategy=_strategy_key(args.query_strategy),
                        limit=getattr(args, "limit", None))
    run = resolve_run(config, args.run_id)
    if not run.exists():
        others = known_runs(f"{slug(args.sample)}-")
        hint = f" Runs for {args.sample}: {', '.join(others[:8])} (select one with --run-id)." if others else ""
        raise CliError(f"No run at {run.path} for configuration {config.label()}: run `locomo-kit run --sample "
                       f"{args.sample}` (with the same options) first.{hint}")
    return run


def _cmd_score(args: argparse.Namespace) -> int:
    from locomo_kit.outcome import Outcome
    from locomo_kit.pipeline import run_judge, run_score
    from locomo_kit.scoring import by_category
    from locomo_kit.scoring.gold import keys_for
    from locomo_kit.scoring.score_run import load_scores

    if args.judge_protocol and not args.judge_model:
        raise CliError(f"--judge-protocol {args.judge_protocol} needs --judge-model (e.g. anthropic/claude-sonnet-4-6)")
    run = _existing_run(args)
    key = run_score(run, args.sample, gold=args.gold)[0].config_key
    for gold_key in keys_for(args.gold):
        print(f"gold key: {gold_key}")
        scores = load_scores(run, key, gold_key)
        for row in by_category([(s["category"], s["locomo_f1"]) for s in scores]):
            print(f"{str(row.category):>8} {row.name:<12} n={row.count:<5} official F1 {100 * row.mean:5.1f}% "
                  f"[{100 * row.ci_low:.1f}, {100 * row.ci_high:.1f}]")
    outcomes = []
    if args.judge_model:
        protocol = args.judge_protocol or "playbook"
        _say_auto("judge", args.judge_model)
        run_judge(run, protocol, args.judge_model, args.judge_runs, args.judge_base_url, gold=args.gold,
                  calibration_size=args.calibration_size, calls=_call_settings(args), timeout=args.timeout)
        record = run.manifest().get("judge", {}).get(protocol, {}).get("outcome")
        if record:
            outcomes.append(Outcome(**{k: v for k, v in record.items() if k not in ("ok", "not_attempted")}))
            print(outcomes[-1].line())
        from locomo_kit.scoring.judge_findings import console_lines, run_summary

        for line in console_lines(run_summary(run)):  # J with its interval, the calibration, what to distrust
            print(line)
    print(f"run folder: {run.path}")
    return _finish(outcomes, run if args.judge_model else None)


def _call_settings(args: argparse.Namespace):
    """The paid-call options as CallSettings: on a terminal the plan is confirmed unless --yes;
    elsewhere spending needs --yes."""
    from locomo_kit.llm.execute import CallSettings

    def confirm(plan_line: str) -> bool:
        if args.yes:
            return True
        if not sys.stdin.isatty():
            raise CliError("not on a terminal, so the plan above cannot be confirmed: pass --yes to spend "
                           "(and --max-cost USD to cap it)")
        return input("Spend this? [y/N] ").strip().lower() in ("y", "yes")

    return CallSettings(concurrency=args.concurrency, rpm=args.rpm, tpm=args.tpm, retries=args.retries, batch=args.batch,
                        poll_interval=args.batch_poll, max_cost=args.max_cost, confirm=confirm)


def _cmd_report(args: argparse.Namespace) -> int:
    from locomo_kit.pipeline import run_report

    report, figures, _ = run_report(_existing_run(args), args.sample)
    print(f"report:  {report}")
    print(f"html:    {report.with_suffix('.html')} (with the question explorer)")
    print(f"figures: {report.parent / 'figures'} ({len(figures)} PNG)")
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from locomo_kit.export import export_run

    run = _existing_run(args)
    path, rows = export_run(run, args.format, args.output)
    print(f"{path}: {rows} rows (one per question)")
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from locomo_kit.compare import compare, statements, table_lines, write_comparison
    from locomo_kit.paths import outputs_dir
    from locomo_kit.runs import slug

    result = compare(args.runs, gold=args.gold)
    print(f"{result['shared_questions']} shared questions (categories 1-4, {args.gold} gold key); differences vs "
          f"{result['runs'][0]['run_id']}; "
          f"{result['method']['interval']}")
    print("\n".join(table_lines(result)))
    for line in statements(result) + result["notes"]:
        print(line.replace("**", ""))
    if not args.no_write:
        folder = Path(args.out) if args.out else outputs_dir() / "compare" / slug(
            "__vs__".join(r["run_id"] for r in result["runs"]) + ("__audited" if args.gold == "audited" else ""))
        paths = write_comparison(result, folder)
        print(f"comparison: {paths['markdown']} (+ compare.html with the questions across runs, compare.json, compare.png, questions.png)")
    return 0


def _add_compare(sub: argparse._SubParsersAction) -> None:
    cmp_ = sub.add_parser("compare", help="paired comparison of runs per category, with intervals",
                          description="Compare runs over the questions they share: per category, each run's official "
                          "F1, Mem0 F1, J (same judge only), evidence recall, latency, tokens and cost; the paired "
                          "difference with the first run, a paired-bootstrap 95% interval, the minimal detectable "
                          "difference, and whether the runs are distinguishable. Reads run folders only.")
    cmp_.add_argument("runs", nargs="+", metavar="RUN", help="run ids under outputs/runs, or paths to run folders "
                      "(the first is the baseline)")
    cmp_.add_argument("--gold", choices=["original", "audited"], default="original",
                      help="gold key the runs are compared under (original)")
    cmp_.add_argument("--out", help="folder for compare.md/.json/.png (default outputs/compare/<runs>)")
    cmp_.add_argument("--no-write", action="store_true", help="print only")
    cmp_.set_defaults(func=_cmd_compare)


def _retrieval(args: argparse.Namespace) -> tuple[int, int | None]:
    """(top_k, context_budget): a budget of 1,000 tokens by default, ``--top-k`` alone means top-k."""
    if args.context_budget is not None and args.context_budget < 1:
        raise CliError("--context-budget must be a positive number of tokens")
    if args.top_k is not None and args.top_k < 1:
        raise CliError("--top-k must be at least 1")
    return retrieval(args.top_k, args.context_budget)


def budget_list(text: str) -> list[int]:
    """An argparse type: one context budget or a comma-separated list (``250,500,1000``)."""
    from locomo_kit.budgets import parse_budgets

    try:
        budgets = parse_budgets(text) or []
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if any(b > 1_000_000 for b in budgets):
        raise argparse.ArgumentTypeError(f"must be from 1 to 1000000, got {text}")
    return budgets


def _answer_options(p: argparse.ArgumentParser, default_model: str = "extractive", server: bool = True,
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
    _query_strategy_option(p)


def _query_strategy_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--query-strategy", choices=["question", "keywords"], default="question",
                   help="question: the question is the query, as an agent would send it (default); keywords: one "
                   "search per content word fused by the kit (for keyword-only Workers; labelled as the kit's "
                   "fusion, not the Worker's retrieval)")


def _judge_options(p: argparse.ArgumentParser) -> None:
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


def _call_options(p: argparse.ArgumentParser) -> None:
    from locomo_kit.llm.execute import DEFAULT_CONCURRENCY

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


def _worker_options(p: argparse.ArgumentParser, run_id: bool = True) -> None:
    p.add_argument("--sample", default="conv-26", help="a sample id, a comma-separated list, or 'all' (default conv-26)")
    _sessions_option(p)
    p.add_argument("--worker-url", default=os.environ.get("LOCOMO_WORKER_URL", "embedded"),
                   help="Worker base URL, or 'embedded' to start memworker for the run "
                   "(default: $LOCOMO_WORKER_URL, else embedded); token from $LOCOMO_WORKER_TOKEN")
    p.add_argument("--system", help="the memory system: memworker (default: the embedded reference Worker), "
                   "claude-mem (with --worker-url), bm25, dense, mempalace, mem0 (docs/systems.md); default: "
                   "claude-mem when --worker-url names a Worker, else memworker")
    p.add_argument("--mode", choices=["transcript", "turns"], default="transcript",
                   help="transcript: one Read per session (default); turns: each turn saved via memory/save "
                   "(Worker systems; the others store what their adapter stores)")
    if not run_id:  # ingest and verify: the run folder that holds the ingestion
        p.add_argument("--ingest-id", "--run-id", dest="ingest_id", help="folder name under outputs/runs for the "
                       "ingestion (default: derived from sample, mode and worker, shared by the runs that use it)")
        return
    p.add_argument("--ingest-id", help="the ingestion's folder under outputs/runs (default: --run-id when given, "
                   "else derived from sample, mode and worker)")
    if run_id:
        p.add_argument("--run-id", help="run folder name under outputs/runs (default: derived from every option "
                       "that changes results: sample, mode, worker, answer model, top-k, source, prompt version)")


def _sessions_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sessions", type=int_in(1, 1_000), metavar="N",
                   help="only the first N sessions of each conversation, and the questions whose evidence lies in "
                   "them (the sample becomes e.g. conv-26@s2: its own ingestion and runs): a smoke test of a slow "
                   "ingestion, such as a compressor on a CPU")


def _source_options(p: argparse.ArgumentParser) -> None:
    _source_option(p)
    p.add_argument("--include-adversarial", action="store_true", help="also answer category 5")


def _source_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--source", choices=["memory", "full-context", "oracle"], default="memory",
                   help="memory: answer from retrieved memories (default); full-context: from the whole conversation "
                   "(needs an LLM answerer); oracle: from each question's gold evidence turns only (no memory "
                   "system: isolates the answerer)")


def _session_timeout_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--session-timeout", type=positive_float, default=180.0,
                   help="seconds to wait for the Worker's queue per session; a queue still stuck after that stops "
                   "the whole ingestion (180)")


def _consistency_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--consistency-timeout", type=positive_float, default=1200.0,
                   help="after ingesting, wait at most this many seconds until the Worker finds sampled memories "
                   "by their own words (read-your-writes; asynchronous indexes such as Chroma's) (1200)")


def _print_partial(conversations) -> None:
    from locomo_kit.dataset import partial_note

    for conv in conversations:
        if note := partial_note(conv):
            print(note)


def _cmd_ingest(args: argparse.Namespace) -> int:
    from locomo_kit.ingest import print_summary
    from locomo_kit.pipeline import run_ingest

    from locomo_kit.pipeline import ingest_outcome, load

    conversations, _ = load(args.sample)
    _print_partial(conversations)
    folder, summary = run_ingest(args.sample, args.worker_url, args.mode, args.ingest_id, force=args.force,
                                 session_timeout=args.session_timeout, poll_interval=args.poll_interval,
                                 consistency_timeout=args.consistency_timeout, system=args.system)
    for note in getattr(summary, "notes", []):
        print(note)
    print_summary(summary)
    outcome = ingest_outcome(summary, sum(len(c.sessions) for c in conversations))
    print(outcome.line(reason=False))  # the failures are listed above
    print(f"run folder: {folder.path}")
    return _finish([outcome], ok_code=0 if summary.succeeded else 1)


def _cmd_verify(args: argparse.Namespace) -> int:
    from locomo_kit.ingest import format_verification, verify
    from locomo_kit.pipeline import connect, load, resolve_ingestion

    from locomo_kit.systems.registry import is_worker, system_name

    conversations, _ = load(args.sample)
    name = system_name(args.system, args.worker_url)
    if not is_worker(name):
        from locomo_kit.systems.verify import verify_system

        return verify_system(name, conversations, args.ingest_id)
    run = resolve_ingestion(args.sample, args.mode, args.worker_url, args.ingest_id)
    if args.worker_url == "embedded" and not run.exists():
        raise CliError(f"No ingestion at {run.path}: ingest first (locomo-kit ingest --sample {args.sample})")
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
        help="download or copy locomo10.json and the gold-answer audit into data/ and verify their sha256",
        description="Download the pinned locomo10.json into data/, or copy it from LOCOMO_SOURCE "
        "(a path or URL); likewise the pinned LoCoMo audit (dial481/locomo-audit errors.json) from "
        "LOCOMO_AUDIT_SOURCE. The sha256 is verified either way.",
    )
    fetch.add_argument("--source", help="path or URL (default: $LOCOMO_SOURCE, else the upstream URL)")
    fetch.add_argument("--audit-source", help="path or URL of the audit's errors.json (default: $LOCOMO_AUDIT_SOURCE, "
                       "else a copy beside a local LOCOMO_SOURCE or in ../shared/data, else the pinned URL)")
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
    _worker_options(ing, run_id=False)
    ing.add_argument("--force", action="store_true", help="forget the project in the Worker and ingest again")
    _session_timeout_option(ing)
    ing.add_argument("--poll-interval", type=positive_float, default=3.0, help="longest pause between queue polls (3 s)")
    _consistency_option(ing)
    ing.set_defaults(func=_cmd_ingest)
    ver = sub.add_parser("verify", help="count a project's observations and probe search",
                         description="Count the observations of each sample's project and show the top 3 "
                         "results for one single-hop, one multi-hop and one temporal question.")
    _worker_options(ver, run_id=False)
    _query_strategy_option(ver)
    ver.set_defaults(func=_cmd_verify)
    ans = sub.add_parser("answer", help="answer every question from the Worker's memories (resumable)",
                         description="Answer each question from the memories the Worker retrieves (or the full "
                         "conversation), appending to answers.jsonl; a rerun skips answered questions.")
    _worker_options(ans)
    _answer_options(ans)
    _source_options(ans)
    _call_options(ans)
    ans.set_defaults(func=_cmd_answer)
    sc = sub.add_parser("score", help="score saved answers (F1s, diagnostics) and optionally judge them",
                        description="Score a run's saved answers: official LoCoMo F1, Mem0 F1 and BLEU-1, retrieval "
                        "diagnostics; with --judge-model also LLM-as-a-Judge. Never queries the Worker.")
    _worker_options(sc)
    _answer_options(sc, server=False)
    _source_options(sc)
    _judge_options(sc)
    _call_options(sc)
    sc.add_argument("--llm-base-url", dest="judge_base_url", help="the same as --judge-base-url")
    sc.add_argument("--gold", choices=["original", "audited", "both"], default="both",
                    help="gold key: original (the released answers, comparable to published numbers), audited "
                    "(the LoCoMo audit's corrected answers and evidence ids), or both (default)")
    sc.set_defaults(func=_cmd_score)
    rep = sub.add_parser("report", help="write report.md, report.html and figures for a run",
                         description="Write report.md, report.html (with the question explorer) and figures/*.png into the run folder from its records.")
    _worker_options(rep)
    _answer_options(rep, server=False)
    _source_options(rep)
    rep.set_defaults(func=_cmd_report)
    exp = sub.add_parser("export", help="write one row per question with every score (CSV or Parquet)",
                         description="Export a run's questions, answers and scores (official F1, Mem0 F1, BLEU-1, "
                         "evidence coverage, J per protocol) as one row per question.")
    exp.add_argument("run", nargs="?", help="run id (a folder under outputs/runs) or a run folder's path; "
                     "default: the run the options below select")
    _worker_options(exp)
    _answer_options(exp, server=False)
    _source_options(exp)
    exp.add_argument("--format", choices=["csv", "parquet"], default="csv", help="(csv)")
    exp.add_argument("--output", help="file to write (default: questions.csv / questions.parquet in the run folder)")
    exp.set_defaults(func=_cmd_export)
    run = sub.add_parser("run", help="the whole pipeline: ingest, answer, score, (judge), report",
                         description="Run the whole pipeline on the embedded Worker offline by default; --paid runs "
                         "the paid protocol (answerer claude-opus-4-6, judge claude-sonnet-4-6) with ANTHROPIC_API_KEY.")
    _worker_options(run)
    _answer_options(run, budgets=True)
    _judge_options(run)
    _call_options(run)
    _consistency_option(run)
    _session_timeout_option(run)
    _source_option(run)
    run.add_argument("--paid", action="store_true", help="use the Anthropic answerer and judge (needs ANTHROPIC_API_KEY)")
    run.set_defaults(func=_cmd_run)
    _add_compare(sub)
    from locomo_kit.leaderboard_cli import add_parser as add_leaderboard

    add_leaderboard(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from locomo_kit.dataset import DatasetError
    from locomo_kit.worker_client import WorkerError

    args = build_parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        if getattr(args, "sessions", None) is not None:
            from locomo_kit.dataset import with_sessions

            args.sample = with_sessions(args.sample, args.sessions)
        return func(args)
    except (CliError, DatasetError, KeyError, WorkerError, RuntimeError, ValueError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        print(f"locomo-kit: error: {message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("locomo-kit: interrupted; rerun the same command to resume.", file=sys.stderr)
        if argv is None:  # the command line: every record is already on disk (fsynced), so leave now, without
            sys.stdout.flush()  # waiting for calls still in flight or a slow interpreter teardown
            sys.stderr.flush()
            os._exit(130)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
