"""``anthropic/<model>``: the Anthropic Messages API through the official SDK.

API versions (scoring.md §3): the SDK's default version rejects sampling parameters, so on it no
``temperature`` is sent (the model's own sampling is used, and the completion records that).
``api_version="2023-06-01"`` is the explicit legacy opt-in on which ``temperature`` is sent.

Retries: single Messages calls made by the call pool are one attempt each (``attempt``), because
the pool coordinates 429/529 back-off across all its threads, which the SDK's per-request retry
cannot; ``complete`` retries with jittered back-off on its own; the Batches endpoints and the
preflight use the SDK's own retry machinery (``sdk_retries``).
"""

from __future__ import annotations

import os
import time
import warnings
from typing import Sequence

from locomo_kit.llm.base import (
    Completion,
    LLMConfigError,
    LLMError,
    LLMRequest,
    RequestRejected,
    RetryableError,
    with_retries,
)

LEGACY_API_VERSION = "2023-06-01"
DEFAULT_TIMEOUT = 120.0


class AnthropicLLM:
    provider = "anthropic"

    def __init__(self, model: str, api_key: str | None = None, base_url: str | None = None,
                 api_version: str | None = None, retries: int = 5, timeout: float | None = None, sleep=time.sleep,
                 sdk_retries: int = 4) -> None:
        try:
            import anthropic  # deferred: the SDK loads only when this provider is used
        except ImportError as exc:
            raise LLMConfigError("The anthropic provider needs the SDK: pip install anthropic==2.14.0") from exc
        key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise LLMConfigError(f"anthropic/{model} needs an API key: export ANTHROPIC_API_KEY=… (offline and "
                                 "free: --answer-model extractive to answer, no --judge-model to score F1 only)")
        self._anthropic = anthropic
        self.model = model
        self.api_version = api_version or os.environ.get("LOCOMO_ANTHROPIC_API_VERSION") or None
        headers = {"anthropic-version": self.api_version} if self.api_version else None
        self.timeout = timeout or DEFAULT_TIMEOUT
        self._client = anthropic.Anthropic(api_key=key, base_url=base_url or os.environ.get("ANTHROPIC_BASE_URL"),
                                           max_retries=0, timeout=self.timeout, default_headers=headers)
        self.base_url = str(self._client.base_url).rstrip("/")
        self.retries, self._sleep, self.sdk_retries = retries, sleep, sdk_retries
        self._warned = False

    @property
    def sends_temperature(self) -> bool:
        return self.api_version == LEGACY_API_VERSION

    @property
    def batches(self):
        """The SDK's Message Batches resource, with the SDK's own retries switched on."""
        return self._client.with_options(max_retries=self.sdk_retries).messages.batches

    def request_body(self, request: LLMRequest) -> tuple[dict, dict]:
        """(the Messages API body for ``request``, the parameters as recorded with the completion)."""
        body: dict = {"model": self.model, "max_tokens": request.max_tokens, "messages": list(request.messages)}
        if request.system:
            body["system"] = request.system
        params: dict = {"api_version": self.api_version or "sdk-default", "max_tokens": request.max_tokens}
        if request.temperature is not None:
            if self.sends_temperature:
                body["temperature"] = request.temperature
                params["temperature"] = request.temperature
            else:
                params["temperature"] = "not sent (API version rejects sampling parameters)"
                if not self._warned:
                    warnings.warn(f"temperature={request.temperature} not sent: the default Anthropic API version "
                                  f"rejects sampling parameters; set LOCOMO_ANTHROPIC_API_VERSION={LEGACY_API_VERSION} "
                                  "to send it")
                    self._warned = True
        return body, params

    def completion_from(self, message, params: dict, latency_ms: float = 0.0) -> Completion:
        """A :class:`Completion` from an SDK ``Message`` (a direct reply or a batch result)."""
        text = "".join(getattr(b, "text", "") for b in message.content)
        return Completion(text=text, input_tokens=message.usage.input_tokens, output_tokens=message.usage.output_tokens,
                          provider=self.provider, model=self.model, latency_ms=latency_ms, params=params)

    def attempt(self, request: LLMRequest) -> Completion:
        """One call, no retry: raises RetryableError (429/5xx/529/connection), LLMConfigError (401/403),
        RequestRejected (other 4xx)."""
        body, params = self.request_body(request)
        temperature = body.pop("temperature", None)
        kwargs = dict(body, extra_body={"temperature": temperature}) if temperature is not None else body
        start = time.perf_counter()
        try:
            resp = self._client.messages.create(**kwargs)
        except self._anthropic.APIStatusError as exc:
            raise classify_status(exc.status_code, f"anthropic {exc.status_code} from {self.base_url}: {exc}",
                                  _retry_after(exc)) from exc
        except self._anthropic.APITimeoutError as exc:
            raise RetryableError(f"anthropic call to {self.base_url}: timed out: no reply within {self.timeout:g} s (--timeout)",
                                 timed_out=True) from exc
        except self._anthropic.APIConnectionError as exc:
            raise RetryableError(f"anthropic connection to {self.base_url}: {exc}") from exc
        return self.completion_from(resp, params, (time.perf_counter() - start) * 1000)

    def complete(self, messages: Sequence[dict], system: str = "", max_tokens: int = 256,
                 temperature: float | None = None) -> Completion:
        request = LLMRequest(list(messages), system, max_tokens, temperature)
        return with_retries(lambda: self.attempt(request), self.retries, sleep=self._sleep)


def classify_status(status: int, message: str, retry_after: float | None = None) -> LLMError:
    """The kit's error for an HTTP status from an LLM server."""
    if status in (429, 529):
        return RetryableError(message, retry_after, throttled=True)
    if status >= 500 or status in (408, 409):
        return RetryableError(message, retry_after)
    if status in (401, 403):
        return LLMConfigError(f"{message} (check the API key, ANTHROPIC_API_KEY / OPENAI_API_KEY, and its permissions)")
    return RequestRejected(message, status)


def _retry_after(exc) -> float | None:
    try:
        headers = exc.response.headers
        if headers.get("retry-after-ms"):
            return float(headers["retry-after-ms"]) / 1000
        value = headers.get("retry-after")
        return float(value) if value else None
    except (AttributeError, ValueError, TypeError):
        return None
