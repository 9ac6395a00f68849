"""One shared call pool: worker threads that execute many :class:`LLMRequest` s across questions,
behind one :class:`Throttle`.

The throttle admits a call when (a) fewer than ``limit`` calls are in flight, (b) the requests-
and input-tokens-per-minute buckets allow it, and (c) no server-requested pause is running.
``limit`` starts small and doubles while calls succeed, up to ``concurrency`` (slow start); a
429/529 halves it once per generation of calls (not once per thread that was told) and a
``retry-after`` pauses every thread, each retrying after the pause plus its own jitter. So a
server that allows few calls at a time gets few extra requests, and one that allows many gets
``concurrency`` calls in flight within seconds.

A *local* server (:mod:`locomo_kit.llm.servers`: loopback, private, or not a known hosted API)
may be one CPU serving one call at a time, and says nothing when calls queue. For it the pool
starts with one call (or the slots the server reports), and latency sets the pace: a call that
took ``QUEUE_RATIO`` times the fastest call's latency while others were in flight was queued, so the
limit drops to what the server actually served in parallel (``in flight / ratio``), and grows only
while calls come back at uncontended speed. A timeout cuts the limit as a 429 does; a timed-out
call is resent only once the server is idle again (``PoolSettings.wait_idle``), never while the
server still computes it. The threads are daemons: Ctrl-C returns at once, without waiting for
the calls in flight (whose results the next run takes from the server again or the cache).
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterable

from locomo_kit.llm.base import Completion, LLMConfigError, LLMError, LLMRequest, RetryableError, backoff_delay
from locomo_kit.progress import stage_progress

INITIAL_LIMIT = 4
QUEUE_RATIO = 1.8  # latency over the uncontended one above which a call is taken to have queued
GROW_RATIO = 1.4  # below it calls come back at uncontended speed: room for one more


@dataclass
class CallOutcome:
    request: LLMRequest
    completion: Completion | None
    error: str | None = None
    attempts: int = 0

    @property
    def ok(self) -> bool:
        return self.completion is not None


@dataclass
class PoolSettings:
    concurrency: int = 16
    rpm: float | None = None  # requests per minute (None: no client-side cap)
    tpm: float | None = None  # input tokens per minute
    retries: int = 6
    base_delay: float = 1.0
    max_delay: float = 60.0
    local: bool = False  # a non-hosted server: start with one call, latency sets the pace
    slots: int | None = None  # the parallel slots the server reports (llama.cpp's /props)
    wait_idle: Callable[[Callable[[], bool]], None] | None = None  # before resending a timed-out call


class _Bucket:
    """A token bucket refilled at ``per_minute / 60`` per second, holding at most 5 seconds' worth."""

    def __init__(self, per_minute: float, now: float) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate * 5)
        self.level, self.stamp = self.capacity, now

    def wait_for(self, amount: float, now: float) -> float:
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now
        amount = min(amount, self.capacity)
        return 0.0 if self.level >= amount else (amount - self.level) / self.rate

    def take(self, amount: float) -> None:
        self.level -= min(amount, self.capacity)


