"""The stages as one call each, shared by the CLI and the notebooks: worker → ingest → answer → score."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from locomo_kit.data_fetch import sha256_file
from locomo_kit.dataset import Conversation, load_dataset, select
from locomo_kit.embedded import EmbeddedWorker
from locomo_kit.ingest import IngestSummary, check_health, ingest, worker_capabilities
from locomo_kit.paths import default_dataset_path
from locomo_kit.runs import RunFolder, default_run_id, utc_now
from locomo_kit.worker_client import WorkerClient

EMBEDDED = "embedded"


class IngestFailed(RuntimeError):
    """Ingestion stopped (a stuck queue, an unreachable Worker) or stored nothing: no result to report."""


def load(sample: str, dataset_path: str | None = None) -> tuple[list[Conversation], str]:
    """The selected conversations and the dataset's sha256."""
    path = dataset_path or default_dataset_path()
    return select(load_dataset(path), sample), sha256_file(path)


@contextmanager
def connect(worker_url: str, run: RunFolder, ready_timeout: float = 120.0) -> Iterator[WorkerClient]:
    """A ready client for ``worker_url`` (``"embedded"`` starts memworker on the run's database).

    For an external Worker, nothing is written to the run folder until it has answered.
    """
    if worker_url == EMBEDDED:
        with EmbeddedWorker(run.create().path / "memworker.db") as url, WorkerClient(url, token="") as client:
            health = client.wait_until_ready(timeout=ready_timeout)
            run.update_manifest(worker={"url": EMBEDDED, "name": health.get("name", "memworker"),
                                        "version": health.get("version"), "settings": health.get("settings")})
            yield client
        return
    with WorkerClient(worker_url) as client:
        client.health()  # raises WorkerUnavailable / WorkerAuthError with a clear message
        health = client.wait_until_ready(timeout=ready_timeout)
        run.update_manifest(worker={"url": client.base_url, "name": health.get("name", "claude-mem"),
                                    "version": health.get("version"), "settings": health.get("settings"),
                                    **worker_capabilities(health)})
        yield client


def resolve_run(sample: str, mode: str, worker_url: str, run_id: str | None) -> RunFolder:
    return RunFolder(run_id or default_run_id(sample, mode, worker_url))


def run_ingest(sample: str = "conv-26", worker_url: str = EMBEDDED, mode: str = "transcript",
               run_id: str | None = None, force: bool = False, session_timeout: float = 180.0,
               poll_interval: float = 3.0, dataset_path: str | None = None,
               progress: bool | None = None, consistency_timeout: float = 1200.0,
               log=print) -> tuple[RunFolder, IngestSummary]:
    """Ingest, then (when every session went in) wait until the Worker finds what it was given
    (read-your-writes), recording the wait in the manifest's ``consistency``."""
    from locomo_kit.adapter import project_name
    from locomo_kit.consistency import describe, wait_until_consistent

    conversations, sha = load(sample, dataset_path)
    run = resolve_run(sample, mode, worker_url, run_id)
    with connect(worker_url, run) as client:
        check_health(client, mode)
        run.update_manifest(parameters={"sample": sample, "mode": mode, "worker_url": worker_url},
                            dataset={"path": str(dataset_path or default_dataset_path()), "sha256": sha},
                            ingest={"started_at": utc_now()})
        summary = ingest(client, conversations, run, mode=mode, session_timeout=session_timeout,
                         poll_interval=poll_interval, force=force, progress=progress)
        run.update_manifest(ingest={"finished_at": utc_now(), "ingested": len(summary.ingested),
                                    "failed": len(summary.failed), "skipped": summary.skipped,
                                    "not_attempted": summary.not_attempted, "aborted": summary.aborted,
                                    "succeeded": summary.succeeded})
        if summary.succeeded:
            consistency = wait_until_consistent(client, [project_name(c.sample_id) for c in conversations],
                                                timeout=consistency_timeout, progress=progress)
            run.update_manifest(consistency=consistency)
            log(describe(consistency))
    return run, summary


def llm_cache_path():
    from locomo_kit.paths import outputs_dir

    return outputs_dir() / "cache" / "llm.sqlite"


