"""``locomo-kit verify``: count what a memory system holds of each sample and probe its search with one
single-hop, one multi-hop and one temporal question, the same way for every system (a Worker's project
as any other system's store)."""

from __future__ import annotations

import sys
from typing import Any

from locomo_kit.dataset import Conversation, questions
from locomo_kit.qa.retrieval import retrieve as retrieve_memories
from locomo_kit.qa.system_search import SystemSearch, check_query_strategy
from locomo_kit.settings import SystemSpec
from locomo_kit.systems.base import MemorySystem
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
            empty = sum(not p["results"] for p in report["probes"])
            if not report["held"] or empty:
                ok = False
                hint = (" (a keyword-only search? try --query-strategy keywords)"
                        if empty and query_strategy == "question" and report["held"] else "")
                print(f"locomo-kit: error: {report['store']}: {report['held']} memories; {empty} of "
                      f"{len(report['probes'])} probes found nothing{hint}", file=sys.stderr)
    return 0 if ok else 1
