"""The stages as one call each, shared by the CLI and the notebooks: worker → ingest → answer → score.

A run is one configuration (:class:`~locomo_kit.runs.RunConfig`): its folder is named by
everything that changes its results, and every stage and the report read that folder only.
Ingestion is shared between the runs on the same sample, mode and Worker, and is reused only while
the Worker still holds what was ingested (:mod:`locomo_kit.worker.identity`).

Money is spent only when asked: every default is the offline path (the extractive answerer, no
judge); a paid model is used only when named (``anthropic/…``, ``auto``) or by ``run --paid``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from locomo_kit.data_fetch import sha256_file
from locomo_kit.dataset import Conversation, load_dataset, partial_note, questions, select
from locomo_kit.imported.identity import imported_sample
from locomo_kit.ingestion.summary import IngestFailed, IngestSummary, ingest_outcome
from locomo_kit.llm import DEFAULT_ANSWER_MODEL, DEFAULT_JUDGE_MODEL, make_llm, resolve_auto
from locomo_kit.llm.execute import preflight
from locomo_kit.outcome import Outcome, StageFailed
from locomo_kit.paths import default_dataset_path, outputs_dir
from locomo_kit.pipeline.systems import answer_with_system, ingest_system
from locomo_kit.qa.answering import AnswerConfig, QARunner
from locomo_kit.qa.oracle import LABEL, ORACLE_IDENTITY
from locomo_kit.qa.retrieval import LABELS
from locomo_kit.qa.system_search import check_query_strategy, retrieval_label
from locomo_kit.reports.judge_findings import console_lines
from locomo_kit.reports.markdown import build_report
from locomo_kit.runs import RunConfig, RunFolder, utc_now
from locomo_kit.runs.records import load_answers
from locomo_kit.scoring.gold import audit_for, keys_for
from locomo_kit.scoring.gold_judging import audited_answers, calibration_answers
from locomo_kit.scoring.judge import Judge, judge_answers
from locomo_kit.scoring.score_run import score_answers
from locomo_kit.systems import registry
from locomo_kit.systems.options import checked_options
from locomo_kit.systems.registry import is_worker, system_name
from locomo_kit.systems.runner import ingestion_of, system_settings, system_tag
from locomo_kit.worker.connect import EMBEDDED

TOP_K_RANGE = (1, 100)
DEFAULT_CONTEXT_BUDGET = 1000
BUDGET_LIMIT = TOP_K_RANGE[1]  # the most results one search returns (memworker's cap)


def retrieval(top_k: int | None = None, context_budget: int | None = None) -> tuple[int, int | None]:
    """(top_k, context_budget) as the CLI and the notebooks read their options: a budget of 1,000 tokens
    by default (``top_k`` then caps the memories, at most 100); ``top_k`` alone means top-k, no budget."""
    if context_budget is not None and context_budget < 1:
        raise ValueError("the context budget must be a positive number of tokens")
    if top_k is not None and not TOP_K_RANGE[0] <= top_k <= TOP_K_RANGE[1]:
        raise ValueError(f"top_k must be {TOP_K_RANGE[0]}-{TOP_K_RANGE[1]}")
    if context_budget is None and top_k is not None:
        return top_k, None
    return min(top_k or BUDGET_LIMIT, BUDGET_LIMIT), context_budget or DEFAULT_CONTEXT_BUDGET


JUDGE_RUNS_RANGE = (1, 50)


def load(sample: str, dataset_path: str | None = None) -> tuple[list[Conversation], str]:
    """The selected conversations and the dataset's sha256."""
    path = dataset_path or default_dataset_path()
    return select(load_dataset(path), sample), sha256_file(path)


def check_range(name: str, value: int, bounds: tuple[int, int]) -> None:
    lo, hi = bounds
    if not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(f"{name} must be an integer from {lo} to {hi}, got {value!r}")


def strategy_key(query_strategy: str) -> str | None:
    """The query strategy as a run-id parameter (the default leaves ids as they were)."""
    return None if query_strategy == "question" else query_strategy


