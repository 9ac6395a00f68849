"""The stages as one call each, shared by the CLI, the notebooks and the library: ingest → answer → score →
judge → report, and the whole pipeline (:func:`run_all`).

Each stage takes its subject by position (a sample, or a run folder) and the rest by keyword, as settings
objects (:mod:`locomo_kit.settings`): the memory system (:class:`~locomo_kit.settings.SystemSpec`), the
retrieval (:class:`~locomo_kit.settings.Retrieval`), the answerer (:class:`~locomo_kit.settings.Answerer`) and
the judge (:class:`~locomo_kit.settings.Judge`), so that the same options name the same run wherever they
come from. A run is one configuration (:class:`~locomo_kit.runs.RunConfig`): its folder is named by
everything that changes its results, and every stage and the report read that folder only. Ingestion is
shared between the runs on the same sample and system, and is reused only while the system still holds
what was ingested (:mod:`locomo_kit.worker.identity`).

Money is spent only when asked: every default is the offline path (the extractive answerer, no judge); a
paid model is used only when named (``anthropic/…``, ``auto``) or by ``run --paid``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from locomo_kit.data_fetch import sha256_file
from locomo_kit.dataset import Conversation, load_dataset, partial_note, questions, select
from locomo_kit.imported.identity import imported_sample
from locomo_kit.ingestion.summary import IngestFailed, IngestSummary, ingest_outcome
from locomo_kit.llm import DEFAULT_ANSWER_MODEL, DEFAULT_JUDGE_MODEL, make_llm, resolve_auto
from locomo_kit.llm.execute import CallSettings, preflight
from locomo_kit.outcome import Outcome, StageFailed
from locomo_kit.paths import default_dataset_path, outputs_dir
from locomo_kit.pipeline.systems import answer_with_system, ingest_system
from locomo_kit.qa.answering import AnswerConfig, QARunner
from locomo_kit.qa.floor import measure_llm_floor
from locomo_kit.qa.oracle import LABEL, ORACLE_IDENTITY
from locomo_kit.qa.retrieval import LABELS
from locomo_kit.qa.system_search import check_query_strategy, retrieval_label
from locomo_kit.reports.judge_findings import console_lines
from locomo_kit.reports.markdown import build_report
from locomo_kit.runs import RunConfig, RunFolder, utc_now
from locomo_kit.runs.records import ANSWERS_FILE, load_answers
from locomo_kit.scoring.gold import audit_for, keys_for
from locomo_kit.scoring.gold_judging import audited_answers, calibration_answers
from locomo_kit.scoring.judge import Judge as LLMJudge
from locomo_kit.scoring.judge import judge_answers
from locomo_kit.scoring.score_run import score_answers
from locomo_kit.settings import (
    Answerer,
    Judge,
    Retrieval,
    SystemSpec,
    as_answerer,
    as_judge,
    as_system,
)
from locomo_kit.systems.runner import ResolvedSystem, resolve_system

DEFAULT_CONCURRENCY = 4  # searches (and calls) in flight when no CallSettings are given


def load(sample: str, *, dataset_path: str | None = None) -> tuple[list[Conversation], str]:
    """The selected conversations and the dataset's sha256."""
    path = dataset_path or default_dataset_path()
    return select(load_dataset(path), sample), sha256_file(path)


def strategy_key(query_strategy: str) -> str | None:
    """The query strategy as a run-id parameter (the default leaves ids as they were)."""
    return None if query_strategy == "question" else query_strategy


def _for_source(system: SystemSpec | ResolvedSystem | str | None, answerer: Answerer) -> ResolvedSystem:
    """The system resolved once; its options count only where memories are read (the memory source)."""
    if isinstance(system, ResolvedSystem):
        return system
    spec = as_system(system)
    return resolve_system(spec if answerer.source == "memory" else replace(spec, options=None))


def _config(sample: str, *, system: ResolvedSystem, retrieval: Retrieval, answerer: Answerer) -> RunConfig:
    spec = resolve_auto(answerer.spec, DEFAULT_ANSWER_MODEL)
    version = AnswerConfig(source=answerer.source, answer_model=spec, top_k=retrieval.top_k).prompt_version
    fields = ({"worker_url": "none", "mode": "none", "system": None} if answerer.source == "oracle"
              else system.run_fields())
    extra = {"context_budget": retrieval.context_budget, "query_strategy": strategy_key(retrieval.query_strategy),
             "limit": answerer.limit, "system_options": system.options}
    return RunConfig(sample=sample, answer_model=spec, top_k=retrieval.top_k, source=answerer.source,
                     include_adversarial=answerer.include_adversarial, answer_prompt_version=version, extra=extra,
                     **fields)


