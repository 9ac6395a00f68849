"""The real local LLM server (llama.cpp's own, from the prebuilt xllamacpp wheel, via ``scripts/llm-server``) as a
test component: installed into a cache outside the repository once (seconds; tests/conftest.py starts that in the
background, at the lowest priority, as soon as a session has collected a test that needs it), started on
loopback per test module. Where it cannot run (``llm-server info``'s ``unavailable``) the tests that need it skip
and say why (``-ra``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "llm-server"
MODEL = "openai/SmolLM2-135M-Instruct-Q4_1"
_background: subprocess.Popen | None = None  # the install started by install_in_background


def llm_server(*args: str, timeout: float = 3600) -> str:
    proc = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"llm-server {' '.join(args)} failed ({proc.returncode}): {proc.stderr[-3000:]}")
    return proc.stdout


def install_in_background() -> subprocess.Popen | None:
    """Start ``llm-server setup`` at the lowest CPU priority when the server is not installed yet and can run
    here (None otherwise): on a fresh machine its download then overlaps the tests that run before the
    local-LLM ones, which wait for it under the install's lock (``require_server``)."""
    global _background
    info = json.loads(llm_server("info"))
    if (info["server_built"] and info["model_fetched"]) or info.get("unavailable"):
        return None
    log = Path(info["server_dir"]).parent / "background-setup.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        _background = subprocess.Popen([sys.executable, str(SCRIPT), "setup"], stdout=out, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, start_new_session=True)
    os.setpriority(os.PRIO_PROCESS, _background.pid, 19)  # before it starts pip, which inherits it
    return _background


def stop_background_install(timeout: float = 60) -> None:
    """End a background install still running (the session ends without the local-LLM tests having waited
    for it); ``llm-server`` removes its temporary folder on SIGTERM."""
    proc = _background
    if proc is not None and proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _hurry_background_install() -> None:
    """The tests now wait for the background install: back to normal priority (root only; else it stays niced)."""
    if _background is not None and _background.poll() is None:
        try:
            os.setpriority(os.PRIO_PGRP, _background.pid, 0)
        except OSError:
            pass


def require_server() -> dict:
    """Skip (saying why) where the server cannot run; otherwise install it once (or wait for the install
    started in the background), or fail."""
    _hurry_background_install()
    info = json.loads(llm_server("info"))
    if info.get("unavailable"):
        pytest.skip(f"the real local LLM server cannot run here: {info['unavailable']}; its tests did not run")
    return json.loads(llm_server("setup"))


@contextmanager
def running_server(folder: Path, n_ctx: int = 4096, threads: int = 1, nice: int = 0,
                   max_tokens: int = 0) -> Iterator[dict]:
    info = json.loads(llm_server("start", "--dir", str(folder), "--n-ctx", str(n_ctx), "--threads", str(threads),
                                 "--nice", str(nice), "--max-tokens", str(max_tokens), timeout=300))
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


def require_speed_for_claude_mem(info: dict) -> float:
    """Skip, saying why, when the server of ``info`` (``running_server``'s) generates too slowly for claude-mem's
    300 s per call: its 4,096 tokens, or the server's cap on them."""
    # the best of two calls: a server's first call also pages its model in (5.6 tokens/s against 59 for the
    # next one, measured beside three busy processes)
    speed = max(generation_speed(info["base_url"]) for _ in range(2))
    tokens = min(CLAUDE_MEM_TOKENS_PER_CALL, info.get("max_tokens") or CLAUDE_MEM_TOKENS_PER_CALL)
    need = tokens / (0.8 * CLAUDE_MEM_MAX_TIMEOUT_S)
    if speed < need:
        pytest.skip(f"the local server generates {speed:.1f} tokens/s on this machine now (busy?): claude-mem's calls "
                    f"make it write up to {tokens} tokens within at most 300 s, which needs about {need:.0f} tokens/s; "
                    "claude-mem would pause its generator (the kit names it: tests/test_compression.py)")
    return speed
