"""Mem0 (open source) host: runs in Mem0's own environment (stdlib + mem0ai), driven by the kit over JSON lines.

One ``mem0.Memory`` per conversation (``Memory.from_config``): embedded Qdrant at a local path (its own
collection, so a search never scans another conversation's points), its own history database, the
``huggingface`` embedder at a local sentence-transformers folder. Each turn is one ``add`` with
``user_id`` = the conversation, the turn's speaker as the message's ``name`` and its source in
``metadata``; ``infer`` is False (raw messages) unless an LLM is configured.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostloop import serve

PAGE = 10_000  # get_all's top_k when listing a conversation (LoCoMo's largest has under 1,000 turns)


def _safe(name: str) -> str:
    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"not a usable conversation id: {name!r}")
    return name


def open_system(settings: dict):
    from mem0 import Memory  # deferred: heavy (the peer package, in its own environment)

    root = Path(settings["root"])
    root.mkdir(parents=True, exist_ok=True)
    llm = settings.get("llm")  # {"base_url", "model", "api_key"} or None
    infer = bool(llm)
    memories: dict[str, Memory] = {}

    def config(conv: str) -> dict:
        cfg = {
            "vector_store": {"provider": "qdrant", "config": {
                "collection_name": f"locomo_{conv.replace('-', '_')}", "path": str(root / _safe(conv) / "qdrant"),
                "embedding_model_dims": settings["embedding_dims"], "on_disk": True}},
            "embedder": {"provider": "huggingface", "config": {"model": settings["embedder_path"],
                                                               "embedding_dims": settings["embedding_dims"]}},
            "history_db_path": str(root / conv / "history.db"),
        }
        if llm:
            cfg["llm"] = {"provider": "openai", "config": {"model": llm["model"], "openai_base_url": llm["base_url"],
                                                           "api_key": llm.get("api_key") or "not-needed",
                                                           "temperature": 0}}
        return cfg

    def memory(conv: str) -> Memory:
        if conv not in memories:
            (root / _safe(conv)).mkdir(parents=True, exist_ok=True)
            memories[conv] = Memory.from_config(config(conv))
        return memories[conv]

    def listing(conv: str) -> list[dict]:
        if not (root / _safe(conv)).exists():
            return []
        return memory(conv).get_all(filters={"user_id": conv}, top_k=PAGE)["results"]

    def ingest(conversation: str, turns: list[dict]) -> dict:
        """Add each turn not yet held (a resumed session adds only what is missing)."""
        m = memory(conversation)
        held_turns = {(r.get("metadata") or {}).get("dia_id") for r in listing(conversation)}
        added = skipped = 0
        for turn in turns:
            if turn["dia_id"] in held_turns:
                skipped += 1
                continue
            out = m.add([{"role": "user", "content": turn["text"], "name": turn["speaker"]}], user_id=conversation,
                        metadata=turn["metadata"], infer=infer)
            added += len(out.get("results", []))
        return {"added": added, "skipped": skipped}

    def held(conversation: str) -> int:
        return len(listing(conversation))

    def forget(conversation: str) -> int:
        n = held(conversation)
        if n:
            memory(conversation).delete_all(user_id=conversation)
        m = memories.pop(conversation, None)
        if m is not None:
            try:
                m.vector_store.client.close()
            except Exception:
                pass
        shutil.rmtree(root / _safe(conversation), ignore_errors=True)
        return n

    def search(conversation: str, query: str, top_k: int) -> list[dict]:
        if not (root / _safe(conversation)).exists():
            return []
        out = memory(conversation).search(query, top_k=top_k, filters={"user_id": conversation})
        return [{"text": r["memory"], "score": r.get("score"), "id": r.get("id"), "metadata": r.get("metadata") or {}}
                for r in out.get("results", [])]

    def health() -> dict:
        return {"ok": True, "infer": infer}

    versions = {d: importlib.metadata.version(d) for d in ("mem0ai", "qdrant-client", "sentence-transformers",
                                                            "torch")}
    return ({"versions": versions, "infer": infer},
            {"ingest": ingest, "held": held, "forget": forget, "search": search, "health": health})


if __name__ == "__main__":
    serve(open_system)