def checked_system_options(system: str | None, worker_url: str,
                           options: dict[str, Any] | str | None) -> dict[str, Any] | None:
    """``options`` checked against what the system declares and typed (so that ``"1.2"`` from the command
    line and ``1.2`` from the library name the same run; one string: ``k1=1.2,b=0.5`` or a JSON object, as
    a notebook parameter may arrive); None without any."""
    if not options:
        return None
    name = system_name(system, worker_url)
    if is_worker(name):
        raise ValueError(f"{name} is set by --worker-url, --mode and the Worker's own configuration: "
                         "--system-option is for the other systems")
    return checked_options(name, registry.resolve(name), options) or None


def run_config(sample: str = "conv-26", worker_url: str = EMBEDDED, mode: str = "transcript",
               answer_model: str = "extractive", top_k: int = 8, source: str = "memory",
               include_adversarial: bool = False, system: str | None = None, **extra: Any) -> RunConfig:
    """The configuration these arguments describe (``answer_model`` as given: ``auto`` is resolved here).
    ``system``: a memory system by name (:mod:`locomo_kit.systems`; default: memworker, or claude-mem
    for a ``worker_url``); the oracle source uses none."""

    check_range("top_k", top_k, TOP_K_RANGE)
    if extra.get("system_options"):
        extra["system_options"] = checked_system_options(system, worker_url, extra["system_options"])
    spec = resolve_auto(answer_model, DEFAULT_ANSWER_MODEL)
    version = AnswerConfig(source=source, answer_model=spec, top_k=top_k).prompt_version
    tag = None
    if source == "oracle":
        worker_url, mode = "none", "none"
    elif not is_worker(name := system_name(system, worker_url)):
        tag, worker_url, mode = system_tag(name), "none", registry.resolve(name).unit
    return RunConfig(sample=sample, mode=mode, worker_url=worker_url, answer_model=spec, top_k=top_k, source=source,
                     include_adversarial=include_adversarial, answer_prompt_version=version, extra=extra, system=tag)


def resolve_run(config: RunConfig, run_id: str | None = None) -> RunFolder:
    """The run folder of ``config`` (or the one named ``run_id``)."""
    return RunFolder(run_id or config.run_id())


def resolve_ingestion(sample: str, mode: str, worker_url: str, ingest_id: str | None = None) -> RunFolder:
    """The ingestion folder of the Worker at ``worker_url`` (see :func:`~locomo_kit.systems.runner.ingestion_of`)."""
    return ingestion_of(system_name(None, worker_url), sample, worker_url, mode, ingest_id, None)


def run_ingest(sample: str = "conv-26", worker_url: str = EMBEDDED, mode: str = "transcript",
               ingest_id: str | None = None, force: bool = False, session_timeout: float = 180.0,
               poll_interval: float = 3.0, dataset_path: str | None = None,
               progress: bool | None = None, for_run: RunFolder | None = None, consistency_timeout: float = 1200.0,
               log=print, system: str | None = None,
               system_options: dict[str, Any] | None = None) -> tuple[RunFolder, IngestSummary]:
    """Ingest ``sample`` into the Worker (resumable); returns the ingestion folder and a summary.
    Then (when every session went in) wait until the Worker finds what it was given
    (read-your-writes), recording the wait in the manifest's ``consistency``.

    A recorded ingestion is reused only while the Worker still holds it (see module doc).
    ``for_run``: the run this ingestion is for; when it holds results from another Worker,
    nothing is ingested (:class:`~locomo_kit.worker.identity.WorkerMismatch`).
    """

    conversations, sha = load(sample, dataset_path)
    name = system_name(system, worker_url)
    system_options = checked_system_options(system, worker_url, system_options)
    ingestion = ingestion_of(name, sample, worker_url, mode, ingest_id, system_options)
    summary = ingest_system(name, system_settings(name, worker_url, mode, system_options, session_timeout, poll_interval),
                            ingestion, conversations, sample, sha, force=force, progress=progress,
                            dataset_path=dataset_path, for_run=for_run, consistency_timeout=consistency_timeout, log=log)
    return ingestion, summary


