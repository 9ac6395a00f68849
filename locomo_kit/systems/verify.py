"""``locomo-kit verify --system NAME``: count what a non-Worker system holds and probe its search
(one single-hop, one multi-hop and one temporal question), as ``verify`` does for a Worker."""

from __future__ import annotations

import sys

from locomo_kit.dataset import Conversation, questions
from locomo_kit.systems import runner


def verify_system(name: str, conversations: list[Conversation], ingest_id: str | None = None, top: int = 3) -> int:
    ok = True
    for conv in conversations:
        folder = runner.ingestion(conv.sample_id, name, ingest_id)
        if not folder.exists():
            print(f"locomo-kit: error: no ingestion at {folder.path}: ingest first (locomo-kit ingest --sample "
                  f"{conv.sample_id} --system {name})", file=sys.stderr)
            ok = False
            continue
        with runner.open_system(name, folder) as system:
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
