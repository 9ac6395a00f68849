"""``openai/<model>``: any OpenAI-compatible server (vLLM, llama.cpp server, Ollama, LM Studio).

The base URL comes from the argument or ``OPENAI_BASE_URL`` (e.g. ``http://127.0.0.1:8000/v1``);
the key from ``OPENAI_API_KEY`` (local servers accept any). Without a ``timeout`` a call may take
120 s on a hosted API and 900 s on any other server (:func:`~locomo_kit.llm.servers.default_timeout`:
a CPU model can take minutes).
"""

from __future__ import annotations

import os
import time
from typing import Sequence

from locomo_kit.llm.anthropic_llm import classify_status
from locomo_kit.llm.base import Completion, LLMConfigError, LLMRequest, RetryableError, with_retries
from locomo_kit.llm.servers import default_timeout


class OpenAICompatibleLLM:
    provider = "openai"

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None, retries: int = 5,
                 timeout: float | None = None, sleep=time.sleep) -> None:
        try:
            import openai  # deferred: the SDK loads only when this provider is used
        except ImportError as exc:
            raise LLMConfigError("The openai provider needs the SDK: pip install openai==3.57.0") from exc
        base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        if not base_url:
            raise LLMConfigError("openai/… needs a base URL: --answer-base-url/--judge-base-url "
                                 "http://127.0.0.1:8000/v1 or export OPENAI_BASE_URL=…")
        self._openai = openai
        self.model, self.base_url = model, base_url.rstrip("/")
        self.timeout = timeout or default_timeout(self.base_url)
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key or os.environ.get("OPENAI_API_KEY") or "local",
                                     max_retries=0, timeout=self.timeout)
        self.retries, self._sleep = retries, sleep

    def attempt(self, request: LLMRequest) -> Completion:
        """One call, no retry (see :class:`~locomo_kit.llm.anthropic_llm.AnthropicLLM`)."""
        msgs = ([{"role": "system", "content": request.system}] if request.system else []) + list(request.messages)
        kwargs: dict = {"model": self.model, "messages": msgs, "max_tokens": request.max_tokens}
        if request.temperature is not None:
            kwargs["temperature"] = request.temperature
        params = {k: v for k, v in kwargs.items() if k in ("max_tokens", "temperature")} | {"base_url": self.base_url}
        start = time.perf_counter()
        try:
            resp = self._client.chat.completions.create(**kwargs)
        except self._openai.APIStatusError as exc:
            retry_after = None
            try:
                retry_after = float(exc.response.headers.get("retry-after"))
            except (TypeError, ValueError, AttributeError):
                pass
            raise classify_status(exc.status_code, f"openai-compatible {exc.status_code} from {self.base_url}: {exc}",
                                  retry_after) from exc
        except self._openai.APITimeoutError as exc:
            raise RetryableError(f"openai-compatible call to {self.base_url}: timed out: no reply within {self.timeout:g} s "
                                 "(--timeout)", timed_out=True) from exc
        except self._openai.APIConnectionError as exc:
            raise RetryableError(f"openai-compatible connection to {self.base_url}: {exc}") from exc
        usage = resp.usage
        return Completion(text=resp.choices[0].message.content or "",
                          input_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                          output_tokens=getattr(usage, "completion_tokens", 0) or 0,
                          provider=self.provider, model=self.model,
                          latency_ms=(time.perf_counter() - start) * 1000, params=params)

    def complete(self, messages: Sequence[dict], system: str = "", max_tokens: int = 256,
                 temperature: float | None = None) -> Completion:
        request = LLMRequest(list(messages), system, max_tokens, temperature)
        return with_retries(lambda: self.attempt(request), self.retries, sleep=self._sleep)
