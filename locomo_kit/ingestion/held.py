"""Whether a memory system still holds what an ingestion recorded: checked before the ingestion is reused
(:func:`check_held`) and before its questions are answered (:func:`check_answerable`), the same way for
every system.

A system that holds none of a recorded conversation (a Worker restarted on an empty database) is ingested
again; one that formed its memories differently (another version, setting or instance), or holds fewer
than were recorded, stops with what to do (:class:`~locomo_kit.worker.identity.WorkerMismatch`).
"""

from __future__ import annotations

from locomo_kit.dataset import Conversation
from locomo_kit.ingestion.conversations import reset_record
from locomo_kit.ingestion.summary import NotIngested
from locomo_kit.ingestion.writes import acknowledged_of
from locomo_kit.runs import RunFolder
from locomo_kit.runs.records import done_sessions, empty_sessions, since_reset
from locomo_kit.systems.base import MemorySystem
from locomo_kit.worker.identity import WorkerMismatch


def _who(system: MemorySystem) -> str:
    return f"the Worker at {system.address()}" if system.worker_records else system.name


def _noun(system: MemorySystem) -> str:
    return "observations" if system.worker_records else "memories"


def ingest_command(system: MemorySystem, sample: str) -> str:
    """The command that ingests ``sample`` into this system again."""
    return f"locomo-kit ingest --sample {sample}" + ("" if system.worker_records else f" --system {system.name}")


def check_held(system: MemorySystem, folder: RunFolder, conversations: list[Conversation]) -> list[str]:
    """Before reusing ``folder``'s records: one line per conversation to ingest again (a reset record is
    appended, so that every session is sent again); :class:`WorkerMismatch` when the system holds part of
    it, or formed it differently."""
    recorded = folder.manifest().get("ingest", {}).get("worker") or {}
    changes = system.formation_changes(recorded) if recorded else []
    notes = []
    for conv in conversations:
        done = done_sessions(folder, conv.sample_id, system.unit)
        if not done:
            continue
        store, command = system.store_name(conv.sample_id), ingest_command(system, conv.sample_id)
        expected = sum(acknowledged_of(r) for r in done.values())
        held = system.held(conv.sample_id)
        check_partial(system, folder, conv, done, held)
        lost_before = held_at_ingestion(folder, conv.sample_id, done)
        if held == 0:
            why = (f"{_who(system)} holds none of {store}'s {expected} {_noun(system)} recorded at ingestion"
                   + (f" ({'; '.join(changes[:2])})" if changes else ""))
            reset_record(system, folder, conv.sample_id, 0, why)
            notes.append(f"{why}: ingesting {conv.sample_id} again")
        elif changes:
            kind = "Worker" if system.worker_records else system.name
            raise WorkerMismatch(
                f"the memories of {store} were formed by another {kind} ({'; '.join(changes[:4])}): they are not "
                f"reused. Run `{command} --force` to forget them and ingest again with this one (or give it its own "
                "ingestion with --ingest-id NAME)")
        elif held < expected and lost_before is not None and lost_before < expected and held >= lost_before:
            continue  # it lost them during the ingestion, as recorded: the check after this one says so again
        elif held < expected:
            then = f"; it held {lost_before} after them" if lost_before is not None else ""
            raise WorkerMismatch(
                f"{_who(system)} holds {held} {_noun(system)} of {store}, fewer than the {expected} recorded at "
                f"ingestion{then} (it lost data since): run `{command} --force` to forget them and ingest again")
    return notes


def held_at_ingestion(folder: RunFolder, conversation_id: str, done: dict[int, dict]) -> int | None:
    """What the system held of the conversation when it was last counted during or after its ingestion (the
    manifest's held check, else the last session's count); None when it never was."""
    for row in (folder.manifest().get("held_check") or {}).get("conversations") or []:
        if row.get("conversation") == conversation_id and row.get("held") is not None:
            return int(row["held"])
    counted = [r["held_after"] for _, r in sorted(done.items()) if r.get("held_after") is not None]
    return int(counted[-1]) if counted else None


def check_partial(system: MemorySystem, folder: RunFolder, conv: Conversation, done: dict[int, dict],
                  held: int) -> None:
    """For a conversation cut to its first sessions (``--sessions``): :class:`WorkerMismatch` when the
    ingestion recorded later sessions, or the system holds more of it than recorded (sessions another
    ingestion gave it), which the answers would search."""
    if not conv.partial or not done:
        return
    beyond = sorted(n for n in done if n > len(conv.sessions))
    if beyond:
        raise WorkerMismatch(
            f"the ingestion {folder.run_id} holds sessions {beyond[0]}-{beyond[-1]} of {conv.sample_id}, past the "
            f"first {len(conv.sessions)} this run asks for: the answers would search them. Leave the ingestion id "
            "to its default (one per --sessions) or name another with --ingest-id")
    expected = sum(acknowledged_of(r) for r in done.values())
    # a session that failed part-way may have left some of its writes: they explain a count above the recorded one
    partly = any(r.get("status") == "failed" and int(r["session"]) not in done
                 for r in since_reset(folder, conv.sample_id, system.unit) if r.get("kind") == "session")
    if held > expected and not partly:
        raise WorkerMismatch(
            f"{_who(system)} holds {held} {_noun(system)} of {system.store_name(conv.sample_id)}, more than the "
            f"{expected} this ingestion of {conv.sample_id}'s first {len(conv.sessions)} sessions recorded: it holds "
            "sessions another ingestion gave it, which the answers would search. Use a Worker of its own for a "
            "run over the first sessions (a fresh one, or another CLAUDE_MEM_DATA_DIR)")


def check_answerable(system: MemorySystem, folder: RunFolder, conversations: list[Conversation]) -> list[str]:
    """Before answering: :class:`~locomo_kit.ingestion.summary.NotIngested` for a conversation the system
    holds nothing of (unless every session was recorded as storing nothing); warnings for partial ones."""
    warnings = []
    for conv in conversations:
        done = done_sessions(folder, conv.sample_id, system.unit)
        total = len(conv.sessions)
        held = system.held(conv.sample_id)
        store = system.store_name(conv.sample_id)
        if conv.partial:
            check_partial(system, folder, conv, done, held)
        if held == 0:
            if total and len(empty_sessions(folder, conv.sample_id, system.unit)) == total:
                warnings.append(f"{conv.sample_id}: the {'Worker' if system.worker_records else system.name} stored "
                                f"nothing of its {total} sessions (zero {_noun(system)} each): its questions are "
                                "answered from an empty memory")
                continue
            where = f"project {store}" if system.worker_records else f"its store {folder.path}"
            command = ingest_command(system, conv.sample_id)
            if done:
                raise NotIngested(f"{conv.sample_id}: {_who(system)} holds nothing of it now ({where}), although "
                                  f"{folder.run_id} recorded {len(done)} of its sessions as ingested (restarted on an "
                                  f"empty store?): run `{command}` to ingest it again (or `locomo-kit run`, which does)")
            raise NotIngested(f"{conv.sample_id} was never ingested into {_who(system)} ({where} holds nothing of "
                              f"it): run `{command}` first (or `locomo-kit run`, which ingests)")
        if len(done) == total:
            continue
        if done:
            warnings.append(f"{conv.sample_id}: only {len(done)} of {total} sessions were ingested")
        else:
            warnings.append(f"{conv.sample_id}: ingested outside this kit's records ({_who(system)} holds {store}); "
                            "its completeness is unknown")
    return warnings
