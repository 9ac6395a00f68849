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


class RetryableError(LLMError):
    """A transient failure (429, 5xx, overloaded, connection): worth another try."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


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


class LLM(Protocol):
    provider: str
    model: str

    def complete(self, messages: Sequence[dict], system: str = "", max_tokens: int = 256,
                 temperature: float | None = None) -> Completion: ...


def with_retries(call: Callable[[], T], retries: int = 5, base_delay: float = 1.0, max_delay: float = 60.0,
                 sleep: Callable[[float], None] = time.sleep, on_retry: Callable[[int, Exception], None] | None = None) -> T:
    """Run ``call``; on :class:`RetryableError` wait (exponential backoff, full jitter, or the
    server's retry-after) and try again, up to ``retries`` more times."""
    attempt = 0
    while True:
        try:
            return call()
        except RetryableError as exc:
            if attempt >= retries:
                raise LLMError(f"{exc} (gave up after {retries + 1} attempts)") from exc
            delay = exc.retry_after if exc.retry_after is not None else random.uniform(0, min(max_delay, base_delay * 2 ** attempt))
            attempt += 1
            if on_retry:
                on_retry(attempt, exc)
            sleep(delay)