def run_config(sample: str = "conv-26", *, system: SystemSpec | str | None = None, retrieval: Retrieval | None = None,
               answerer: Answerer | str | None = None) -> RunConfig:
    """The configuration these settings describe, whose :meth:`~locomo_kit.runs.RunConfig.run_id` names the run
    (``auto`` is resolved here; the oracle source uses no system)."""
    answerer = as_answerer(answerer)
    return _config(sample, system=_for_source(system, answerer), retrieval=retrieval or Retrieval(), answerer=answerer)


def resolve_run(config: RunConfig, *, run_id: str | None = None) -> RunFolder:
    """The run folder of ``config`` (or the one named ``run_id``)."""
    return RunFolder(run_id or config.run_id())


def resolve_ingestion(sample: str, *, system: SystemSpec | str | None = None) -> RunFolder:
    """The ingestion folder of ``system`` on ``sample`` (see :meth:`~locomo_kit.systems.runner.ResolvedSystem.ingestion`)."""
    return resolve_system(system).ingestion(sample)


def _calls(calls: CallSettings | None) -> CallSettings:
    """``calls``, or the library's defaults (:data:`DEFAULT_CONCURRENCY` searches in flight)."""
    return calls if calls is not None else CallSettings(concurrency=DEFAULT_CONCURRENCY)


def run_ingest(sample: str = "conv-26", *, system: SystemSpec | ResolvedSystem | str | None = None, force: bool = False,
               for_run: RunFolder | None = None, calls: CallSettings | None = None,
               dataset_path: str | None = None) -> tuple[RunFolder, IngestSummary]:
    """Ingest ``sample`` into the system (resumable); returns the ingestion folder and a summary.
    Then (when every session went in) wait until the system finds what it was given
    (read-your-writes), recording the wait in the manifest's ``consistency``.

    A recorded ingestion is reused only while the system still holds it (see module doc); ``force``
    forgets it in the system and ingests again. ``for_run``: the run this ingestion is for; when it holds
    results from another system identity, nothing is ingested (:class:`~locomo_kit.worker.identity.WorkerMismatch`).
    ``calls``: progress bars and where console lines go.
    """

    conversations, sha = load(sample, dataset_path=dataset_path)
    resolved = resolve_system(system)
    ingestion = resolved.ingestion(sample)
    dataset = {"path": str(dataset_path or default_dataset_path()), "sha256": sha}
    summary = ingest_system(resolved, folder=ingestion, conversations=conversations, sample=sample, dataset=dataset,
                            force=force, for_run=for_run, calls=_calls(calls))
    return ingestion, summary


def llm_cache_path() -> Path:

    return outputs_dir() / "cache" / "llm.sqlite"


def answer_outcome(summary, *, total: int | None = None) -> Outcome:
    out = Outcome("answer", unit="question", total=total, done=summary.answered, skipped=summary.skipped)
    out.add_failures(f"{r.sample_id} q{r.question_index}: {r.error}" for r in summary.records if r.status == "failed")
    return out


