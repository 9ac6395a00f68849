"""``locomo-kit verify``: count what a memory system holds of each sample and probe its search with one
single-hop, one multi-hop and one temporal question: a Worker's project (:func:`verify_worker_project`),
or any other system's store (:func:`verify_system`)."""

from __future__ import annotations

import sys
from typing import Any

from locomo_kit.dataset import Conversation, questions
from locomo_kit.qa.retrieval import retrieve
from locomo_kit.systems import registry, runner
from locomo_kit.systems.options import checked_options
from locomo_kit.worker import transcript
from locomo_kit.worker.client import WorkerClient


def verify_worker_project(client: WorkerClient, conv: Conversation, top: int = 3, query_strategy: str = "question") -> dict:
    """Count the project's observations and probe search with one question of categories 4, 1, 2."""
    project = transcript.project_name(conv.sample_id)
    obs = client.list_observations(project)
    probes = []
    for category in (4, 1, 2):
        q = next((q for q in questions(conv) if q.category == category), None)
        if q is None:
            continue
        result = retrieve(client, q.question, project, top, query_strategy)
        probes.append({
            "question": q.question, "category": q.category_name, "gold": q.answer,
            "latency_ms": round(result.latency_ms, 1),
            "results": [{"id": o.id, "title": o.title, "text": (o.narrative or "")[:200]} for o in result.observations],
        })
    return {
        "project": project,
        "query_strategy": query_strategy,
        "observations": len(obs),
        "samples": [{"id": o.id, "title": o.title, "narrative": (o.narrative or "")[:100]} for o in obs[:10]],
        "probes": probes,
    }


def format_verification(report: dict) -> str:
    lines = [f"{report['project']}: {report['observations']} observations"]
    for s in report["samples"]:
        lines.append(f"  #{s['id']} {s['title']!r}: {s['narrative']}")
    for p in report["probes"]:
        lines.append(f"\nQ [{p['category']}] {p['question']}\n  gold: {p['gold']}  ({p['latency_ms']} ms)")
        for i, r in enumerate(p["results"], 1):
            lines.append(f"  {i}. #{r['id']} {r['text']}")
    return "\n".join(lines)


def verify_system(name: str, conversations: list[Conversation], ingest_id: str | None = None, top: int = 3,
                  options: dict[str, Any] | None = None) -> int:
    options = checked_options(name, registry.resolve(name), options) or None
    ok = True
    for conv in conversations:
        folder = runner.ingestion(conv.sample_id, name, ingest_id, options)
        if not folder.exists():
            print(f"locomo-kit: error: no ingestion at {folder.path}: ingest first (locomo-kit ingest --sample "
                  f"{conv.sample_id} --system {name})", file=sys.stderr)
            ok = False
            continue
        with runner.open_system(name, folder, options) as system:
            held = system.held(conv.sample_id)
            print(f"{conv.sample_id} in {system.identity().label}: {held} memories")
            empty = 0
            for category in (4, 1, 2):
                q = next((q for q in questions(conv) if q.category == category), None)
                if q is None:
                    continue
                found = system.search(conv.sample_id, q.question, top)
                empty += not found.memories
                print(f"\nQ [{q.category_name}] {q.question}\n  gold: {q.answer}  ({found.latency_ms:.1f} ms)")
                for i, m in enumerate(found.memories, 1):
                    print(f"  {i}. {','.join(m.source_turns) or '–'} {m.text[:200]}")
            if not held or empty:
                ok = False
                print(f"locomo-kit: error: {conv.sample_id}: {held} memories; {empty} probes found nothing",
                      file=sys.stderr)
    return 0 if ok else 1
