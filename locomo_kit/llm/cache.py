"""A disk cache of completions (SQLite), keyed by a hash of everything that shapes the answer.

The key covers provider, model, the server's address (answers from a stand-in or a local server
must never pass as another server's), API version, system prompt, messages, max_tokens,
temperature, the prompt version and a caller-chosen ``salt`` (the judge's run index, so that N
judge runs are N samples and a rerun of run k costs nothing).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Sequence

from locomo_kit.llm.base import LLM, Completion, LLMRequest


def cache_key(provider: str, model: str, system: str, messages: Sequence[dict], max_tokens: int,
              temperature: float | None, prompt_version: str, salt: str = "", extra: dict | None = None) -> str:
    blob = json.dumps([provider, model, system, list(messages), max_tokens, temperature, prompt_version, salt,
                       extra or {}], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


class CompletionCache:
    def __init__(self, path: str | Path) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=30)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("CREATE TABLE IF NOT EXISTS completions (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        self._lock = threading.Lock()

    def get(self, key: str) -> Completion | None:
        with self._lock:
            row = self._conn.execute("SELECT value FROM completions WHERE key=?", (key,)).fetchone()
        if row is None:
            return None
        data = json.loads(row[0])
        data["cached"] = True
        return Completion(**data)

    def put(self, key: str, completion: Completion) -> None:
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO completions VALUES (?, ?)",
                               (key, json.dumps(asdict(completion))))


def server_of(llm: LLM) -> str | None:
    return getattr(llm, "base_url", None)


def request_key(llm: LLM, request: LLMRequest) -> str:
    """The cache key of ``request`` sent to ``llm`` (its provider, model, server and API version)."""
    extra = {"api_version": getattr(llm, "api_version", None), "server": server_of(llm)}
    return cache_key(llm.provider, llm.model, request.system, request.messages, request.max_tokens,
                     request.temperature, request.prompt_version, request.salt, extra)


class CachedLLM:
    """Wraps an LLM: ``complete`` is served from the cache when the same call was made before."""

    def __init__(self, llm: LLM, cache: CompletionCache) -> None:
        self.llm, self.cache = llm, cache
        self.provider, self.model = llm.provider, llm.model
        self.base_url = server_of(llm)

    def key(self, request: LLMRequest) -> str:
        return request_key(self.llm, request)

    def complete(self, messages: Sequence[dict], system: str = "", max_tokens: int = 256,
                 temperature: float | None = None, prompt_version: str = "", salt: str = "") -> Completion:
        request = LLMRequest(list(messages), system, max_tokens, temperature, prompt_version, salt)
        key = self.key(request)
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        completion = self.llm.complete(messages, system=system, max_tokens=max_tokens, temperature=temperature)
        self.cache.put(key, completion)
        return completion
