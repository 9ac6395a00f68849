"""Waiting for a compressing Worker's queue, and noticing when its generator has stopped for good.

claude-mem gives each compressor call ``CLAUDE_MEM_LLM_TIMEOUT_MS`` (30,000 ms by default, at most
300,000); a call that takes longer is aborted, the log says "Generator paused for transport", and
the generator is never restarted: ``/api/processing-status`` stays ``isProcessing: true,
queueDepth: 1`` forever. A working generator finishes each call within that timeout, so a queue
that shows no progress (same depth, no new observation) for two of those timeouts and a margin
has a paused generator: the kit stops then, naming the setting, instead of waiting out the whole
session timeout. The timeout is read from claude-mem's ``GET /api/settings``; a Worker without
that route (memworker, stand-ins) gets the plain queue wait.
"""

from __future__ import annotations

import time
from typing import Callable

from locomo_kit.worker.client import WorkerClient, WorkerError, WorkerTimeout

CLAUDE_MEM_DEFAULT_LLM_TIMEOUT_MS = 30_000
CLAUDE_MEM_MAX_LLM_TIMEOUT_MS = 300_000
MARGIN_S = 15.0


class GeneratorPaused(WorkerTimeout):
    """The Worker's compressor stopped working on a queued item (claude-mem: its LLM call timed out)."""


def llm_timeout_s(client: WorkerClient) -> float | None:
    """claude-mem's per-call compressor timeout in seconds (None: not a claude-mem Worker)."""
    try:
        settings = client._request("GET", "/api/settings")
    except WorkerError:
        return None
    if not isinstance(settings, dict) or not any(str(k).startswith("CLAUDE_MEM_") for k in settings):
        return None
    raw = settings.get("CLAUDE_MEM_LLM_TIMEOUT_MS")
    try:
        ms = int(str(raw).strip()) if raw not in (None, "") else CLAUDE_MEM_DEFAULT_LLM_TIMEOUT_MS
    except ValueError:
        ms = CLAUDE_MEM_DEFAULT_LLM_TIMEOUT_MS
    if not 500 <= ms <= CLAUDE_MEM_MAX_LLM_TIMEOUT_MS:  # claude-mem ignores it then and uses its default
        ms = CLAUDE_MEM_DEFAULT_LLM_TIMEOUT_MS
    return ms / 1000


def paused_message(stalled_s: float, llm_timeout: float) -> str:
    said = (f"the Worker's compressor made no progress for {stalled_s:.0f} s with isProcessing set (queue depth "
            f"unchanged, no new observation): its generator has paused. claude-mem gives each compressor call "
            f"CLAUDE_MEM_LLM_TIMEOUT_MS = {llm_timeout * 1000:.0f} ms and never retries one that took longer "
            "(its log says \"Generator paused for transport\")")
    if llm_timeout * 1000 >= CLAUDE_MEM_MAX_LLM_TIMEOUT_MS:
        return (said + ". That is claude-mem's maximum already: its compressor server is too slow for it (claude-mem "
                "asks for up to 4,096 tokens a call): use a faster server (a GPU, a less loaded machine) or a model "
                "that answers in fewer tokens, restart the Worker, then rerun to resume")
    return (said + ". A slow compressor server needs more: set CLAUDE_MEM_LLM_TIMEOUT_MS (at most 300000) in "
            "~/.claude-mem/settings.json, or `scripts/claude-mem-peer start --llm-timeout-ms 300000`, and restart "
            "the Worker; then rerun to resume")


def wait_for_queue(client: WorkerClient, project: str, timeout: float, poll_interval: float = 3.0,
                   llm_timeout: float | None = None, clock: Callable[[], float] = time.monotonic,
                   sleep: Callable[[float], None] = time.sleep) -> float:
    """Wait until the Worker's queue is empty; returns the seconds waited. Raises
    :class:`GeneratorPaused` after ``2 * llm_timeout + MARGIN_S`` without progress (when
    ``llm_timeout`` is known) and :class:`WorkerTimeout` after ``timeout``."""
    if llm_timeout is None:
        return client.wait_for_processing(timeout=timeout, poll_interval=poll_interval)
    stall_limit = 2 * llm_timeout + MARGIN_S
    start = last_change = clock()
    seen: tuple | None = None
    delay = min(0.02, poll_interval)
    while True:
        status = client.processing_status()
        depth = int(status.get("queueDepth", 0))
        if depth == 0 and not status.get("isProcessing", False):
            return clock() - start
        now = clock()
        mark = (depth, sum(1 for _ in client.iter_observations(project)))
        if mark != seen:
            seen, last_change = mark, now
        elif status.get("isProcessing") and now - last_change > stall_limit:
            raise GeneratorPaused(paused_message(now - last_change, llm_timeout))
        if now - start > timeout:
            raise WorkerTimeout(f"Worker queue not empty after {timeout:.0f} s (queueDepth {depth}, "
                                "GET /api/processing-status)")
        sleep(delay)
        delay = min(poll_interval, delay * 1.2)