def run_answer(sample: str = "conv-26", *, system: SystemSpec | ResolvedSystem | str | None = None, retrieval: Retrieval | None = None,
               answerer: Answerer | str | None = None, run_id: str | None = None, calls: CallSettings | None = None,
               dataset_path: str | None = None):
    """Answer every question of ``sample`` (resumable) into the configuration's run folder; returns the run
    folder and the answer summary (its ``outcome`` says what failed).

    ``system``: the memory system (:mod:`locomo_kit.systems`; default memworker, embedded); ``retrieval``: a
    context budget of 1,000 tokens by default, or top-k; ``answerer``: the offline extractive floor by default
    (``source="oracle"``: the gold evidence turns instead of any system); ``run_id``: a run folder of one's
    own (and then its own ingestion, unless the system names one); ``calls``
    (:class:`~locomo_kit.llm.execute.CallSettings`): concurrency, rate limits, batch, spending, progress.

    An LLM answerer's no-memory floor is measured here too (:mod:`locomo_kit.qa.floor`): every question asked
    with an empty context, through the same ``calls`` and a plan line of its own, once per answerer and question
    set; a failed floor call leaves the outcome not ok (its ``problems`` say why).
    """

    answerer, retrieval = as_answerer(answerer), retrieval or Retrieval()
    resolved = _for_source(system, answerer)
    source, strategy = answerer.source, retrieval.query_strategy
    if source == "memory":
        check_query_strategy(resolved.name, strategy)  # before anything is done
    conversations, sha = load(sample, dataset_path=dataset_path)
    config = _config(sample, system=resolved, retrieval=retrieval, answerer=answerer)
    spec = config.answer_model
    if spec == "extractive" and source == "full-context":
        raise ValueError("full-context answering needs an LLM answerer: pass --answer-model anthropic/<model> "
                         "or openai/<model> (with --answer-base-url)")
    llm = answerer.llm
    if llm is None and spec != "extractive":
        llm = make_llm(spec, base_url=answerer.base_url, cache_path=llm_cache_path(), timeout=answerer.timeout)
    answer = AnswerConfig(source=source, answer_model=spec, top_k=retrieval.top_k,
                          include_adversarial=answerer.include_adversarial, context_budget=retrieval.context_budget,
                          query_strategy=strategy, limit=answerer.limit)
    n = sum(len(questions(c, answerer.include_adversarial)[:answerer.limit]) for c in conversations)
    run = resolve_run(config, run_id=run_id)
    settings, calls = calls, _calls(calls)
    manifest = {"config": config.as_dict(), "config_id": config.key(), "config_label": config.label(),
                "parameters": {"sample": sample, "mode": resolved.spec.mode, "worker_url": resolved.spec.worker_url},
                "dataset": {"path": str(dataset_path or default_dataset_path()), "sha256": sha},
                "answer": {"model": spec, "source": source, "top_k": retrieval.top_k if source == "memory" else None,
                           "context_budget": retrieval.context_budget, "prompt_version": answer.prompt_version,
                           "config_key": answer.key(), "include_adversarial": answerer.include_adversarial,
                           "server": getattr(llm, "base_url", None), "batch": bool(calls.batch),
                           "query_strategy": strategy if source == "memory" else None, "limit": answerer.limit,
                           "retrieval": LABELS[strategy] if source == "memory" else "full conversation",
                           "started_at": utc_now()}}
    warnings: list[str] = []
    if source == "memory":
        manifest["answer"]["retrieval"] = retrieval_label(resolved.name, strategy)
        folder = resolved.ingestion(sample, resolved.spec.ingest_id or run_id)  # a run of one's own: its own
        summary, warnings = answer_with_system(resolved, run=run, folder=folder, conversations=conversations,
                                               manifest=manifest, answer=answer, llm=llm, calls=settings)
    elif source == "oracle":

        manifest["answer"].update(retrieval=LABEL, context_budget=None)
        manifest["parameters"].update(mode="none", worker_url=None)
        run.create().update_manifest(worker=ORACLE_IDENTITY, **manifest)
        summary = QARunner(answer, llm=llm).run(run, conversations, calls.concurrency, calls.progress, settings)
    else:
        run.create().update_manifest(**manifest)
        summary = QARunner(answer, llm=llm).run(run, conversations, calls.concurrency, calls.progress, settings)
    outcome = answer_outcome(summary, total=n)
    outcome.notes += warnings
    lost = answers_not_on_disk(run, conversations=conversations, answer=answer)
    if outcome.ok and lost:
        outcome.problems.append(f"{len(lost)} answer(s) reported done are not in {run.path / ANSWERS_FILE} "
                                f"(first: {lost[0][0]} q{lost[0][1]}); rerun the same command to answer them")
    usage = {"input_tokens": sum(r.input_tokens for r in summary.records if not r.cached),
             "output_tokens": sum(r.output_tokens for r in summary.records if not r.cached)}
    run.update_manifest(answer={"finished_at": utc_now(), "answered": summary.answered, "failed": summary.failed,
                                "skipped": summary.skipped, "usage_this_call": usage,
                                "outcome": outcome.as_record()})
    if llm is not None and summary.answered + summary.skipped:  # what this answerer scores with no memory at all
        floor = measure_llm_floor(run, llm=llm, answer=answer, conversations=conversations, calls=calls)
        if floor.problem:  # answered, but the run is not complete: its exit status and report say so
            outcome.problems.append(floor.problem)
            run.update_manifest(answer={"outcome": outcome.as_record()})
    summary.outcome = outcome
    return run, summary


