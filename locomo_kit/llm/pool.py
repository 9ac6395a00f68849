"""One shared call pool: worker threads that execute many :class:`LLMRequest` s across questions,
behind one :class:`Throttle`.

The throttle admits a call when (a) fewer than ``limit`` calls are in flight, (b) the requests-
and input-tokens-per-minute buckets allow it, and (c) no server-requested pause is running.
``limit`` starts small and doubles while calls succeed, up to ``concurrency`` (slow start); a
429/529 halves it once per generation of calls (not once per thread that was told) and a
``retry-after`` pauses every thread, each retrying after the pause plus its own jitter. So a
server that allows few calls at a time gets few extra requests, and one that allows many gets
``concurrency`` calls in flight within seconds.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Callable, Iterable

from tqdm.auto import tqdm

from locomo_kit.llm.base import Completion, LLMConfigError, LLMError, LLMRequest, RetryableError, backoff_delay

INITIAL_LIMIT = 4


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
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.max = max(1, concurrency)
        self.limit = min(self.max, INITIAL_LIMIT)
        self.slow_start = True
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

    def release(self, ticket: int, ok: bool = True, throttled: bool = False, retry_after: float | None = None) -> None:
        with self._cv:
            self.in_flight -= 1
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
    throttle = Throttle(settings.concurrency, settings.rpm, settings.tpm)
    stop: list[str] = []

    def work(request: LLMRequest) -> CallOutcome:
        tries = 0
        while True:
            if stop:
                return CallOutcome(request, None, f"not sent: {stop[0]}", tries)
            ticket = throttle.acquire(tokens_of(request))
            tries += 1
            try:
                completion = attempt(request)
            except RetryableError as exc:
                throttle.release(ticket, ok=False, throttled=exc.throttled, retry_after=exc.retry_after)
                if tries > settings.retries:
                    return CallOutcome(request, None, f"{exc} (gave up after {tries} attempts)", tries)
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
            throttle.release(ticket, ok=True)
            return CallOutcome(request, completion, None, tries)

    bar = tqdm(total=len(requests), desc=desc, unit="call", disable=progress_disabled(progress))
    pool = ThreadPoolExecutor(max_workers=max(1, settings.concurrency), thread_name_prefix="llm-pool")
    try:
        futures = [pool.submit(work, r) for r in requests]
        for future in as_completed(futures):
            on_result(future.result())
            bar.update()
    except BaseException:
        stop.append("interrupted")
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        bar.close()
    pool.shutdown(wait=True)
    return throttle


def progress_disabled(progress: bool | None) -> bool | None:
    from locomo_kit.ingest import progress_enabled

    return progress_enabled() if progress is None else not progress