def run_answer(sample: str = "conv-26", worker_url: str = EMBEDDED, mode: str = "transcript",
               run_id: str | None = None, answer_model: str = "auto", top_k: int = 8, source: str = "memory",
               include_adversarial: bool = False, concurrency: int = 4, llm_base_url: str | None = None,
               dataset_path: str | None = None, progress: bool | None = None, llm=None,
               calls=None, timeout: float | None = None, context_budget: int | None = None,
               query_strategy: str = "question"):
    """Answer every question of ``sample`` (resumable). ``llm`` overrides the model (tests); ``calls``
    (:class:`~locomo_kit.llm.execute.CallSettings`) sets concurrency, rate limits, batch, spending;
    ``context_budget``: tokens of memories per question (``top_k`` then only caps their number);
    ``query_strategy``: how memories are retrieved (see :mod:`locomo_kit.qa.retrieval`)."""
    from locomo_kit.llm import DEFAULT_ANSWER_MODEL, make_llm, resolve_auto
    from locomo_kit.qa.answering import AnswerConfig, QARunner

    conversations, sha = load(sample, dataset_path)
    spec = resolve_auto(answer_model, DEFAULT_ANSWER_MODEL) if llm is None else f"{llm.provider}/{llm.model}"
    if llm is None and spec != "extractive":
        llm = make_llm(spec, base_url=llm_base_url, cache_path=llm_cache_path(), timeout=timeout)
    from locomo_kit.qa.retrieval import LABELS

    config = AnswerConfig(source=source, answer_model=spec, top_k=top_k, include_adversarial=include_adversarial,
                          context_budget=context_budget, query_strategy=query_strategy)
    run = resolve_run(sample, mode, worker_url, run_id)
    manifest = {"parameters": {"sample": sample, "mode": mode, "worker_url": worker_url},
                "dataset": {"path": str(dataset_path or default_dataset_path()), "sha256": sha},
                "answer": {"model": spec, "source": source, "top_k": top_k, "context_budget": context_budget,
                           "prompt_version": config.prompt_version,
                           "config_key": config.key(), "include_adversarial": include_adversarial,
                           "server": getattr(llm, "base_url", None), "batch": bool(calls and calls.batch),
                           "query_strategy": query_strategy if source == "memory" else None,
                           "retrieval": LABELS[query_strategy] if source == "memory" else "full conversation",
                           "started_at": utc_now()}}
    if source == "memory":
        with connect(worker_url, run) as client:
            run.update_manifest(**manifest)
            summary = QARunner(config, client=client, llm=llm).run(run, conversations, concurrency, progress, calls)
    else:
        run.create().update_manifest(**manifest)
        summary = QARunner(config, llm=llm).run(run, conversations, concurrency, progress, calls)
    usage = {"input_tokens": sum(r.input_tokens for r in summary.records if not r.cached),
             "output_tokens": sum(r.output_tokens for r in summary.records if not r.cached)}
    run.update_manifest(answer={"finished_at": utc_now(), "answered": summary.answered, "failed": summary.failed,
                                "skipped": summary.skipped, "usage_this_call": usage})
    return run, summary


def run_score(run: RunFolder, sample: str, dataset_path: str | None = None, config_key: str | None = None,
              gold: str = "both"):
    """Score saved answers (official F1, Mem0 F1/BLEU-1, retrieval diagnostics) under the gold key(s)
    ``original``, ``audited`` or ``both``; returns the scores of the first key."""
    from locomo_kit.qa.answering import load_answers
    from locomo_kit.scoring.gold import audit_for, keys_for
    from locomo_kit.scoring.score_run import score_answers

    conversations, _ = load(sample, dataset_path)
    answers = load_answers(run, config_key)
    if not answers:
        raise RuntimeError(f"No answers in {run.path}: run `locomo-kit answer --sample {sample}` first")
    keys = keys_for(gold)
    audit = audit_for(conversations, dataset_path) if "audited" in keys else None
    scores = score_answers(run, answers, conversations, keys, audit)
    run.update_manifest(scoring={"scored_at": utc_now(), "questions": len(answers), "gold_keys": list(keys),
                                 "config_key": answers[0]["config_key"]})
    return [s for s in scores if s.gold_key == keys[0]]