def answers_not_on_disk(run: RunFolder, *, conversations: list[Conversation], answer: AnswerConfig) -> list[tuple[str, int]]:
    """The questions asked that the run folder holds no answer for (done or failed): what the answer stage reported
    is checked against what it wrote, as a system's acknowledgements are against what it holds."""
    asked = [(c.sample_id, q.index) for c in conversations
             for q in questions(c, answer.include_adversarial)[:answer.limit]]
    key = answer.key()
    recorded = {(r["sample_id"], int(r["question_index"])) for r in run.records(ANSWERS_FILE)
                if r.get("config_key") == key}
    return [q for q in asked if q not in recorded]


def _answer_key(run: RunFolder, config_key: str | None) -> str | None:
    """The answer configuration this run folder was made for (explicit, never "the latest")."""
    return config_key or run.manifest().get("answer", {}).get("config_key")


def run_sample(run: RunFolder, *, sample: str | None = None) -> str:
    """The sample(s) ``run`` answers: ``sample`` when given, else the one its configuration names (an imported
    run's answers span the conversations its file answers)."""
    sample = sample or (run.manifest().get("config") or {}).get("sample")
    sample = imported_sample(run, sample)
    if not sample:
        raise ValueError(f"{run.path} names no sample: pass sample=... (e.g. \"conv-26\")")
    return sample


def run_score(run: RunFolder, *, sample: str | None = None, gold: str = "both", config_key: str | None = None,
              dataset_path: str | None = None):
    """Score saved answers (official F1, Mem0 F1/BLEU-1, retrieval diagnostics) under the gold key(s)
    ``original``, ``audited`` or ``both``; returns the scores of the first key. ``sample``: default, the run's."""

    sample = run_sample(run, sample=sample)
    conversations, _ = load(sample, dataset_path=dataset_path)
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


def judge_outcome(judgements: list, *, protocol: str, total: int, skipped: int) -> Outcome:
    out = Outcome(f"judge ({protocol})", unit="question", total=total, skipped=skipped)
    for j in judgements:
        if getattr(j, "n_ok", 1):
            out.done += 1
        else:
            errors = [r.get("error") for r in getattr(j, "runs", []) if r.get("error")]
            out.add_failure(f"{j.sample_id} q{j.question_index}: {errors[0] if errors else 'no valid judge run'}")
    return out


def run_judge(run: RunFolder, *, judge: Judge | str | None = None, gold: str = "both", config_key: str | None = None,
              calls: CallSettings | None = None, dataset_path: str | None = None):
    """Judge saved answers under the gold key(s), and the judge calibration set, all through one call
    pool (or one Message Batch); returns the answer judgements made now (None when no judge model is
    given). ``judge.base_url`` is the judge's own server (never the answerer's).

    ``judge`` None (the default) judges nothing: judging costs money, so it runs only when a model is
    named (``anthropic/…``, ``openai/…``, or ``auto``: Anthropic when a key is set).
    """

    judge = as_judge(judge)
    llm = judge.llm
    if llm is None:
        spec = resolve_auto(judge.model, DEFAULT_JUDGE_MODEL) if judge.model else "extractive"
        if spec == "extractive":
            return None
        llm = make_llm(spec, base_url=judge.base_url, cache_path=llm_cache_path(), timeout=judge.timeout)
    grader = LLMJudge(llm, protocol=judge.protocol, runs=judge.runs)
    answers = [a for a in load_answers(run, _answer_key(run, config_key)) if a["category"] != 5]
    extra = (audited_answers(answers, gold, dataset_path)
             + calibration_answers(answers, judge.calibration_size, dataset_path))
    made = judge_answers(run, grader, answers + extra, calls.progress if calls else None, settings=calls)
    keys = {a["config_key"] for a in answers}
    judgements = [j for j in made if j.answer_config_key in keys]
    judgeable = [a for a in answers if a.get("gold")]
    outcome = judge_outcome(judgements, protocol=judge.protocol, total=len(judgeable),
                            skipped=len(judgeable) - len(judgements))
    usage = {"input_tokens": sum(r["input_tokens"] for j in made for r in j.runs if not r["cached"]),
             "output_tokens": sum(r["output_tokens"] for j in made for r in j.runs if not r["cached"])}
    run.update_manifest(judge={judge.protocol: {
        "model": grader.model, "runs": grader.runs, "prompt_version": grader.prompt_version,
        "temperature_requested": grader.temperature, "judged_at": utc_now(), "gold": gold,
        "calibration_size": judge.calibration_size, "server": getattr(llm, "base_url", None),
        "batch": bool(calls and calls.batch), "usage_this_call": usage, "outcome": outcome.as_record()}})
    return judgements