class Throttle:
    def __init__(self, concurrency: int, rpm: float | None = None, tpm: float | None = None,
                 clock: Callable[[], float] = time.monotonic, local: bool = False, slots: int | None = None) -> None:
        self.max = max(1, min(concurrency, slots) if slots else concurrency)
        self.local = local
        self.limit = min(self.max, slots or (1 if local else INITIAL_LIMIT))
        self.slow_start = True
        self.base_latency: float | None = None  # the uncontended latency (local servers)
        self.queued = 0  # calls seen to have waited in the server's queue
        self.in_flight = self.generation = self._streak = 0
        self.paused_until = 0.0
        self.throttled = self.peak = 0
        self._clock = clock
        self._cv = threading.Condition()
        now = clock()
        self._requests = _Bucket(rpm, now) if rpm else None
        self._tokens = _Bucket(tpm, now) if tpm else None

    def acquire(self, tokens: int = 0) -> int:
        """Block until a call may start; returns its generation ticket for :meth:`release`."""
        with self._cv:
            while True:
                now = self._clock()
                if now < self.paused_until:
                    self._cv.wait(self.paused_until - now)
                    continue
                if self.in_flight >= self.limit:
                    self._cv.wait(1.0)
                    continue
                wait = max(self._requests.wait_for(1, now) if self._requests else 0.0,
                           self._tokens.wait_for(tokens, now) if self._tokens else 0.0)
                if wait > 0:
                    self._cv.wait(wait)
                    continue
                if self._requests:
                    self._requests.take(1)
                if self._tokens:
                    self._tokens.take(tokens)
                self.in_flight += 1
                self.peak = max(self.peak, self.in_flight)
                return self.generation

    def release(self, ticket: int, ok: bool = True, throttled: bool = False, retry_after: float | None = None,
                latency: float | None = None, sent_with: int = 1) -> None:
        """``latency``: seconds the call took; ``sent_with``: calls in flight when it was sent (itself included)."""
        with self._cv:
            self.in_flight -= 1
            if ok and not throttled and self.local and latency:
                if self._paced(latency, sent_with):
                    self._cv.notify_all()
                    return
            if throttled:
                self.throttled += 1
                if retry_after:
                    self.paused_until = max(self.paused_until, self._clock() + retry_after)
                if ticket == self.generation:  # the first 429 of this generation cuts; the rest were sent before the cut
                    self.limit = max(1, self.limit // 2)
                    self.slow_start = False
                    self.generation += 1
                    self._streak = 0
            elif ok and self.limit < self.max:
                self._streak += 1
                # slow start: +1 per success (doubling per round); after a throttle: +1 per max(limit, 8) successes
                if self.slow_start or self._streak >= max(self.limit, 8):
                    self.limit += 1
                    self._streak = 0
            self._cv.notify_all()

    def _paced(self, latency: float, sent_with: int) -> bool:
        """Latency pacing for a local server; True when the call showed queueing (no growth then)."""
        # the fastest call seen: a call's latency is never below its own compute time, queued or not
        self.base_latency = latency if self.base_latency is None else min(self.base_latency, latency)
        ratio = latency / self.base_latency
        if sent_with > 1 and ratio > QUEUE_RATIO:
            self.queued += 1
            served = max(1, int(sent_with / ratio + 0.5))
            if served < self.limit:
                self.limit = served
                self.generation += 1
            self.slow_start = False
            self._streak = 0
            return True
        return ratio >= GROW_RATIO  # between the two: hold


def run_pool(attempt: Callable[[LLMRequest], Completion], requests: Iterable[LLMRequest], settings: PoolSettings,
             on_result: Callable[[CallOutcome], None], tokens_of: Callable[[LLMRequest], int] = lambda r: 0,
             desc: str = "calls", progress: bool | None = None, sleep: Callable[[float], None] = time.sleep) -> Throttle:
    """Execute ``requests`` with ``attempt`` (one try each) on ``settings.concurrency`` threads.

    ``on_result`` is called in the calling thread as each call finishes (so callers may write
    records without locks). A call that still fails after ``settings.retries`` retries, or that
    the server refuses (4xx), yields an outcome with ``error``; a 401/403 stops the calls not yet
    started (they fail with the same reason) instead of sending each of them to be refused.
    """
    requests = list(requests)
    throttle = Throttle(settings.concurrency, settings.rpm, settings.tpm, local=settings.local, slots=settings.slots)
    stop: list[str] = []

    def work(request: LLMRequest) -> CallOutcome:
        tries = 0
        while True:
            if stop:
                return CallOutcome(request, None, f"not sent: {stop[0]}", tries)
            ticket = throttle.acquire(tokens_of(request))
            sent_with = throttle.in_flight
            tries += 1
            start = time.monotonic()
            try:
                completion = attempt(request)
            except RetryableError as exc:
                timed_out = getattr(exc, "timed_out", False)
                throttle.release(ticket, ok=False, throttled=exc.throttled or timed_out, retry_after=exc.retry_after)
                if tries > settings.retries:
                    return CallOutcome(request, None, f"{exc} (gave up after {tries} attempts)", tries)
                if timed_out and settings.wait_idle is not None:
                    settings.wait_idle(lambda: bool(stop))  # never resent while the server still computes it
                else:
                    sleep(backoff_delay(tries - 1, exc.retry_after, settings.base_delay, settings.max_delay))
                continue
            except LLMConfigError as exc:
                throttle.release(ticket, ok=False)
                stop.append(str(exc))
                return CallOutcome(request, None, f"{type(exc).__name__}: {exc}", tries)
            except LLMError as exc:
                throttle.release(ticket, ok=False)
                return CallOutcome(request, None, f"{type(exc).__name__}: {exc}", tries)
            except Exception as exc:  # an SDK or parsing surprise must not lose the other calls
                throttle.release(ticket, ok=False)
                return CallOutcome(request, None, f"{type(exc).__name__}: {exc}", tries)
            throttle.release(ticket, ok=True, latency=time.monotonic() - start, sent_with=sent_with)
            return CallOutcome(request, completion, None, tries)

    todo: queue.SimpleQueue = queue.SimpleQueue()
    done: queue.SimpleQueue = queue.SimpleQueue()
    for r in requests:
        todo.put(r)

    def worker() -> None:
        while not stop:
            try:
                request = todo.get_nowait()
            except queue.Empty:
                return
            try:
                done.put(work(request))
            except BaseException as exc:
                done.put(CallOutcome(request, None, f"{type(exc).__name__}: {exc}", 0))


    bar = stage_progress(len(requests), desc, "call", progress)
    threads = [threading.Thread(target=worker, name=f"llm-pool-{i}", daemon=True)
               for i in range(min(max(1, settings.concurrency), len(requests)))]
    for t in threads:
        t.start()
    try:
        for _ in range(len(requests)):
            while True:
                try:
                    outcome = done.get(timeout=0.25)
                    break
                except queue.Empty:
                    continue
            on_result(outcome)
            bar.set_postfix_str(f"{throttle.in_flight} in flight, limit {throttle.limit}", refresh=False)
            bar.update()
    except BaseException:
        stop.append("interrupted")  # the daemon threads send nothing more; calls in flight are left
        raise
    finally:
        bar.close()
    return throttle
