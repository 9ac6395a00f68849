"""MemPalace host: runs in MemPalace's own environment (stdlib + mempalace), driven by the kit over JSON lines.

One palace per conversation (``<root>/palaces/<conversation>``, its wing named after the conversation);
its sessions are transcript files in ``<root>/convos/<conversation>`` mined the way a user mines a
folder of chats (``mempalace mine DIR --mode convos``: ``convo_miner.mine_convos``, which skips files
it has already mined). Search is ``searcher.search_memories`` with MemPalace's defaults.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostloop import serve


def _safe(name: str) -> str:
    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"not a usable conversation id: {name!r}")
    return name


def open_system(settings: dict):
    from mempalace.convo_miner import mine_convos  # deferred: heavy (the peer package, in its own environment)
    from mempalace.palace import get_collection  # deferred: heavy (the peer package)
    from mempalace.searcher import search_memories  # deferred: heavy (the peer package)

    root = Path(settings["root"])
    (root / "palaces").mkdir(parents=True, exist_ok=True)
    (root / "convos").mkdir(parents=True, exist_ok=True)

    def palace(conv: str) -> Path:
        return root / "palaces" / _safe(conv)

    def convos(conv: str) -> Path:
        return root / "convos" / _safe(conv)

    def drawers(conv: str):
        if not palace(conv).exists():
            return None
        return get_collection(str(palace(conv)), create=False)

    def count(conv: str, source_file: str | None = None) -> int:
        """Drawers of the conversation (of one of its files: the miner records the file's full path)."""
        col = drawers(conv)
        if col is None:
            return 0
        where: dict = {"room": {"$ne": "_registry"}}  # not the miner's sentinel rows
        if source_file is not None:
            where = {"$and": [where, {"source_file": str(convos(conv) / source_file)}]}
        return len(col.get(where=where, include=[])["ids"])

    holding: set[str] = set()  # conversations this host saw drawers of: a search skips counting them again

    def ingest(conversation: str, file_name: str, text: str) -> dict:
        folder = convos(conversation)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / _safe(file_name)
        if not path.exists() or path.read_text(encoding="utf-8") != text:  # unchanged: mine_convos skips it
            tmp = path.with_name(path.name + ".part")
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)
        mine_convos(str(folder), str(palace(conversation)), wing=conversation)
        return {"stored": count(conversation, file_name)}

    def held(conversation: str) -> int:
        return count(conversation)

    def forget(conversation: str) -> int:
        holding.discard(conversation)
        n = count(conversation)
        shutil.rmtree(palace(conversation), ignore_errors=True)
        shutil.rmtree(convos(conversation), ignore_errors=True)
        return n

    def search(conversation: str, query: str, n_results: int) -> list[dict]:
        if conversation not in holding:
            if count(conversation) == 0:
                return []
            holding.add(conversation)
        out = search_memories(query, str(palace(conversation)), n_results=n_results)
        if out.get("error"):
            raise RuntimeError(f"search_memories: {out['error']}")
        return [{"text": r["text"], "score": r.get("similarity"), "id": r.get("drawer_id"),
                 "source_file": r.get("source_file"), "room": r.get("room"), "bm25_score": r.get("bm25_score"),
                 "matched_via": r.get("matched_via")} for r in out.get("results", [])]

    def health() -> dict:
        return {"ok": True, "model_dir": os.path.expanduser("~/.cache/chroma/onnx_models/all-MiniLM-L6-v2/onnx")}

    versions = {d: importlib.metadata.version(d) for d in ("mempalace", "chromadb", "onnxruntime")}
    return ({"versions": versions},
            {"ingest": ingest, "held": held, "forget": forget, "search": search, "health": health})


if __name__ == "__main__":
    serve(open_system)
