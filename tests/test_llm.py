"""LLM providers through the real SDKs against stand-in servers on loopback; cache; factory."""

from __future__ import annotations

import pytest

from locomo_kit.llm import CachedLLM, CompletionCache, LLMConfigError, LLMError, make_llm, resolve_auto
from locomo_kit.llm.anthropic_llm import AnthropicLLM
from locomo_kit.llm.openai_llm import OpenAICompatibleLLM

from support.claude_mem_standin import serve
from support.llm_standins import (
    OVERLOADED,
    RATE_LIMITED,
    Script,
    anthropic_app,
    anthropic_message,
    openai_app,
    openai_completion,
)

NO_SLEEP = {"sleep": lambda s: None}


def test_anthropic_exact_request_on_default_api_version(monkeypatch):
    script = Script([(200, anthropic_message("7 May 2023", 120, 6))])
    with serve(anthropic_app(script)) as url:
        llm = AnthropicLLM("claude-sonnet-4-6", api_key="sk-test", base_url=url, **NO_SLEEP)
        with pytest.warns(UserWarning, match="temperature=0.5 not sent"):
            c = llm.complete([{"role": "user", "content": "When?"}], system="Be brief.", max_tokens=256, temperature=0.5)
    (req,) = script.requests
    assert req["body"] == {"model": "claude-sonnet-4-6", "max_tokens": 256, "system": "Be brief.",
                           "messages": [{"role": "user", "content": "When?"}]}  # no sampling parameters
    assert req["headers"]["anthropic-version"] == "2026-10-21"
    assert req["headers"]["authorization"] == "Bearer sk-test"
    assert (c.text, c.input_tokens, c.output_tokens) == ("7 May 2023", 120, 6)
    assert c.params["api_version"] == "sdk-default" and "not sent" in c.params["temperature"]


def test_anthropic_legacy_api_version_sends_temperature():
    script = Script([(200, anthropic_message("ok"))])
    with serve(anthropic_app(script)) as url:
        llm = AnthropicLLM("claude-sonnet-4-6", api_key="k", base_url=url, api_version="2023-06-01", **NO_SLEEP)
        c = llm.complete([{"role": "user", "content": "x"}], max_tokens=256, temperature=0.5)
    (req,) = script.requests
    assert req["headers"]["anthropic-version"] == "2023-06-01"
    assert req["body"]["temperature"] == 0.5 and "system" not in req["body"]
    assert c.params == {"api_version": "2023-06-01", "max_tokens": 256, "temperature": 0.5}


def test_the_stand_in_rejects_temperature_like_the_current_api():
    """Proof that sending temperature on the default version fails: the kit must never do it."""
    import anthropic

    script = Script([(200, anthropic_message("ok"))])
    with serve(anthropic_app(script)) as url:
        client = anthropic.Anthropic(api_key="k", base_url=url, max_retries=0)
        with pytest.raises(anthropic.BadRequestError, match="Extra inputs are not permitted"):
            client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}],
                                   extra_body={"temperature": 0.5})


def test_anthropic_retries_429_and_529_then_succeeds():
    script = Script([RATE_LIMITED, OVERLOADED, (200, anthropic_message("done"))])
    with serve(anthropic_app(script)) as url:
        c = AnthropicLLM("m", api_key="k", base_url=url, **NO_SLEEP).complete([{"role": "user", "content": "x"}])
    assert c.text == "done" and len(script.requests) == 3


def test_anthropic_gives_up_after_retries_and_does_not_retry_400():
    script = Script([OVERLOADED])
    with serve(anthropic_app(script)) as url:
        with pytest.raises(LLMError, match="gave up after 3 attempts"):
            AnthropicLLM("m", api_key="k", base_url=url, retries=2, **NO_SLEEP).complete([{"role": "user", "content": "x"}])
        assert len(script.requests) == 3
        bad = Script([(400, {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}})])
    with serve(anthropic_app(bad)) as url:
        with pytest.raises(LLMError, match="anthropic 400"):
            AnthropicLLM("m", api_key="k", base_url=url, **NO_SLEEP).complete([{"role": "user", "content": "x"}])
    assert len(bad.requests) == 1


def test_anthropic_missing_key_says_what_to_set(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(LLMConfigError, match="export ANTHROPIC_API_KEY"):
        AnthropicLLM("m")


def test_openai_compatible_request_retries_and_usage():
    script = Script([(429, {"error": {"message": "busy"}}), (503, {"error": {"message": "down"}}),
                     (200, openai_completion("Paris", 40, 2))])
    with serve(openai_app(script)) as url:
        llm = OpenAICompatibleLLM("qwen2.5", base_url=f"{url}/v1", api_key="local", **NO_SLEEP)
        c = llm.complete([{"role": "user", "content": "Where?"}], system="Short.", max_tokens=64, temperature=0.0)
    assert c.text == "Paris" and (c.input_tokens, c.output_tokens) == (40, 2)
    body = script.requests[-1]["body"]
    assert body["model"] == "qwen2.5" and body["max_tokens"] == 64 and body["temperature"] == 0.0
    assert body["messages"] == [{"role": "system", "content": "Short."}, {"role": "user", "content": "Where?"}]
    assert len(script.requests) == 3


def test_openai_needs_base_url(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(LLMConfigError, match="base URL"):
        OpenAICompatibleLLM("m")


def test_factory_and_auto(monkeypatch):
    assert make_llm("extractive") is None
    with pytest.raises(LLMConfigError, match="Did you mean 'anthropic/"):
        make_llm("antropic/claude")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert resolve_auto("auto", "anthropic/claude-opus-4-6") == "extractive"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    assert resolve_auto("auto", "anthropic/claude-opus-4-6") == "anthropic/claude-opus-4-6"
    assert resolve_auto("openai/x", "anthropic/y") == "openai/x"


def test_disk_cache_makes_a_rerun_free(tmp_path):
    script = Script([(200, openai_completion("first")), (200, openai_completion("second"))])
    with serve(openai_app(script)) as url:
        def llm():
            return CachedLLM(OpenAICompatibleLLM("m", base_url=f"{url}/v1", **NO_SLEEP), CompletionCache(tmp_path / "c.sqlite"))
        a = llm().complete([{"role": "user", "content": "q"}], prompt_version="v1")
        b = llm().complete([{"role": "user", "content": "q"}], prompt_version="v1")  # a new process would see this
        c = llm().complete([{"role": "user", "content": "q"}], prompt_version="v2")
        d = llm().complete([{"role": "user", "content": "q"}], prompt_version="v1", salt="run-1")
    assert (a.text, a.cached) == ("first", False)
    assert (b.text, b.cached) == ("first", True)
    assert c.text == "second" and not c.cached and d.text == "second"
    assert len(script.requests) == 3
