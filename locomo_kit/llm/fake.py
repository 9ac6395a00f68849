"""A scripted LLM for tests: replies come from a list (cycled) or a function of the prompt."""

from __future__ import annotations

import threading
from typing import Callable, Sequence

from locomo_kit.llm.base import Completion, LLMError, LLMRequest


class ScriptedLLM:
    provider = "fake"

    def __init__(self, replies: Sequence[str | Exception] | Callable[[str, str], str], model: str = "scripted") -> None:
        self.model = model
        self._replies = replies
        self._i = 0
        self._lock = threading.Lock()
        self.calls: list[dict] = []

    def complete(self, messages: Sequence[dict], system: str = "", max_tokens: int = 256,
                 temperature: float | None = None) -> Completion:
        prompt = "\n".join(str(m.get("content", "")) for m in messages)
        with self._lock:
            self.calls.append({"system": system, "messages": list(messages), "max_tokens": max_tokens,
                               "temperature": temperature})
            if callable(self._replies):
                reply: str | Exception = self._replies(system, prompt)
            else:
                reply = self._replies[self._i % len(self._replies)]
                self._i += 1
        if isinstance(reply, Exception):
            raise reply if isinstance(reply, LLMError) else LLMError(str(reply))
        return Completion(text=reply, input_tokens=len(prompt) // 4, output_tokens=len(reply) // 4,
                          provider=self.provider, model=self.model, params={"temperature": temperature})

    def attempt(self, request: LLMRequest) -> Completion:
        return self.complete(request.messages, request.system, request.max_tokens, request.temperature)
