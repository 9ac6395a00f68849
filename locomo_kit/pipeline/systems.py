"""The ingest and answer stages over a memory system, as :mod:`locomo_kit.pipeline.stages` calls them: one
path for every system, the claude-mem Workers included (what only a Worker does is one of its declared
capabilities, see :mod:`locomo_kit.systems.workers`)."""

from __future__ import annotations

from typing import Any

from locomo_kit.dataset import Conversation
from locomo_kit.ingestion.conversations import ingest_conversations
from locomo_kit.ingestion.held import check_answerable, check_held
from locomo_kit.ingestion.summary import IngestSummary, ingest_outcome
from locomo_kit.ingestion.writes import check_writes, own_writes
from locomo_kit.llm.execute import CallSettings
from locomo_kit.pipeline.conversation_jobs import (
    answer_group,
    conversation_groups,
    in_processes,
    ingest_group,
    merge_answers,
    merge_ingest,
    splits,
)
from locomo_kit.qa.answering import QARunner
from locomo_kit.runs import RunFolder, utc_now
from locomo_kit.runs.records import INGEST_FILE, load_answers
from locomo_kit.scoring.compression import measure, session_records
from locomo_kit.systems.base import MemorySystem, MemorySystemError
from locomo_kit.systems.runner import ResolvedSystem
from locomo_kit.worker.consistency import describe
from locomo_kit.worker.identity import check_run_worker, ingestion_generations


def identity_entries(system: MemorySystem) -> dict[str, Any]:
    """The manifest's identity entries: ``worker`` (every run has it) and, but for a Worker, ``system``."""
    ident = system.identity_record()
    return {"worker": ident} if system.worker_records else {"worker": ident, "system": ident}


def ingest_system(system: ResolvedSystem, *, folder: RunFolder, conversations: list[Conversation], sample: str,
                  dataset: dict[str, Any], force: bool = False, for_run: RunFolder | None = None,
                  calls: CallSettings | None = None) -> IngestSummary:
    """Ingest ``conversations`` into ``system`` (resumable) and record it in ``folder``'s manifest: the check that
    the system still holds what was recorded, the sessions, what a compressor kept, and read-your-writes
    (waiting at most the spec's ``consistency_timeout``). ``dataset``: the file's path and sha256.

    ``for_run``: the run this ingestion is for; when it holds results from another system identity, nothing
    is ingested (:class:`~locomo_kit.worker.identity.WorkerMismatch`)."""

    calls = calls or CallSettings()
    with system.open(folder, ingest=True) as opened:
        opened.prepare_ingest()
        entries = identity_entries(opened)
        if for_run is not None:
            check_run_worker(for_run, entries["worker"], has_results=bool(load_answers(for_run)))
        notes = [] if force else check_held(opened, folder, conversations)
        folder.update_manifest(**entries, parameters={"sample": sample, **opened.run_parameters()}, dataset=dataset,
                               ingest={"started_at": utc_now(), "worker": entries["worker"]})
        if splits(system, conversations=conversations, jobs=calls.jobs):
            groups = conversation_groups(conversations, jobs=calls.jobs)
            calls.log(f"ingesting {len(conversations)} conversations in {len(groups)} processes")
            opened.close()  # a store one process holds may be locked to the others
            try:
                summary = merge_ingest(in_processes(ingest_group, groups=groups, kwargs={
                    "system": system, "folder": folder, "force": force}))
            finally:
                opened.open()
        else:
            summary = ingest_conversations(opened, conversations, folder, force=force, progress=calls.progress)
        summary.notes = notes + summary.notes
        if opened.compresses and not summary.aborted:  # what the compressor kept (scoring.compression)
            try:
                summary.compression = measure(opened, conversations,
                                              session_records(folder.records(INGEST_FILE), opened.unit))
                folder.update_manifest(compression=summary.compression)
            except MemorySystemError as exc:  # the ingestion's outcome stands; only the measurement is missing
                summary.notes.append(f"compression fidelity not measured: {exc}")
        if not summary.aborted:  # what it holds against what it acknowledged, fresh or resumed
            summary.held_check = check_writes(opened, folder, conversations, label=system.name)
            summary.own_writes = own_writes(opened, folder, conversations, label=system.name)
        folder.update_manifest(held_check=summary.held_check, read_your_writes=summary.own_writes)
        outcome = ingest_outcome(summary, sum(len(c.sessions) for c in conversations))
        folder.update_manifest(ingest={"finished_at": utc_now(), "ingested": len(summary.ingested),
                                       "failed": len(summary.failed), "skipped": summary.skipped,
                                       "not_attempted": summary.not_attempted, "aborted": summary.aborted,
                                       "succeeded": summary.succeeded, "outcome": outcome.as_record()})
        if summary.succeeded or not opened.read_your_writes:
            consistency = opened.wait_until_consistent([c.sample_id for c in conversations],
                                                       system.spec.consistency_timeout, calls.progress)
            folder.update_manifest(consistency=consistency)
            if consistency.get("waited") is not False:
                calls.log(describe(consistency))
    return summary


def answer_with_system(system: ResolvedSystem, *, run: RunFolder, folder: RunFolder,
                       conversations: list[Conversation], manifest: dict, answer, llm,
                       calls: CallSettings | None = None) -> tuple[Any, list[str]]:
    """Answer from what ``system`` holds of ``folder``'s ingestion, after checking it holds it and that ``run``'s
    earlier answers came from the same system identity and generation (``calls`` None: 4 searches in flight)."""
    manifest["ingestion"] = {"id": folder.run_id, "path": str(folder.path)}
    concurrency, progress = (calls.concurrency, calls.progress) if calls else (4, None)
    with system.open(folder) as opened:
        entries = identity_entries(opened)
        generations = ingestion_generations(folder, conversations)
        check_run_worker(run, entries["worker"], bool(load_answers(run)), generations)
        warnings = check_answerable(opened, folder, conversations)
        manifest["answer"].update(**entries, ingestion_generations=generations)
        manifest["parameters"] = {**manifest["parameters"], **opened.run_parameters()}
        manifest["config_label"] = f"{opened.identity().label}, {manifest['config_label']}"
        manifest.update({k: v for k, v in folder.manifest().items() if k == "consistency" and v})
        run.update_manifest(**entries, **manifest)
        if llm is None and splits(system, conversations=conversations, jobs=calls.jobs if calls else None):
            groups = conversation_groups(conversations, jobs=calls.jobs)
            calls.log(f"answering {len(conversations)} conversations' questions in {len(groups)} processes")
            opened.close()  # a store one process holds may be locked to the others
            summary = merge_answers(in_processes(answer_group, groups=groups, kwargs={
                "system": system, "folder": folder, "run": run, "answer": answer, "concurrency": concurrency}))
        else:
            summary = QARunner(answer, llm=llm, system=opened).run(run, conversations, concurrency, progress, calls)
    return summary, warnings