def llm_cache_path() -> Path:

    return outputs_dir() / "cache" / "llm.sqlite"


def answer_outcome(summary: Any, total: int | None = None) -> Outcome:
    out = Outcome("answer", unit="question", total=total, done=summary.answered, skipped=summary.skipped)
    out.add_failures(f"{r.sample_id} q{r.question_index}: {r.error}" for r in summary.records if r.status == "failed")
    return out


def run_answer(sample: str = "conv-26", worker_url: str = EMBEDDED, mode: str = "transcript",
               run_id: str | None = None, answer_model: str = "extractive", top_k: int = 8, source: str = "memory",
               include_adversarial: bool = False, concurrency: int = 4, llm_base_url: str | None = None,
               dataset_path: str | None = None, progress: bool | None = None, llm=None,
               calls=None, timeout: float | None = None, context_budget: int | None = None,
               query_strategy: str = "question", ingest_id: str | None = None, system: str | None = None,
               system_options: dict[str, Any] | None = None, limit: int | None = None, **extra: Any):
    """Answer every question of ``sample`` (resumable) into the configuration's run folder
    (``limit``: only the first N questions of each sample, a run of its own).

    ``answer_model`` defaults to the offline extractive floor; ``llm`` overrides the model (tests);
    ``calls`` (:class:`~locomo_kit.llm.execute.CallSettings`) sets concurrency, rate limits, batch,
    spending; ``context_budget``: tokens of memories per question (``top_k`` then only caps their
    number); ``query_strategy``: how memories are retrieved (see :mod:`locomo_kit.qa.retrieval`);
    ``extra``: further result-changing parameters (they name the run); ``system``: the memory system
    (:mod:`locomo_kit.systems`), ``source="oracle"``: the gold evidence turns instead of any system.
    """

    if source == "memory":
        check_query_strategy(system_name(system, worker_url), query_strategy)  # before anything is done
    conversations, sha = load(sample, dataset_path)
    system_options = checked_system_options(system, worker_url, system_options) if source == "memory" else None
    config = run_config(sample, worker_url, mode, answer_model if llm is None else f"{llm.provider}/{llm.model}",
                        top_k, source, include_adversarial, system=system, context_budget=context_budget,
                        query_strategy=strategy_key(query_strategy), limit=limit,
                        system_options=system_options or None, **extra)
    name = system_name(system, worker_url) if source == "memory" else None
    spec = config.answer_model
    if spec == "extractive" and source == "full-context":
        raise ValueError("full-context answering needs an LLM answerer: pass --answer-model anthropic/<model> "
                         "or openai/<model> (with --llm-base-url)")
    if llm is None and spec != "extractive":
        llm = make_llm(spec, base_url=llm_base_url, cache_path=llm_cache_path(), timeout=timeout)
    answer = AnswerConfig(source=source, answer_model=spec, top_k=top_k, include_adversarial=include_adversarial,
                          context_budget=context_budget, query_strategy=query_strategy, limit=limit)
    n = sum(len(questions(c, include_adversarial)[:limit]) for c in conversations)
    run = resolve_run(config, run_id)
    ingestion = ingestion_of(name, sample, worker_url, mode, ingest_id or run_id, system_options) if name else None
    manifest = {"config": config.as_dict(), "config_id": config.key(), "config_label": config.label(),
                "parameters": {"sample": sample, "mode": mode, "worker_url": worker_url},
                "dataset": {"path": str(dataset_path or default_dataset_path()), "sha256": sha},
                "answer": {"model": spec, "source": source, "top_k": top_k if source == "memory" else None,
                           "context_budget": context_budget, "prompt_version": answer.prompt_version,
                           "config_key": answer.key(), "include_adversarial": include_adversarial,
                           "server": getattr(llm, "base_url", None), "batch": bool(calls and calls.batch),
                           "query_strategy": query_strategy if source == "memory" else None, "limit": limit,
                           "retrieval": LABELS[query_strategy] if source == "memory" else "full conversation",
                           "started_at": utc_now()}}
    warnings: list[str] = []
    if name and ingestion is not None:  # the memory source (full-context and oracle use no system)
        manifest["answer"]["retrieval"] = retrieval_label(name, query_strategy)
        summary, warnings = answer_with_system(name, system_settings(name, worker_url, mode, system_options), run,
                                               ingestion, conversations, manifest, answer, llm, concurrency, progress,
                                               calls)
    elif source == "oracle":

        manifest["answer"].update(retrieval=LABEL, context_budget=None)
        manifest["parameters"].update(mode="none", worker_url=None)
        run.create().update_manifest(worker=ORACLE_IDENTITY, **manifest)
        summary = QARunner(answer, llm=llm).run(run, conversations, concurrency, progress, calls)
    else:
        run.create().update_manifest(**manifest)
        summary = QARunner(answer, llm=llm).run(run, conversations, concurrency, progress, calls)
    outcome = answer_outcome(summary, n)
    outcome.notes += warnings
    usage = {"input_tokens": sum(r.input_tokens for r in summary.records if not r.cached),
             "output_tokens": sum(r.output_tokens for r in summary.records if not r.cached)}
    run.update_manifest(answer={"finished_at": utc_now(), "answered": summary.answered, "failed": summary.failed,
                                "skipped": summary.skipped, "usage_this_call": usage,
                                "outcome": outcome.as_record()})
    summary.outcome = outcome
    return run, summary