def run_judge(run: RunFolder, protocol: str = "playbook", judge_model: str = "auto", runs: int | None = None,
              llm_base_url: str | None = None, config_key: str | None = None, llm=None, progress: bool | None = None,
              gold: str = "both", calibration_size: int = 100, dataset_path: str | None = None,
              calls=None, timeout: float | None = None):
    """Judge saved answers under the gold key(s), and the judge calibration set, all through one call
    pool (or one Message Batch); returns the answer judgements made now (None when no judge model is
    available). ``llm_base_url`` is the judge's own server (never the answerer's)."""
    from locomo_kit.llm import DEFAULT_JUDGE_MODEL, make_llm, resolve_auto
    from locomo_kit.qa.answering import load_answers
    from locomo_kit.scoring.gold_judging import audited_answers, calibration_answers
    from locomo_kit.scoring.judge import Judge, judge_answers

    if llm is None:
        spec = resolve_auto(judge_model, DEFAULT_JUDGE_MODEL)
        if spec == "extractive":
            return None
        llm = make_llm(spec, base_url=llm_base_url, cache_path=llm_cache_path(), timeout=timeout)
    judge = Judge(llm, protocol=protocol, runs=runs)
    answers = [a for a in load_answers(run, config_key) if a["category"] != 5]
    extra = audited_answers(answers, gold, dataset_path) + calibration_answers(answers, calibration_size, dataset_path)
    made = judge_answers(run, judge, answers + extra, progress, settings=calls)
    keys = {a["config_key"] for a in answers}
    judgements = [j for j in made if j.answer_config_key in keys]
    usage = {"input_tokens": sum(r["input_tokens"] for j in made for r in j.runs if not r["cached"]),
             "output_tokens": sum(r["output_tokens"] for j in made for r in j.runs if not r["cached"])}
    run.update_manifest(judge={protocol: {"model": judge.model, "runs": judge.runs, "prompt_version": judge.prompt_version,
                                          "temperature_requested": judge.temperature, "judged_at": utc_now(),
                                          "gold": gold, "calibration_size": calibration_size,
                                          "server": getattr(llm, "base_url", None),
                                          "batch": bool(calls and calls.batch), "usage_this_call": usage}})
    return judgements


def run_report(run: RunFolder, sample: str, dataset_path: str | None = None):
    """Write report.md and figures from the run's records."""
    from locomo_kit.report.markdown import build_report

    conversations, _ = load(sample, dataset_path)
    return build_report(run, conversations)


def run_all(sample: str = "conv-26", worker_url: str = EMBEDDED, mode: str = "transcript", run_id: str | None = None,
            answer_model: str = "extractive", judge_model: str | None = None, judge_protocol: str = "playbook",
            judge_runs: int | None = None, top_k: int = 8, llm_base_url: str | None = None,
            dataset_path: str | None = None, progress: bool | None = None, log=print, calibration_size: int = 100,
            judge_base_url: str | None = None, calls=None, timeout: float | None = None,
            context_budget: int | None = None, query_strategy: str = "question", consistency_timeout: float = 1200.0,
            session_timeout: float = 180.0):
    """The whole pipeline: ingest → answer → score → judge (when a judge model is given) → report.
    ``llm_base_url`` is the answerer's server, ``judge_base_url`` the judge's. Ingestion that stopped or
    stored nothing raises :class:`IngestFailed` before anything is answered or reported."""
    from locomo_kit.llm import make_llm
    from locomo_kit.llm.execute import preflight

    for spec, url in ((answer_model, llm_base_url), (judge_model, judge_base_url)):
        # a missing key or SDK, a refused key or an unknown model fails now, before any work is done
        if spec and spec not in ("extractive", "auto"):
            llm = make_llm(spec, base_url=url, timeout=timeout)
            if calls is None or calls.preflight:
                preflight(llm)
    run, ingest_summary = run_ingest(sample, worker_url, mode, run_id, dataset_path=dataset_path, progress=progress,
                                     consistency_timeout=consistency_timeout, log=log, session_timeout=session_timeout)
    for line in ingest_summary.lines():
        log(line)
    if ingest_summary.aborted or not (ingest_summary.ingested or ingest_summary.skipped):
        raise IngestFailed(f"ingestion failed, nothing answered or reported: "
                           f"{ingest_summary.aborted or 'no session was ingested'} (run folder {run.path})")
    _, answers = run_answer(sample, worker_url, mode, run.run_id, answer_model, top_k, llm_base_url=llm_base_url,
                            dataset_path=dataset_path, progress=progress, calls=calls, timeout=timeout,
                            concurrency=calls.concurrency if calls else 4, context_budget=context_budget,
                            query_strategy=query_strategy)
    log(answers.line())
    scores = run_score(run, sample, dataset_path)
    log(f"scored {len(scores)} answers")
    if judge_model:
        made = run_judge(run, judge_protocol, judge_model, judge_runs, judge_base_url, progress=progress,
                         calibration_size=calibration_size, dataset_path=dataset_path, calls=calls, timeout=timeout)
        log(f"judged {len(made or [])} answers ({judge_protocol})")
    report, figures, summary = run_report(run, sample, dataset_path)
    return run, report, figures, summary
