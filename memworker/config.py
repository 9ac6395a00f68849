"""memworker settings: command-line options over ``MEMWORKER_*`` environment variables over defaults."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path


@dataclass
class Settings:
    host: str = "127.0.0.1"  # address to listen on; a non-loopback one needs MEMWORKER_TOKEN (or --allow-unauthenticated)
    port: int = 37777  # TCP port
    db_path: str = str(Path.home() / ".memworker" / "memworker.db")  # the SQLite database (one Worker per database)
    token: str = ""  # bearer token; empty = no authentication (loopback only)
    embedder: str = "minilm"  # minilm | hashing
    embed_threads: int = 2  # threads the minilm embedder computes on (the same vectors; 1 spends less CPU where other processes share the cores)
    extractor: str = "rules"  # rules | llm
    llm_provider: str = "openai"  # for the llm extractor: openai | anthropic
    llm_model: str = ""  # for the llm extractor: the model name
    llm_base_url: str = ""  # for the llm extractor: the provider's base URL (an OpenAI-compatible server)
    llm_api_key: str = ""  # for the llm extractor: the provider's key (environment only)
    w_similarity: float = 0.5  # seed ranking: weight of the similarity
    w_importance: float = 0.3  # seed ranking: weight of importance × decay
    w_recency: float = 0.2  # seed ranking: weight of recency (last retrieval)
    half_life_days: float = 30.0  # seed ranking: half-life of the decay and recency terms
    top_k: int = 8  # results of a search that gives no limit
    floor: float = 0.45  # seed ranking: minimum relevance relative to the best match (0-1)
    bm25_weight: float = 1.0  # share of BM25 in the fused similarity; the rest is cosine (dense query vector)
    context_weight: float = 0.7  # BM25 weight of a memory's neighbouring turns (its own text weighs 1)
    speaker_boost: float = 0.35  # added to the similarity of memories by the speaker a query names (the first, of two)
    two_speakers: str = "first"  # a query naming two speakers: first (speaker_boost for the first named, second_speaker_boost for the other) | one (neither) | interleave (one search per speaker, taken in turn)
    second_speaker_boost: float = 0.2  # added for memories by the speaker a query names second (two_speakers first)
    ranking: str = "relevance"  # relevance (the default) | seed: w_similarity·sim + w_importance·importance·decay + w_recency·recency
    bm25_k1: float = 1.0  # BM25 term-frequency saturation
    bm25_b: float = 0.75  # BM25 length normalisation
    date_weight: float = 0.3  # added for memories whose date the query names ("in May 2023")
    window_weight: float = 0.4  # BM25 weight of the turns 2-3 positions away
    expand_terms: int = 5  # query expansion: project words nearest each query word (static MiniLM vectors; 0: off)
    expand_min_sim: float = 0.4  # query expansion: a project word's least cosine with the query word
    expand_weight: float = 0.6  # query expansion: BM25 weight of an added word, times its cosine
    feedback_docs: int = 5  # dense relevance feedback: centroid of the best memories' stored embeddings (0: off)
    feedback_weight: float = 0.07  # dense relevance feedback: each memory gains this × the z-score of its cosine with the centroid
    session_weight: float = 0.6  # BM25 weight of the whole session, added to each of its memories
    span_gap: int = 1  # with a context budget: hits this many turns apart merge into one span
    span_max_turns: int = 5  # with a context budget: the most turns one span holds
    reply_turns: int = 1  # with a context budget: turns after a hit that join its span (the reply), for the best hits' spans
    reply_spans: int = 0  # with a context budget: how many spans (best first) take in their reply (0: none; 2 measured)
    query_embedder: str = "static"  # static: per-piece vectors distilled from MiniLM (~1 ms) | full: the ingestion model
    static_cache: str = ""  # file of the distilled vectors; empty: beside the database
    dedup_threshold: float = 0.85  # a memory merges into one of the same speaker's with at least this embedding cosine (above 1: never)
    now: str = "latest"  # "latest" (newest memory of the project), "wall", or an ISO date
    max_body_bytes: int = 5_000_000  # largest request body accepted
    max_query_chars: int = 2000  # longest search query accepted
    allowed_hosts: str = ""  # extra Host header names to answer (comma-separated); loopback names always
    parent_pid: int = 0  # exit when this process is gone (set by the kit for its embedded Worker)
    header_timeout: float = 10.0  # seconds a client has to send a whole request (headers and body)
    chunk_memories: int = 64  # memories committed per transaction when a large item is split (rules extractor)
    search_concurrency: int = 4  # searches served at once; more wait, so that ingestion keeps its share of the CPU
    max_attempts: int = 5  # a queue item that fails this many times is marked failed (a resend re-queues it)
    uncorroborated_weight: float = 0.5  # score factor for saved claims the transcripts do not corroborate (provenance.py)
    retry_base_seconds: float = 1.0  # backoff before retrying a failed item or a failing store: base * 2^n, ≤ 60 s

    @classmethod
    def descriptions(cls) -> dict[str, str]:
        """Each setting's description: its comment in this class (``memworker --help`` shows them)."""
        import inspect
        import re

        try:
            source = inspect.getsource(cls)
        except (OSError, TypeError):  # installed without its source: options keep their defaults as help
            return {}
        found = (re.match(r"    (\w+): [^=]+=.*?  # (.+)$", line) for line in source.splitlines())
        return {m.group(1): m.group(2) for m in found if m}

    @classmethod
    def from_env(cls, **overrides: object) -> "Settings":
        values: dict[str, object] = {}
        for f in fields(cls):
            env = os.environ.get(f"MEMWORKER_{f.name.upper()}")
            if env is not None:
                kind = type(getattr(cls(), f.name))
                try:
                    values[f.name] = kind(env)
                except ValueError:
                    raise ValueError(f"MEMWORKER_{f.name.upper()}={env!r} is not a valid {kind.__name__} "
                                     f"(its default: {getattr(cls(), f.name)!r})") from None
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    def public(self) -> dict[str, object]:
        """Settings safe to show (no token, no key)."""
        hidden = {"token", "llm_api_key"}
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in hidden}
