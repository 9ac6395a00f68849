"""Search MemPalace or Mem0 through its own Python API, as a user would, on memories the kit stored.

Run with the system's own Python (its cached environment), not the kit's: it imports only the stdlib and
the system's package. ``benchmarks/peer_systems_bench.py`` calls it after the kit has ingested and closed
the system, and scores what it prints the same way as what came through the kit.

    <env>/venv/bin/python benchmarks/peer_own_api.py REQUEST.json RESULT.json

REQUEST: {"system": "mempalace" | "mem0", "root": the adapter's data folder, "n_results": N,
          "queries": [{"conversation": "conv-26", "query": "..."}, ...], (mem0) "embedder_path": "..."}
RESULT:  {"hits": [[{"text": ..., "metadata": {...}}, ...] per query], "latency_ms": [...]}
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def mempalace_searcher(request: dict):
    from mempalace.searcher import search_memories

    root = Path(request["root"])

    def search(conversation: str, query: str, n: int) -> list[dict]:
        out = search_memories(query, str(root / "palaces" / conversation), n_results=n)
        if out.get("error"):
            raise RuntimeError(out["error"])
        return [{"text": r["text"], "metadata": {"source_file": r.get("source_file")}} for r in out["results"]]

    return search


def mem0_searcher(request: dict):
    from mem0 import Memory

    root = Path(request["root"])
    opened: dict = {}

    def memory(conversation: str) -> Memory:
        if conversation not in opened:
            opened[conversation] = Memory.from_config({
                "vector_store": {"provider": "qdrant", "config": {
                    "collection_name": f"locomo_{conversation.replace('-', '_')}",
                    "path": str(root / conversation / "qdrant"), "embedding_model_dims": 384, "on_disk": True}},
                "embedder": {"provider": "huggingface", "config": {"model": request["embedder_path"],
                                                                   "embedding_dims": 384}},
                "history_db_path": str(root / conversation / "history.db"),
            })
        return opened[conversation]

    def search(conversation: str, query: str, n: int) -> list[dict]:
        out = memory(conversation).search(query, top_k=n, filters={"user_id": conversation})
        return [{"text": r["memory"], "metadata": r.get("metadata") or {}} for r in out["results"]]

    return search


def main() -> None:
    request = json.loads(Path(sys.argv[1]).read_text())
    search = {"mempalace": mempalace_searcher, "mem0": mem0_searcher}[request["system"]](request)
    hits, latency = [], []
    for q in request["queries"]:
        start = time.perf_counter()
        hits.append(search(q["conversation"], q["query"], request["n_results"]))
        latency.append((time.perf_counter() - start) * 1000)
    Path(sys.argv[2]).write_text(json.dumps({"hits": hits, "latency_ms": latency}))


if __name__ == "__main__":
    main()