def _answer_key(run: RunFolder, config_key: str | None) -> str | None:
    """The answer configuration this run folder was made for (explicit, never "the latest")."""
    return config_key or run.manifest().get("answer", {}).get("config_key")


def run_score(run: RunFolder, sample: str, dataset_path: str | None = None, config_key: str | None = None,
              gold: str = "both"):
    """Score saved answers (official F1, Mem0 F1/BLEU-1, retrieval diagnostics) under the gold key(s)
    ``original``, ``audited`` or ``both``; returns the scores of the first key."""

    sample = imported_sample(run, sample)  # an imported run's answers span the conversations its file answers
    conversations, _ = load(sample, dataset_path)
    answers = load_answers(run, _answer_key(run, config_key))
    if not answers:
        raise StageFailed(Outcome("score", unit="answer", stopped=f"no answers in {run.path}: answering produced "
                                  f"nothing (run `locomo-kit answer --sample {sample}` and read its errors)"))
    keys = keys_for(gold)
    audit = audit_for(conversations, dataset_path) if "audited" in keys else None
    scores = score_answers(run, answers, conversations, keys, audit)
    outcome = Outcome("score", unit="answer", total=len(answers), done=len(answers))
    run.update_manifest(scoring={"scored_at": utc_now(), "questions": len(answers), "gold_keys": list(keys),
                                 "config_key": answers[0]["config_key"], "outcome": outcome.as_record()})
    return [s for s in scores if s.gold_key == keys[0]]


def judge_outcome(judgements: list, protocol: str, total: int, skipped: int) -> Outcome:
    out = Outcome(f"judge ({protocol})", unit="question", total=total, skipped=skipped)
    for j in judgements:
        if getattr(j, "n_ok", 1):
            out.done += 1
        else:
            errors = [r.get("error") for r in getattr(j, "runs", []) if r.get("error")]
            out.add_failure(f"{j.sample_id} q{j.question_index}: {errors[0] if errors else 'no valid judge run'}")
    return out


