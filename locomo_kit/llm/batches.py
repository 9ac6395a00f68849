"""Message Batches (``--batch``): a stage's pending requests as one batch (50% price).

- Each request's ``custom_id`` is its cache key (64 hex characters, the API's limit), so results
  are matched by ``custom_id`` whatever their order, and each result lands in the cache.
- Above 100,000 requests or 256 MB a stage is split into several batches.
- A batch id is appended to ``batches.jsonl`` in the run folder (fsynced) *before* polling, so a
  killed command, rerun, polls the same batch instead of paying for a second one.
- Failed items (errored, expired, canceled) are resubmitted once, alone, in a new batch; what
  still fails is reported as failed (pending for the next run), never as a result.
"""

from __future__ import annotations

import json
import time
from typing import Callable

from tqdm.auto import tqdm

from locomo_kit.llm.base import Completion, LLMConfigError, LLMRequest
from locomo_kit.progress import tqdm_disable
from locomo_kit.runs import RunFolder, utc_now

BATCHES_FILE = "batches.jsonl"
MAX_REQUESTS = 100_000
MAX_BYTES = 256 * 1024 * 1024
RETRYABLE_ERRORS = {"api_error", "overloaded_error", "rate_limit_error", "timeout_error"}


def split(items: list[dict], max_requests: int = MAX_REQUESTS, max_bytes: int = MAX_BYTES) -> list[list[dict]]:
    """``items`` (batch request dicts) in consecutive chunks within both limits (5% margin for the envelope)."""
    chunks: list[list[dict]] = [[]]
    size = 0
    budget = int(max_bytes * 0.95)
    for item in items:
        n = len(json.dumps(item, ensure_ascii=False).encode()) + 2
        if chunks[-1] and (len(chunks[-1]) >= max_requests or size + n > budget):
            chunks.append([])
            size = 0
        chunks[-1].append(item)
        size += n
    return [c for c in chunks if c]


def open_batches(run: RunFolder, stage: str) -> list[dict]:
    """Batches of ``stage`` submitted but not yet collected, oldest first."""
    submitted: dict[str, dict] = {}
    for r in run.records(BATCHES_FILE):
        if r.get("event") == "submitted" and r.get("stage") == stage:
            submitted[r["batch_id"]] = r
        elif r.get("event") == "collected":
            submitted.pop(r.get("batch_id"), None)
    return list(submitted.values())


def run_batches(llm, pending: dict[str, LLMRequest], run: RunFolder, stage: str,
                store: Callable[[str, Completion], None],
                deliver: Callable[[str, Completion | None, str | None, int], None],
                poll_interval: float = 30.0, resubmit_rounds: int = 1, log: Callable[[str], None] = print,
                progress: bool | None = None, sleep: Callable[[float], None] = time.sleep) -> list[str]:
    """Make ``pending`` (cache key → request) through Message Batches; returns the batch ids used."""
    if getattr(llm, "provider", None) != "anthropic":
        raise LLMConfigError(f"--batch needs an anthropic/<model> (Message Batches), not {llm.provider}/{llm.model}")
    todo = dict(pending)
    used: list[str] = []
    failures: dict[str, str] = {}

    def collect(batch_id: str) -> None:
        nonlocal failures
        done, bad = _collect(llm, batch_id, todo, store, run, poll_interval, log, progress, sleep)
        used.append(batch_id)
        for key, completion in done.items():
            deliver(key, completion, None, 1)
            todo.pop(key)
            failures.pop(key, None)
        failures.update(bad)

    for b in open_batches(run, stage):
        if set(b["custom_ids"]) & todo.keys():
            log(f"{stage}: resuming Message Batch {b['batch_id']} ({len(b['custom_ids']):,} requests, submitted "
                f"{b['at']})")
            collect(b["batch_id"])
    covered_rounds = 0
    while todo and covered_rounds <= resubmit_rounds:
        retry = [k for k in todo if k not in failures or _retryable(failures[k])] if covered_rounds else list(todo)
        if not retry:
            break
        items = [{"custom_id": key, "params": llm.request_body(todo[key])[0]} for key in retry]
        submitted = []
        for chunk in split(items, MAX_REQUESTS, MAX_BYTES):  # all chunks run at once; each recorded before polling
            batch = llm.batches.create(requests=chunk)
            run.append(BATCHES_FILE, {"event": "submitted", "stage": stage, "batch_id": batch.id,
                                      "custom_ids": [i["custom_id"] for i in chunk], "model": llm.model,
                                      "server": getattr(llm, "base_url", None), "at": utc_now()})
            what = "resubmitted the failed items as" if covered_rounds else "submitted"
            log(f"{stage}: {what} Message Batch {batch.id} ({len(chunk):,} requests); recorded in {BATCHES_FILE}")
            submitted.append(batch.id)
        for batch_id in submitted:
            collect(batch_id)
        covered_rounds += 1
    for key in list(todo):
        deliver(key, None, failures.get(key, "no result in any batch"), 1)
    return used


def _retryable(error: str) -> bool:
    return any(t in error for t in RETRYABLE_ERRORS) or error.startswith(("expired", "canceled"))


def _collect(llm, batch_id: str, todo: dict[str, LLMRequest], store, run: RunFolder, poll_interval: float, log,
             progress: bool | None, sleep) -> tuple[dict[str, Completion], dict[str, str]]:
    """Poll ``batch_id`` until it ends (progress from its request counts), then match its results."""

    batch = llm.batches.retrieve(batch_id)
    total = sum(batch.request_counts.model_dump().values())
    bar = tqdm(total=total, desc=f"batch {batch_id[-8:]}", unit="req", disable=tqdm_disable(progress))
    start = last_line = time.monotonic()
    while batch.processing_status != "ended":
        counts = batch.request_counts
        bar.n = total - counts.processing
        bar.set_postfix_str(f"{batch.processing_status}, {counts.processing:,} processing")
        bar.refresh()
        if bar.disable and time.monotonic() - last_line >= 300:  # no bar (CI, a log file): a line every 5 min
            log(f"batch {batch_id}: {batch.processing_status}, {counts.processing:,} of {total:,} requests processing, "
                f"{time.monotonic() - start:.0f} s")
            last_line = time.monotonic()
        sleep(poll_interval)
        batch = llm.batches.retrieve(batch_id)
    bar.n = total
    bar.close()
    counts = batch.request_counts
    log(f"batch {batch_id} ended after {time.monotonic() - start:.0f} s of polling: {counts.succeeded:,} succeeded, "
        f"{counts.errored:,} errored, {counts.expired:,} expired, {counts.canceled:,} canceled")
    done: dict[str, Completion] = {}
    bad: dict[str, str] = {}
    for item in llm.batches.results(batch_id):
        key = item.custom_id
        result = item.result
        if key not in todo:
            continue
        if result.type == "succeeded":
            completion = llm.completion_from(result.message, llm.request_body(todo[key])[1])
            store(key, completion)
            done[key] = completion
        elif result.type == "errored":
            err = result.error.error
            bad[key] = f"batch {batch_id}: {err.type}: {getattr(err, 'message', '')}"
        else:
            bad[key] = f"{result.type} in batch {batch_id}"
    run.append(BATCHES_FILE, {"event": "collected", "batch_id": batch_id, "succeeded": len(done), "failed": len(bad),
                              "at": utc_now()})
    return done, bad
