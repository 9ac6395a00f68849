"""A memory system's conversations in several processes at once, where each conversation has a store of its own
(:attr:`~locomo_kit.systems.base.MemorySystem.conversations_apart`): the ingest stage, and the answer stage with
the extractive answerer, split into ``calls.jobs`` groups of conversations (balanced by their sessions and
questions), each group in a process of its own (started with ``spawn``) that opens the system on the same
ingestion folder and appends to the same record files, one whole line a record.

What the processes return is merged into one summary, as one process would have made it: the same records,
the lines of different conversations interleaved in another order (every reader orders them by conversation
and question). The caller closes its own instance of the system while they run (a store one process holds
may be locked to the others) and opens it again after.

Ctrl-C stops every process as it stops one run (SIGINT: the records already written stay, rerunning resumes);
a process that fails makes the stage raise its error once the others have ended.
"""

from __future__ import annotations

import multiprocessing
import os
import queue as queue_module
from typing import Any, Callable, Sequence

from locomo_kit.dataset import Conversation
from locomo_kit.ingestion.conversations import ingest_conversations
from locomo_kit.ingestion.summary import IngestSummary
from locomo_kit.pipeline.parallel import stop
from locomo_kit.qa.answering import AnswerConfig, AnswerSummary, QARunner
from locomo_kit.runs import RunFolder
from locomo_kit.systems import registry
from locomo_kit.systems.runner import ResolvedSystem


def splits(system: ResolvedSystem, *, conversations: Sequence[Conversation], jobs: int | None) -> bool:
    """Whether to split: ``jobs`` above 1, two conversations or more, and a system whose conversations are apart."""
    return bool(jobs and jobs > 1 and len(conversations) > 1
                and getattr(registry.resolve(system.name), "conversations_apart", False))


def conversation_groups(conversations: Sequence[Conversation], *, jobs: int) -> list[list[Conversation]]:
    """``conversations`` in at most ``jobs`` groups of about equal work (sessions plus questions, largest first to
    the lightest group), each group in the dataset's order."""
    groups: list[list[int]] = [[] for _ in range(min(jobs, len(conversations)))]
    load = [0] * len(groups)
    work = [len(c.sessions) * 10 + len(c.questions) for c in conversations]
    for i in sorted(range(len(conversations)), key=lambda i: -work[i]):
        lightest = load.index(min(load))
        groups[lightest].append(i)
        load[lightest] += work[i]
    return [[conversations[i] for i in sorted(g)] for g in groups if g]


def ingest_group(group: list[Conversation], *, system: ResolvedSystem, folder: RunFolder,
                 force: bool = False) -> IngestSummary:
    """One process's share of the ingest stage: its conversations into the system opened on ``folder``."""
    with system.open(folder, ingest=True) as opened:
        opened.prepare_ingest()
        return ingest_conversations(opened, group, folder, force=force, progress=False)


def answer_group(group: list[Conversation], *, system: ResolvedSystem, folder: RunFolder, run: RunFolder,
                 answer: AnswerConfig, concurrency: int = 4) -> AnswerSummary:
    """One process's share of the answer stage (the extractive answerer): its conversations' questions."""
    with system.open(folder) as opened:
        return QARunner(answer, llm=None, system=opened).run(run, group, concurrency, False, None)


def merge_ingest(parts: list[IngestSummary]) -> IngestSummary:
    """The processes' summaries as one (results in the order of their groups)."""
    return IngestSummary([r for p in parts for r in p.results], skipped=sum(p.skipped for p in parts),
                         aborted=next((p.aborted for p in parts if p.aborted), None),
                         not_attempted=sum(p.not_attempted for p in parts), noun=parts[0].noun,
                         notes=[n for p in parts for n in p.notes])


def merge_answers(parts: list[AnswerSummary]) -> AnswerSummary:
    return AnswerSummary(answered=sum(p.answered for p in parts), failed=sum(p.failed for p in parts),
                         skipped=sum(p.skipped for p in parts), records=[r for p in parts for r in p.records])


def _child(index: int, call: Callable[..., Any], group: list[Conversation], kwargs: dict[str, Any],
           results: Any) -> None:
    os.setpgrp()  # Ctrl-C reaches the parent alone, which stops each process once (parallel.stop)
    try:
        results.put((index, "ok", call(group, **kwargs)))
    except KeyboardInterrupt:
        results.put((index, "interrupted", None))
    except BaseException as exc:  # sent back whole where it pickles, for the stage to raise as its own
        try:
            results.put((index, "error", exc))
        except Exception:
            results.put((index, "error", RuntimeError(f"{type(exc).__name__}: {exc}")))
    results.close()
    results.join_thread()


def in_processes(call: Callable[..., Any], *, groups: list[list[Conversation]], kwargs: dict[str, Any]) -> list[Any]:
    """``call(group, **kwargs)`` for each group, each in a process of its own; what each returned, in the groups'
    order. The first error (by group) is raised once every process has ended."""
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    # daemonic: a process the parent could not stop (Ctrl-C while it was being started) ends with the parent
    procs = [ctx.Process(target=_child, args=(i, call, g, kwargs, results), daemon=True,
                         name=f"locomo-kit {g[0].sample_id}…") for i, g in enumerate(groups)]
    got: dict[int, tuple[str, Any]] = {}
    try:
        for p in procs:
            p.start()
        while len(got) < len(procs):
            try:
                index, kind, value = results.get(timeout=0.5)
                got[index] = (kind, value)
            except queue_module.Empty:
                for i, p in enumerate(procs):
                    if i not in got and not p.is_alive():
                        try:  # its result may be on its way still
                            index, kind, value = results.get(timeout=2)
                            got[index] = (kind, value)
                        except queue_module.Empty:
                            ids = ", ".join(c.sample_id for c in groups[i])
                            got[i] = ("error", RuntimeError(
                                f"the process for {ids} ended with exit code {p.exitcode} before reporting "
                                "(killed, or out of memory?)"))
        for p in procs:
            p.join()
    except KeyboardInterrupt:
        stop([p for p in procs if p.pid is not None])
        raise
    if any(kind == "interrupted" for kind, _ in got.values()):
        raise KeyboardInterrupt
    for i in range(len(groups)):
        kind, value = got[i]
        if kind == "error":
            raise value
    return [got[i][1] for i in range(len(groups))]
