"""The real local LLM server (llama.cpp's, via ``scripts/llm-server``) as a test component: built
into a cache outside the repository once (5-15 minutes), started on loopback per test module.
Without a C/C++ toolchain or cmake the tests that need it skip and say why (``-ra``)."""

from __future__ import annotations

import json
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "llm-server"
MODEL = "openai/SmolLM2-135M-Instruct-Q4_1"


def llm_server(*args: str, timeout: float = 3600) -> str:
    proc = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"llm-server {' '.join(args)} failed ({proc.returncode}): {proc.stderr[-3000:]}")
    return proc.stdout


def require_server() -> dict:
    """Skip (saying why) without the toolchain; otherwise build the server once, or fail."""
    info = json.loads(llm_server("info"))
    if info.get("toolchain_missing"):
        pytest.skip(f"the real local LLM server cannot be built here: {info['toolchain_missing']}; its tests did "
                    "not run")
    return json.loads(llm_server("setup"))


@contextmanager
def running_server(folder: Path, n_ctx: int = 4096, threads: int = 1) -> Iterator[dict]:
    info = json.loads(llm_server("start", "--dir", str(folder), "--n-ctx", str(n_ctx), "--threads", str(threads),
                                 timeout=300))
    try:
        yield info
    finally:
        llm_server("stop", "--dir", str(folder), timeout=60)


def generation_speed(base_url: str, tokens: int = 48) -> float:
    """Tokens a second the server generates now (one short call)."""
    import time

    import httpx

    start = time.monotonic()
    r = httpx.post(f"{base_url}/chat/completions", timeout=600, json={
        "model": "m", "max_tokens": tokens, "temperature": 0.8,
        "messages": [{"role": "user", "content": "Write a long story about a lighthouse keeper."}]})
    r.raise_for_status()
    return r.json()["usage"]["completion_tokens"] / (time.monotonic() - start)


CLAUDE_MEM_TOKENS_PER_CALL = 4096  # claude-mem's max_tokens
CLAUDE_MEM_MAX_TIMEOUT_S = 300.0


def require_speed_for_claude_mem(base_url: str) -> float:
    """Skip, saying why, when this machine generates too slowly for claude-mem's 300 s per call."""
    speed = generation_speed(base_url)
    need = CLAUDE_MEM_TOKENS_PER_CALL / (0.8 * CLAUDE_MEM_MAX_TIMEOUT_S)
    if speed < need:
        pytest.skip(f"the local server generates {speed:.1f} tokens/s on this machine now (busy?): claude-mem asks for "
                    f"up to {CLAUDE_MEM_TOKENS_PER_CALL} tokens a call within at most 300 s, which needs about "
                    f"{need:.0f} tokens/s; claude-mem would pause its generator (the kit names it: "
                    "tests/test_compression.py)")
    return speed