def run_judge(run: RunFolder, protocol: str = "playbook", judge_model: str | None = None, runs: int | None = None,
              llm_base_url: str | None = None, config_key: str | None = None, llm=None, progress: bool | None = None,
              gold: str = "both", calibration_size: int = 100, dataset_path: str | None = None,
              calls=None, timeout: float | None = None):
    """Judge saved answers under the gold key(s), and the judge calibration set, all through one call
    pool (or one Message Batch); returns the answer judgements made now (None when no judge model is
    given). ``llm_base_url`` is the judge's own server (never the answerer's).

    ``judge_model`` None (the default) judges nothing: judging costs money, so it runs only when a
    model is named (``anthropic/…``, ``openai/…``, or ``auto``: Anthropic when a key is set).
    """

    if runs is not None:
        check_range("judge runs", runs, JUDGE_RUNS_RANGE)
    if llm is None:
        spec = resolve_auto(judge_model, DEFAULT_JUDGE_MODEL) if judge_model else "extractive"
        if spec == "extractive":
            return None
        llm = make_llm(spec, base_url=llm_base_url, cache_path=llm_cache_path(), timeout=timeout)
    judge = Judge(llm, protocol=protocol, runs=runs)
    answers = [a for a in load_answers(run, _answer_key(run, config_key)) if a["category"] != 5]
    extra = audited_answers(answers, gold, dataset_path) + calibration_answers(answers, calibration_size, dataset_path)
    made = judge_answers(run, judge, answers + extra, progress, settings=calls)
    keys = {a["config_key"] for a in answers}
    judgements = [j for j in made if j.answer_config_key in keys]
    judgeable = [a for a in answers if a.get("gold")]
    outcome = judge_outcome(judgements, protocol, len(judgeable), len(judgeable) - len(judgements))
    usage = {"input_tokens": sum(r["input_tokens"] for j in made for r in j.runs if not r["cached"]),
             "output_tokens": sum(r["output_tokens"] for j in made for r in j.runs if not r["cached"])}
    run.update_manifest(judge={protocol: {"model": judge.model, "runs": judge.runs, "prompt_version": judge.prompt_version,
                                          "temperature_requested": judge.temperature, "judged_at": utc_now(),
                                          "gold": gold, "calibration_size": calibration_size,
                                          "server": getattr(llm, "base_url", None),
                                          "batch": bool(calls and calls.batch), "usage_this_call": usage,
                                          "outcome": outcome.as_record()}})
    return judgements


def run_report(run: RunFolder, sample: str, dataset_path: str | None = None):
    """Write report.md and figures from the run's records."""

    conversations, _ = load(imported_sample(run, sample), dataset_path)
    return build_report(run, conversations)


def _ingest_stage(sample, worker_url, mode, ingest_id, dataset_path, progress, run, consistency_timeout, log,
                  session_timeout, system, system_options, outcomes: list[Outcome]) -> None:
    """run_all's ingest stage: ingest, log, record its outcome; raise :class:`IngestFailed` when nothing went in."""

    for conv in load(sample, dataset_path)[0]:
        if note := partial_note(conv):
            log(note)
    ingestion, ingest_summary = run_ingest(sample, worker_url, mode, ingest_id, dataset_path=dataset_path,
                                           progress=progress, for_run=run, consistency_timeout=consistency_timeout,
                                           log=log, session_timeout=session_timeout, system=system,
                                           system_options=system_options)
    for note in getattr(ingest_summary, "notes", []):
        log(note)
    for line in ingest_summary.lines():
        log(line)
    conversations, _ = load(sample, dataset_path)
    ingested = ingest_outcome(ingest_summary, sum(len(c.sessions) for c in conversations))
    outcomes.append(ingested)
    log(ingested.line(reason=False))  # the failures are listed above
    if ingest_summary.kept_nothing:
        log("the Worker's compressor stored nothing of any session: answering from the empty memory anyway, so "
            "that the report shows what the compressor kept (the run exits 1)")
    elif ingest_summary.aborted or not (ingest_summary.ingested or ingest_summary.skipped):
        raise IngestFailed(f"ingestion failed, nothing answered or reported: "
                           f"{ingest_summary.aborted or 'no session was ingested'} (run folder {ingestion.path})")


@dataclass
class PipelineResult:
    run: RunFolder
    report: Path | None
    figures: list[Path]
    summary: dict | None
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(o.ok for o in self.outcomes)


