"""``anthropic/<model>``: the Anthropic Messages API through the official SDK.

API versions (scoring.md §3): the SDK's default version rejects sampling parameters, so on it no
``temperature`` is sent (the model's own sampling is used, and the completion records that).
``api_version="2023-06-01"`` is the explicit legacy opt-in on which ``temperature`` is sent.
"""

from __future__ import annotations

import os
import time
import warnings
from typing import Sequence

from locomo_kit.llm.base import Completion, LLMConfigError, LLMError, RetryableError, with_retries

LEGACY_API_VERSION = "2023-06-01"


class AnthropicLLM:
    provider = "anthropic"

    def __init__(self, model: str, api_key: str | None = None, base_url: str | None = None,
                 api_version: str | None = None, retries: int = 5, timeout: float = 120.0, sleep=time.sleep) -> None:
        try:
            import anthropic
        except ImportError as exc:
            raise LLMConfigError("The anthropic provider needs the SDK: pip install anthropic==2.14.0") from exc
        key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise LLMConfigError("anthropic/… needs an API key: export ANTHROPIC_API_KEY=… "
                                 "(or use --answer-model extractive for an offline run)")
        self._anthropic = anthropic
        self.model = model
        self.api_version = api_version or os.environ.get("LOCOMO_ANTHROPIC_API_VERSION") or None
        headers = {"anthropic-version": self.api_version} if self.api_version else None
        self._client = anthropic.Anthropic(api_key=key, base_url=base_url or os.environ.get("ANTHROPIC_BASE_URL"),
                                           max_retries=0, timeout=timeout, default_headers=headers)
        self.retries, self._sleep = retries, sleep
        self._warned = False

    @property
    def sends_temperature(self) -> bool:
        return self.api_version == LEGACY_API_VERSION

    def complete(self, messages: Sequence[dict], system: str = "", max_tokens: int = 256,
                 temperature: float | None = None) -> Completion:
        extra_body = None
        params: dict = {"api_version": self.api_version or "sdk-default", "max_tokens": max_tokens}
        if temperature is not None:
            if self.sends_temperature:
                extra_body = {"temperature": temperature}
                params["temperature"] = temperature
            else:
                params["temperature"] = "not sent (API version rejects sampling parameters)"
                if not self._warned:
                    warnings.warn(f"temperature={temperature} not sent: the default Anthropic API version rejects "
                                  f"sampling parameters; set LOCOMO_ANTHROPIC_API_VERSION={LEGACY_API_VERSION} to send it")
                    self._warned = True
        kwargs = {"model": self.model, "max_tokens": max_tokens, "messages": list(messages)}
        if system:
            kwargs["system"] = system
        if extra_body:
            kwargs["extra_body"] = extra_body

        def call():
            start = time.perf_counter()
            try:
                resp = self._client.messages.create(**kwargs)
            except self._anthropic.RateLimitError as exc:
                raise RetryableError(f"anthropic 429: {exc}", _retry_after(exc)) from exc
            except self._anthropic.APIStatusError as exc:
                if exc.status_code >= 500:  # 500, 503, 529 overloaded
                    raise RetryableError(f"anthropic {exc.status_code}: {exc}", _retry_after(exc)) from exc
                if exc.status_code in (401, 403):
                    raise LLMConfigError(f"anthropic {exc.status_code}: check ANTHROPIC_API_KEY ({exc})") from exc
                raise LLMError(f"anthropic {exc.status_code}: {exc}") from exc
            except (self._anthropic.APIConnectionError, self._anthropic.APITimeoutError) as exc:
                raise RetryableError(f"anthropic connection: {exc}") from exc
            text = "".join(getattr(b, "text", "") for b in resp.content)
            return Completion(text=text, input_tokens=resp.usage.input_tokens, output_tokens=resp.usage.output_tokens,
                              provider=self.provider, model=self.model,
                              latency_ms=(time.perf_counter() - start) * 1000, params=params)

        return with_retries(call, self.retries, sleep=self._sleep)


def _retry_after(exc) -> float | None:
    try:
        value = exc.response.headers.get("retry-after")
        return float(value) if value else None
    except (AttributeError, ValueError):
        return None
