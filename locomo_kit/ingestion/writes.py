"""What a memory system holds against what it acknowledged: checked after every ingestion (fresh or resumed),
the same way for every system, and recorded in the ingestion's manifest (``held_check``).

A system that stores what it is given (the default declaration, see
:attr:`~locomo_kit.systems.base.MemorySystem.transforms`) must hold every write it acknowledged: one that holds
fewer has **lost writes** during the ingestion (a key that repeats, a server that drops writes), and a run on it
is not a result. A system that declares it transforms what it is given (a compressor, an LLM extraction) holds
what it makes of it: its held/acknowledged figures are reported beside that declaration, never as a failure.
"""

from __future__ import annotations

import hashlib
from typing import Any

from locomo_kit.dataset import Conversation
from locomo_kit.runs import RunFolder, utc_now
from locomo_kit.runs.records import done_sessions
from locomo_kit.scoring.diagnostics import covered_by_text
from locomo_kit.scoring.locomo_f1 import stemmed_tokens
from locomo_kit.systems.base import MemorySystem, MemorySystemError, declaration

OWN_WRITES_SAMPLE = 10  # turns per conversation searched by their own words after ingestion
OWN_WRITES_SEED = "locomo-kit read-your-writes"  # the same turns for every system


def acknowledged_of(record: dict[str, Any]) -> int:
    """The writes one session's record says the system acknowledged."""
    value = record.get("acknowledged")
    return int(record.get("observations") or 0) if value is None else int(value)


def fell_short(records: dict[int, dict[str, Any]]) -> list[int]:
    """Sessions after which the count the system held grew by less than it acknowledged for them (sessions
    counted after they went in, in order; the first session of a generation starts from nothing)."""
    out, before = [], 0
    for number in sorted(records):
        r = records[number]
        after = r.get("held_after")
        if after is None:
            before = None
            continue
        if before is not None and int(after) < before + acknowledged_of(r):
            out.append(number)
        before = int(after)
    return out


def spans(numbers: list[int]) -> str:
    """``1-3, 7``: sorted numbers as ranges."""
    parts: list[str] = []
    for n in sorted(numbers):
        if parts and parts[-1][1] == n - 1:
            parts[-1] = (parts[-1][0], n)
        else:
            parts.append((n, n))
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in parts)


def lost_text(name: str, row: dict[str, Any], when: str = "during ingestion") -> str:
    """One conversation's loss in words, naming both numbers."""
    fell = f"; the count fell short of the writes in session(s) {spans(row['sessions_short'])}" \
        if row.get("sessions_short") else ""
    return (f"{name} holds {row['held']} of the {row['acknowledged']} memories it acknowledged for "
            f"{row['conversation']} (lost {when}{fell})")


def check_writes(system: MemorySystem, folder: RunFolder, conversations: list[Conversation], *,
                 label: str | None = None) -> dict[str, Any]:
    """Held against acknowledged for each conversation the ingestion recorded: the record for the manifest's
    ``held_check`` (``problem``: the LOST WRITES line, for a system that stores what it is given and holds
    fewer than it acknowledged; None otherwise). ``label``: the system as the user named it."""
    rows = []
    for conv in conversations:
        records = done_sessions(folder, conv.sample_id, system.unit)
        if not records:
            continue
        row: dict[str, Any] = {"conversation": conv.sample_id, "sessions": len(records),
                               "acknowledged": sum(acknowledged_of(r) for r in records.values())}
        try:
            row["held"] = system.held(conv.sample_id)
        except MemorySystemError as exc:
            row["held"], row["error"] = None, f"{type(exc).__name__}: {exc}"
        row["sessions_short"] = fell_short(records)
        rows.append(row)
    stores = not system.transforms
    lost = [r for r in rows if stores and r["held"] is not None and r["held"] < r["acknowledged"]]
    counted = [r for r in rows if r["held"] is not None]
    return {"declaration": declaration(system), "stores_as_given": stores,
            "acknowledged": sum(r["acknowledged"] for r in counted), "held": sum(r["held"] for r in counted),
            "conversations": rows, "lost": bool(lost), "checked_at": utc_now(),
            "problem": ("LOST WRITES: " + "; ".join(lost_text(label or system.name, r) for r in lost))
            if lost else None}


