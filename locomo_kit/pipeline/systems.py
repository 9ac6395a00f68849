"""The ingest and answer stages for a non-Worker memory system, as :mod:`locomo_kit.pipeline.stages` calls them
(the same records, manifest entries and checks as a Worker's run; see :mod:`locomo_kit.systems.runner`)."""

from __future__ import annotations

from typing import Any

from locomo_kit.dataset import Conversation
from locomo_kit.ingestion.summary import IngestSummary, NotIngested, ingest_outcome
from locomo_kit.ingestion.system import check_held, ingest_into_system
from locomo_kit.paths import default_dataset_path
from locomo_kit.qa.answering import QARunner
from locomo_kit.runs import RunFolder, utc_now
from locomo_kit.runs.records import load_answers
from locomo_kit.systems import runner
from locomo_kit.worker.identity import check_run_worker, ingestion_generations, ingestion_state


def ingest_system(name: str, conversations: list[Conversation], sample: str, sha: str, ingest_id: str | None,
                  force: bool, progress: bool | None, dataset_path: str | None, for_run: RunFolder | None,
                  options: dict[str, Any] | None) -> tuple[RunFolder, IngestSummary]:
    """Ingest ``conversations`` into ``name`` (resumable); returns the ingestion folder and a summary."""

    folder = runner.ingestion(sample, name, ingest_id, options)
    with runner.open_system(name, folder, options) as system:
        ident = runner.identity_record(system)
        if for_run is not None:
            check_run_worker(for_run, ident, has_results=bool(load_answers(for_run)))
        notes = [] if force else check_held(system, folder, conversations)
        folder.update_manifest(worker=ident, system=ident,
                               parameters={"sample": sample, "mode": system.unit, "system": name, "worker_url": None},
                               dataset={"path": str(dataset_path or default_dataset_path()), "sha256": sha},
                               ingest={"started_at": utc_now(), "worker": ident})
        summary = ingest_into_system(system, conversations, folder, force=force, progress=progress)
        summary.notes = notes
        outcome = ingest_outcome(summary, sum(len(c.sessions) for c in conversations))
        folder.update_manifest(ingest={"finished_at": utc_now(), "ingested": len(summary.ingested),
                                       "failed": len(summary.failed), "skipped": summary.skipped,
                                       "not_attempted": summary.not_attempted, "aborted": summary.aborted,
                                       "succeeded": summary.succeeded, "outcome": outcome.as_record()},
                               consistency={"waited": False, "why": f"{name} stores synchronously: a memory is "
                                            "searchable once its session's ingest call returns"})
    return folder, summary


def check_ingested(system, folder: RunFolder, conversations: list[Conversation]) -> list[str]:
    """Raise :class:`~locomo_kit.ingestion.summary.NotIngested` for a conversation the system holds nothing of."""

    warnings = []
    for conv in conversations:
        done, total = ingestion_state(folder, conv, system.unit)
        if system.held(conv.sample_id) == 0:
            raise NotIngested(f"{conv.sample_id} was never ingested into {system.name} (its store {folder.path} holds "
                              f"nothing of it): run `locomo-kit ingest --sample {conv.sample_id} --system "
                              f"{system.name}` first (or `locomo-kit run`, which ingests)")
        if done < total:
            warnings.append(f"{conv.sample_id}: only {done} of {total} sessions were ingested")
    return warnings


def answer_with_system(name: str, options: dict[str, Any] | None, run: RunFolder, folder: RunFolder,
                       conversations: list[Conversation], manifest: dict, answer, llm, concurrency: int,
                       progress: bool | None, calls) -> tuple[Any, list[str]]:
    manifest["ingestion"] = {"id": folder.run_id, "path": str(folder.path)}
    with runner.open_system(name, folder, options) as system:
        ident = runner.identity_record(system)
        generations = ingestion_generations(folder, conversations)
        check_run_worker(run, ident, bool(load_answers(run)), generations)
        warnings = check_ingested(system, folder, conversations)
        manifest["answer"].update(worker=ident, system=ident, ingestion_generations=generations)
        manifest["parameters"] = {**manifest["parameters"], "mode": system.unit, "system": name, "worker_url": None}
        manifest["config_label"] = f"{system.identity().label}, {manifest['config_label']}"
        manifest.update({k: v for k, v in folder.manifest().items() if k == "consistency" and v})
        run.update_manifest(worker=ident, system=ident, **manifest)
        summary = QARunner(answer, llm=llm, system=system).run(run, conversations, concurrency, progress, calls)
    return summary, warnings
