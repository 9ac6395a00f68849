"""LLM access: providers chosen by a string, a disk cache, retries, and a scripted fake for tests.

``make_llm("anthropic/claude-sonnet-4-6")``, ``make_llm("openai/qwen2.5", base_url=...)``,
``make_llm("auto")`` (Anthropic when ANTHROPIC_API_KEY is set, else None: the offline path).
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

from locomo_kit.llm.anthropic_llm import AnthropicLLM
from locomo_kit.llm.base import LLM, Completion, LLMConfigError, LLMError, RetryableError, with_retries
from locomo_kit.llm.cache import CachedLLM, CompletionCache
from locomo_kit.llm.fake import ScriptedLLM
from locomo_kit.llm.openai_llm import OpenAICompatibleLLM

PROVIDERS = ("anthropic", "openai", "extractive", "auto")
DEFAULT_ANSWER_MODEL = "anthropic/claude-opus-4-6"
DEFAULT_JUDGE_MODEL = "anthropic/claude-sonnet-4-6"


def resolve_auto(spec: str, default: str) -> str:
    """``auto`` → ``default`` (an Anthropic model) when a key is set, else ``extractive``."""
    if spec != "auto":
        return spec
    return default if os.environ.get("ANTHROPIC_API_KEY") else "extractive"


def make_llm(spec: str, base_url: str | None = None, cache_path: str | Path | None = None, **kwargs) -> LLM | None:
    """An LLM for ``provider/model``; None for ``extractive`` (no model)."""
    if spec == "extractive":
        return None
    provider, _, model = spec.partition("/")
    if provider not in PROVIDERS or provider in ("extractive", "auto") or not model:
        close = difflib.get_close_matches(provider, PROVIDERS, n=1)
        hint = f" Did you mean '{close[0]}/…'?" if close else ""
        raise LLMConfigError(f"Unknown model '{spec}': use anthropic/<model>, openai/<model>, extractive or auto.{hint}")
    if provider == "anthropic":
        llm: LLM = AnthropicLLM(model, base_url=base_url, **kwargs)
    else:
        llm = OpenAICompatibleLLM(model, base_url=base_url, **kwargs)
    return CachedLLM(llm, CompletionCache(cache_path)) if cache_path else llm


__all__ = ["DEFAULT_ANSWER_MODEL", "DEFAULT_JUDGE_MODEL", "LLM", "PROVIDERS", "AnthropicLLM", "CachedLLM", "Completion",
           "CompletionCache", "LLMConfigError", "LLMError", "OpenAICompatibleLLM", "RetryableError", "ScriptedLLM",
           "make_llm", "resolve_auto", "with_retries"]