def run_all(sample: str = "conv-26", worker_url: str = EMBEDDED, mode: str = "transcript", run_id: str | None = None,
            answer_model: str = "extractive", judge_model: str | None = None, judge_protocol: str = "playbook",
            judge_runs: int | None = None, top_k: int = 8, llm_base_url: str | None = None,
            dataset_path: str | None = None, progress: bool | None = None, log: Callable[[str], None] = print,
            calibration_size: int = 100, judge_base_url: str | None = None, calls=None, timeout: float | None = None,
            context_budget: int | None = None, query_strategy: str = "question", consistency_timeout: float = 1200.0,
            session_timeout: float = 180.0, ingest_id: str | None = None, system: str | None = None,
            system_options: dict[str, Any] | None = None, source: str = "memory", limit: int | None = None,
            **extra: Any) -> PipelineResult:
    """The whole pipeline: ingest → answer → score → judge (when a judge model is given) → report.
    ``llm_base_url`` is the answerer's server, ``judge_base_url`` the judge's.

    Each stage logs its one-line outcome. Ingestion that stopped or stored nothing raises
    :class:`IngestFailed`, answering that produced nothing :class:`~locomo_kit.outcome.StageFailed`:
    no report is written. Partial results are reported with a banner at the top of the report, and
    ``result.ok`` is False. ``extra``: further result-changing answer parameters (they name the run,
    see :class:`~locomo_kit.runs.RunConfig`). ``system``: the memory system by name (default memworker);
    ``source="oracle"`` answers from each question's gold evidence turns, with no system (nothing ingested).
    """

    check_range("top_k", top_k, TOP_K_RANGE)
    if judge_runs is not None:
        check_range("judge runs", judge_runs, JUDGE_RUNS_RANGE)
    for spec, url in ((answer_model, llm_base_url), (judge_model, judge_base_url)):
        # a missing key or SDK, a refused key or an unknown model fails now, before any work is done
        if spec and spec not in ("extractive", "auto"):
            llm = make_llm(spec, base_url=url, timeout=timeout)
            if calls is None or calls.preflight:
                preflight(llm)
    outcomes: list[Outcome] = []
    system_options = checked_system_options(system, worker_url, system_options) if source == "memory" else None
    config = run_config(sample, worker_url, mode, answer_model, top_k, source, system=system,
                        context_budget=context_budget, query_strategy=strategy_key(query_strategy), limit=limit,
                        system_options=system_options or None, **extra)
    run = resolve_run(config, run_id)
    name = system_name(system, worker_url)
    if source == "memory":
        check_query_strategy(name, query_strategy)  # refused before anything is ingested
        ingest_id = ingest_id or run_id or ingestion_of(name, sample, worker_url, mode, None, system_options).run_id
        _ingest_stage(sample, worker_url, mode, ingest_id, dataset_path, progress, run, consistency_timeout, log,
                      session_timeout, name, system_options, outcomes)
    elif source == "oracle":
        log("oracle source: each question is answered from its gold evidence turns only; nothing is ingested")
    _, answers = run_answer(sample, worker_url, mode, run.run_id, answer_model, top_k, source,
                            llm_base_url=llm_base_url,
                            dataset_path=dataset_path, progress=progress, calls=calls, timeout=timeout,
                            concurrency=calls.concurrency if calls else 4, context_budget=context_budget,
                            query_strategy=query_strategy, ingest_id=ingest_id, system=system,
                            system_options=system_options, limit=limit, **extra)
    outcomes.append(answers.outcome)
    for note in answers.outcome.notes:
        log(note)
    log(answers.outcome.line())
    answers.outcome.raise_if_empty()
    scores = run_score(run, sample, dataset_path)
    log(f"score ok: {len(scores)} answers scored")
    if judge_model:
        run_judge(run, judge_protocol, judge_model, judge_runs, judge_base_url, progress=progress,
                  calibration_size=calibration_size, dataset_path=dataset_path, calls=calls, timeout=timeout)
        judged = Outcome(**{k: v for k, v in run.manifest()["judge"][judge_protocol]["outcome"].items()
                            if k not in ("ok", "not_attempted")})
        outcomes.append(judged)
        log(judged.line())
    report, figures, summary = run_report(run, sample, dataset_path)
    if judge_model:

        for line in console_lines(summary):
            log(line)
    return PipelineResult(run, report, figures, summary, outcomes)
