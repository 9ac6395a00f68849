"""memworker settings: command-line options over ``MEMWORKER_*`` environment variables over defaults."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path


@dataclass
class Settings:
    host: str = "127.0.0.1"
    port: int = 37777
    db_path: str = str(Path.home() / ".memworker" / "memworker.db")
    token: str = ""  # bearer token; empty = no authentication (loopback only)
    embedder: str = "minilm"  # minilm | hashing
    extractor: str = "rules"  # rules | llm
    llm_provider: str = "openai"  # for the llm extractor: openai | anthropic
    llm_model: str = ""
    llm_base_url: str = ""
    llm_api_key: str = ""
    w_similarity: float = 0.5
    w_importance: float = 0.3
    w_recency: float = 0.2
    half_life_days: float = 30.0
    top_k: int = 8
    floor: float = 0.45  # seed ranking: minimum relevance relative to the best match (0-1)
    bm25_weight: float = 1.0  # share of BM25 in the fused similarity; the rest is cosine (dense query vector)
    context_weight: float = 0.7  # BM25 weight of a memory's neighbouring turns (its own text weighs 1)
    speaker_boost: float = 0.35  # added to the similarity of memories by the speaker a query names
    ranking: str = "relevance"  # relevance (the default) | seed: w_similarity·sim + w_importance·importance·decay + w_recency·recency
    bm25_k1: float = 1.0
    bm25_b: float = 0.75
    date_weight: float = 0.3  # added for memories whose date the query names ("in May 2023")
    window_weight: float = 0.4  # BM25 weight of the turns 2-3 positions away
    expand_terms: int = 5  # query expansion: project words nearest each query word (static MiniLM vectors; 0: off)
    expand_min_sim: float = 0.4
    expand_weight: float = 0.6
    feedback_docs: int = 5  # dense relevance feedback: centroid of the best memories' stored embeddings (0: off)
    feedback_weight: float = 0.07  # … each memory gains this times the z-score of its cosine with it
    session_weight: float = 0.6  # BM25 weight of the whole session, added to each of its memories
    span_gap: int = 1  # with a context budget: hits this many turns apart merge into one span
    span_max_turns: int = 5
    query_embedder: str = "static"  # static: per-piece vectors distilled from MiniLM (~1 ms) | full: the ingestion model
    static_cache: str = ""  # file of the distilled vectors (default: beside the database)
    dedup_threshold: float = 0.85
    now: str = "latest"  # "latest" (newest memory of the project), "wall", or an ISO date
    max_body_bytes: int = 5_000_000
    max_query_chars: int = 2000
    allowed_hosts: str = ""  # extra Host header names to answer (comma-separated); loopback names always
    parent_pid: int = 0  # exit when this process is gone (set by the kit for its embedded Worker)
    header_timeout: float = 10.0  # seconds a client has to send a whole request (headers and body)
    chunk_memories: int = 64  # memories committed per transaction when a large item is split (rules extractor)
    search_concurrency: int = 4  # searches served at once; more wait, so that ingestion keeps its share of the CPU
    max_attempts: int = 5  # a queue item that fails this many times is marked failed (a resend re-queues it)
    uncorroborated_weight: float = 0.5  # score factor for saved claims the transcripts do not corroborate (provenance.py)
    retry_base_seconds: float = 1.0  # backoff before retrying a failed item or a failing store: base * 2^n, ≤ 60 s

    @classmethod
    def from_env(cls, **overrides: object) -> "Settings":
        values: dict[str, object] = {}
        for f in fields(cls):
            env = os.environ.get(f"MEMWORKER_{f.name.upper()}")
            if env is not None:
                values[f.name] = type(getattr(cls(), f.name))(env)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    def public(self) -> dict[str, object]:
        """Settings safe to show (no token, no key)."""
        hidden = {"token", "llm_api_key"}
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in hidden}
