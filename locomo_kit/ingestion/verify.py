"""``locomo-kit verify``: count what a memory system holds of each sample and probe its search with one
single-hop, one multi-hop and one temporal question, the same way for every system (a Worker's project
as any other system's store)."""

from __future__ import annotations

import sys
from typing import Any

from locomo_kit.dataset import Conversation, questions
from locomo_kit.ingestion.held import held_at_ingestion
from locomo_kit.ingestion.writes import acknowledged_of, fell_short, lost_text
from locomo_kit.qa.retrieval import retrieve as retrieve_memories
from locomo_kit.qa.system_search import SystemSearch, check_query_strategy
from locomo_kit.runs import RunFolder
from locomo_kit.runs.records import done_sessions
from locomo_kit.settings import SystemSpec
from locomo_kit.systems.base import MemorySystem, declaration
from locomo_kit.systems.runner import ResolvedSystem, observation, resolve_system


def verify_conversation(system: MemorySystem, conv: Conversation, top: int = 3,
                        query_strategy: str = "question") -> dict[str, Any]:
    """What ``system`` holds of ``conv``, and the top ``top`` memories for one question of categories 4, 1, 2
    (``query_strategy`` ``keywords``: the kit's fusion over the system's search)."""
    probes = []
    for category in (4, 1, 2):
        q = next((q for q in questions(conv) if q.category == category), None)
        if q is None:
            continue
        if query_strategy == "question":  # any other is the kit's fusion (retrieve refuses an unknown one)
            found = system.search(conv.sample_id, q.question, top)
            memories, latency = [observation(m) for m in found.memories], found.latency_ms
        else:
            fused = retrieve_memories(SystemSearch(system), q.question, conv.sample_id, top, query_strategy)
            memories, latency = fused.observations, fused.latency_ms
        probes.append({"question": q.question, "category": q.category_name, "gold": q.answer,
                       "latency_ms": round(latency, 1),
                       "results": [{"id": o.id, "turns": o.source_turns, "text": o.content[:200]} for o in memories]})
    return {"conversation": conv.sample_id, "store": system.store_name(conv.sample_id),
            "system": system.identity().label, "held": system.held(conv.sample_id),
            "query_strategy": query_strategy, "probes": probes}


def format_verification(report: dict[str, Any]) -> str:
    lines = [f"{report['store']} in {report['system']}: {report['held']} memories"]
    for p in report["probes"]:
        lines.append(f"\nQ [{p['category']}] {p['question']}\n  gold: {p['gold']}  ({p['latency_ms']} ms)")
        for i, r in enumerate(p["results"], 1):
            lines.append(f"  {i}. #{r['id']} {','.join(r['turns']) or '–'} {r['text']}")
    return "\n".join(lines)


def held_against_acknowledged(system: MemorySystem, folder: RunFolder, conversation_id: str, held: int, *,
                              label: str | None = None) -> str | None:
    """Printed: what ``system`` holds of the conversation against what it acknowledged at ingestion. Returns the
    loss in words (both numbers, during ingestion or since) for a system that stores what it is given and holds
    fewer; None otherwise."""
    done = done_sessions(folder, conversation_id, system.unit)
    if not done:
        return None
    acknowledged = sum(acknowledged_of(r) for r in done.values())
    print(f"  held {held} of the {acknowledged} memories acknowledged at ingestion ({declaration(system)})")
    if system.transforms or held >= acknowledged:
        return None
    then = held_at_ingestion(folder, conversation_id, done)
    row = {"conversation": conversation_id, "held": held, "acknowledged": acknowledged,
           "sessions_short": fell_short(done)}
    during = then is not None and then < acknowledged and held >= then
    return lost_text(label or system.name, row, "during ingestion" if during else
                     "since its ingestion" + (f", after which it held {then}" if then is not None else ""))


def verify_system(system: SystemSpec | ResolvedSystem | str | None, *, conversations: list[Conversation],
                  sample: str | None = None, top: int = 3, query_strategy: str = "question") -> int:
    """Print what ``system`` holds of each conversation and its probes; 0 when it holds every one and each probe
    found something, else 1 with the reason on stderr. ``sample``: as the ingestion was named (default: the
    conversations' ids)."""
    resolved = resolve_system(system)
    check_query_strategy(resolved.name, query_strategy)
    sample = sample or ",".join(c.sample_id for c in conversations)
    folder = resolved.ingestion(sample)
    if not folder.exists() and not resolved.holds_its_ingestion_elsewhere():
        print(f"locomo-kit: error: no ingestion at {folder.path}: ingest first ({resolved.ingest_command(sample)})",
              file=sys.stderr)
        return 1
    ok = True
    with resolved.open(folder) as opened:
        for conv in conversations:
            report = verify_conversation(opened, conv, top, query_strategy)
            print(format_verification(report))
            if lost := held_against_acknowledged(opened, folder, conv.sample_id, report["held"], label=resolved.name):
                ok = False
                print(f"locomo-kit: error: LOST WRITES: {lost}", file=sys.stderr)
            empty = sum(not p["results"] for p in report["probes"])
            if not report["held"] or empty:
                ok = False
                hint = (" (a keyword-only search? try --query-strategy keywords)"
                        if empty and query_strategy == "question" and report["held"] else "")
                print(f"locomo-kit: error: {report['store']}: {report['held']} memories; {empty} of "
                      f"{len(report['probes'])} probes found nothing{hint}", file=sys.stderr)
    return 0 if ok else 1