def run_report(run: RunFolder, *, sample: str | None = None, dataset_path: str | None = None):
    """Write report.md and figures from the run's records (``sample``: default, the run's)."""

    conversations, _ = load(run_sample(run, sample=sample), dataset_path=dataset_path)
    return build_report(run, conversations)


def _ingest_stage(sample: str, *, system: ResolvedSystem, run: RunFolder, calls: CallSettings,
                  dataset_path: str | None, outcomes: list[Outcome]) -> None:
    """run_all's ingest stage: ingest, log, record its outcome; raise :class:`IngestFailed` when nothing went in."""

    log = calls.log
    conversations, _ = load(sample, dataset_path=dataset_path)
    for conv in conversations:
        if note := partial_note(conv):
            log(note)
    ingestion, ingest_summary = run_ingest(sample, system=system, for_run=run, calls=calls,
                                           dataset_path=dataset_path)
    for note in getattr(ingest_summary, "notes", []):
        log(note)
    for line in ingest_summary.lines():
        log(line)
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


def run_all(sample: str = "conv-26", *, system: SystemSpec | str | None = None, retrieval: Retrieval | None = None,
            answerer: Answerer | str | None = None, judge: Judge | str | None = None, run_id: str | None = None,
            calls: CallSettings | None = None, dataset_path: str | None = None) -> PipelineResult:
    """The whole pipeline: ingest → answer → score → judge (when a judge model is given) → report.
    ``answerer.base_url`` is the answerer's server, ``judge.base_url`` the judge's.

    Each stage logs its one-line outcome (to ``calls.log``, default print). Ingestion that stopped or stored
    nothing raises :class:`IngestFailed`, answering that produced nothing :class:`~locomo_kit.outcome.StageFailed`:
    no report is written. Partial results are reported with a banner at the top of the report, and
    ``result.ok`` is False. ``system``: the memory system (default memworker); ``answerer.source="oracle"``
    answers from each question's gold evidence turns, with no system (nothing ingested).
    """

    answerer, judge, retrieval = as_answerer(answerer), as_judge(judge), retrieval or Retrieval()
    calls = _calls(calls)
    log = calls.log
    for spec, url, timeout in ((answerer.model if answerer.llm is None else None, answerer.base_url, answerer.timeout),
                               (judge.model if judge.llm is None else None, judge.base_url, judge.timeout)):
        # a missing key or SDK, a refused key or an unknown model fails now, before any work is done
        if spec and spec not in ("extractive", "auto"):
            llm = make_llm(spec, base_url=url, timeout=timeout)
            if calls.preflight:
                preflight(llm)
    outcomes: list[Outcome] = []
    resolved = _for_source(system, answerer)
    run = resolve_run(_config(sample, system=resolved, retrieval=retrieval, answerer=answerer), run_id=run_id)
    if answerer.source == "memory":
        check_query_strategy(resolved.name, retrieval.query_strategy)  # refused before anything is ingested
        if run_id and not resolved.spec.ingest_id:  # a run of one's own holds its own ingestion
            resolved = replace(resolved, spec=replace(resolved.spec, ingest_id=run_id))
        _ingest_stage(sample, system=resolved, run=run, calls=calls, dataset_path=dataset_path, outcomes=outcomes)
    elif answerer.source == "oracle":
        log("oracle source: each question is answered from its gold evidence turns only; nothing is ingested")
    _, answers = run_answer(sample, system=resolved, retrieval=retrieval, answerer=answerer, run_id=run_id,
                            calls=calls, dataset_path=dataset_path)
    outcomes.append(answers.outcome)
    for note in answers.outcome.notes:
        log(note)
    log(answers.outcome.line())
    answers.outcome.raise_if_empty()
    scores = run_score(run, sample=sample, dataset_path=dataset_path)
    log(f"score ok: {len(scores)} answers scored")
    if judge.active:
        run_judge(run, judge=judge, calls=calls, dataset_path=dataset_path)
        judged = Outcome(**{k: v for k, v in run.manifest()["judge"][judge.protocol]["outcome"].items()
                            if k not in ("ok", "not_attempted")})
        outcomes.append(judged)
        log(judged.line())
    report, figures, summary = run_report(run, sample=sample, dataset_path=dataset_path)
    if judge.active:

        for line in console_lines(summary):
            log(line)
    return PipelineResult(run=run, report=report, figures=figures, summary=summary, outcomes=outcomes)