def check_lines(check: dict[str, Any] | None) -> list[str]:
    """The console lines of a held check: the held/acknowledged figures, and the LOST WRITES banner."""
    if not check or not check.get("conversations"):
        return []
    counted = [r for r in check["conversations"] if r.get("held") is not None]
    lines = [f"held after ingestion: {check['held']} of {check['acknowledged']} memories acknowledged; it "
             f"{check['declaration']}" if counted else
             f"held after ingestion: not counted; it {check['declaration']}"]
    for r in check["conversations"]:
        if r.get("error"):
            lines.append(f"WARNING: {r['conversation']}: what it holds could not be counted: {r['error']}")
    if check.get("problem"):
        lines.insert(0, f"{check['problem']}: every number of a run on it understates a system that keeps what it "
                        "acknowledges; find which writes it drops with `locomo-kit systems check SYSTEM`")
    return lines


def sampled_turns(conv: Conversation, *, size: int = OWN_WRITES_SAMPLE) -> list[Any]:
    """The turns of ``conv`` probed after ingestion: among its turns of five words or more, the ``size`` that rank
    first by a seeded hash of their ids. The same turns for every system, and a conversation cut to its first
    sessions keeps those of the whole one that lie in them."""
    turns = [t for s in conv.sessions for t in s.turns if len(t.text.split()) >= 5]
    rank = {t.dia_id: hashlib.sha256(f"{OWN_WRITES_SEED}:{conv.sample_id}:{t.dia_id}".encode()).hexdigest()
            for t in turns}
    chosen = sorted(turns, key=lambda t: rank[t.dia_id])[:size]
    return sorted(chosen, key=lambda t: [int(x) for x in t.dia_id[1:].split(":")])


def own_writes(system: MemorySystem, folder: RunFolder, conversations: list[Conversation], *,
               label: str | None = None, size: int = OWN_WRITES_SAMPLE, top_k: int = 10) -> dict[str, Any] | None:
    """Read-your-writes for any system: each sampled turn (:func:`sampled_turns`, of the sessions that went in)
    searched by its own words; found when a result carries its turn id or holds its words (the 80% text rule).
    The record for the manifest's ``read_your_writes`` (``warning``: for a system that stores what it is given
    and found fewer than half). None for a system that checks its own (a Worker's wait for its index). After a
    search that fails (``search_failed``), the other sampled turns count as not found without being searched."""
    if system.read_your_writes:
        return None
    planned = []
    for conv in conversations:
        done = done_sessions(folder, conv.sample_id, system.unit)
        planned += [(conv, t) for t in sampled_turns(conv, size=size) if int(t.dia_id[1:].split(":")[0]) in done]
    if not planned:
        return None
    missed: list[str] = []
    failed: str | None = None
    for conv, turn in planned:
        if failed:  # a search that failed once fails the same way: the rest is not tried (a hang waits each out)
            missed.append(f"{conv.sample_id} {turn.dia_id} (not searched)")
            continue
        try:
            found = system.search(conv.sample_id, turn.text, top_k).memories
        except MemorySystemError as exc:
            missed.append(f"{conv.sample_id} {turn.dia_id} ({type(exc).__name__})")
            failed = f"{type(exc).__name__}: {exc}"
            continue
        if not any(turn.dia_id in m.source_turns for m in found) and \
                not covered_by_text(turn.text, [stemmed_tokens(m.text) for m in found]):
            missed.append(f"{conv.sample_id} {turn.dia_id}")
    probes = len(planned)
    out: dict[str, Any] = {"sampled": probes, "found": probes - len(missed), "missed": missed, "top_k": top_k,
                           "seed": OWN_WRITES_SEED, "checked_at": utc_now(), "warning": None,
                           "search_failed": failed[:500] if failed else None}
    if not system.transforms and out["found"] * 2 < probes:
        out["warning"] = (f"READ-YOUR-WRITES: {label or system.name} returned only {out['found']} of {probes} of its "
                          f"own writes when searched by their own words (top {top_k}); not found: "
                          + ", ".join(missed[:10]) + (" …" if len(missed) > 10 else "")
                          + (f"; a search failed ({failed[:300]}), so the rest were not searched" if failed else ""))
    return out


def own_writes_lines(probe: dict[str, Any] | None) -> list[str]:
    """The console lines of :func:`own_writes`."""
    if not probe:
        return []
    line = (f"its own writes: {probe['found']} of {probe['sampled']} sampled turns found by searching their own words"
            + (f" (not found: {', '.join(probe['missed'][:5])}{' …' if len(probe['missed']) > 5 else ''})"
               if probe["missed"] else ""))
    return [f"WARNING: {probe['warning']}"] if probe.get("warning") else [line]
