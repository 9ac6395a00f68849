"""The one LLM interface: ``complete(messages, system, max_tokens, temperature) -> Completion``."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence, TypeVar

T = TypeVar("T")


class LLMError(RuntimeError):
    """A call failed for good (after retries, or a request the API refused)."""


class LLMConfigError(LLMError):
    """A provider cannot be used as configured: missing SDK, key or base URL (the message says what to do)."""


class RequestRejected(LLMError):
    """The server refused the request itself (400, 404, 413, 422): retrying the same request cannot help."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class RetryableError(LLMError):
    """A transient failure (429, 5xx, overloaded, connection): worth another try.

    ``throttled`` marks the server saying "too many" (429, 529 overloaded): the call pool then
    slows down for everyone, not only for the thread that was told.
    """

    def __init__(self, message: str, retry_after: float | None = None, throttled: bool = False,
                 timed_out: bool = False) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.throttled = throttled
        self.timed_out = timed_out  # no reply in time: the server may still be computing it


@dataclass
class Completion:
    text: str
    input_tokens: int
    output_tokens: int
    provider: str
    model: str
    latency_ms: float = 0.0
    cached: bool = False
    params: dict = field(default_factory=dict)  # what was actually sent: api_version, temperature, ...


@dataclass
class LLMRequest:
    """One call, as data: what the call pool and Message Batches execute and the cache keys."""

    messages: list[dict]
    system: str = ""
    max_tokens: int = 256
    temperature: float | None = None
    prompt_version: str = ""
    salt: str = ""  # e.g. the judge run index: N runs are N samples, each cached separately


class LLM(Protocol):
    provider: str
    model: str

    def complete(self, messages: Sequence[dict], system: str = "", max_tokens: int = 256,
                 temperature: float | None = None) -> Completion: ...


def backoff_delay(attempt: int, retry_after: float | None, base_delay: float = 1.0, max_delay: float = 60.0) -> float:
    """Seconds to wait before retry number ``attempt + 1``: the server's ``retry-after`` plus up to
    half of it again (so that threads told the same value do not return together), else exponential
    back-off with full jitter."""
    if retry_after is not None and retry_after >= 0:
        return retry_after + random.uniform(0, max(0.05, retry_after / 2))
    return random.uniform(0, min(max_delay, base_delay * 2 ** attempt))


def with_retries(call: Callable[[], T], retries: int = 5, base_delay: float = 1.0, max_delay: float = 60.0,
                 sleep: Callable[[float], None] = time.sleep, on_retry: Callable[[int, Exception], None] | None = None) -> T:
    """Run ``call``; on :class:`RetryableError` wait (:func:`backoff_delay`) and try again, up to
    ``retries`` more times."""
    attempt = 0
    while True:
        try:
            return call()
        except RetryableError as exc:
            if attempt >= retries:
                raise LLMError(f"{exc} (gave up after {retries + 1} attempts)") from exc
            delay = backoff_delay(attempt, exc.retry_after, base_delay, max_delay)
            attempt += 1
            if on_retry:
                on_retry(attempt, exc)
            sleep(delay)
