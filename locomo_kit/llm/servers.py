"""What kind of server a base URL names, and what a local one says about itself.

A *hosted* API (api.anthropic.com, api.openai.com, OpenRouter, ...) serves many calls at once and
says "too many" with 429. Any other server (loopback, a private address, a host the kit does not
know) is treated as *local*: possibly one CPU and one slot, so the call pool starts with one call,
lets measured latency set the pace, waits long for a reply, and never resends a timed-out call
while the server may still be computing it.

llama.cpp's own server (``llama-server``) reports its slots (``GET /props`` → ``total_slots``,
``GET /slots`` → one entry per slot with ``is_processing``); llama-cpp-python's server reports none
and serves one call at a time (its ``/v1/models`` waits while it generates); vLLM and Ollama report
none.
"""

from __future__ import annotations

import ipaddress
import json
import urllib.error
import urllib.request
from urllib.parse import urlsplit

HOSTED_SUFFIXES = ("anthropic.com", "openai.com", "openrouter.ai", "together.xyz", "together.ai", "groq.com",
                   "fireworks.ai", "deepseek.com", "mistral.ai", "googleapis.com", "azure.com", "x.ai",
                   "cohere.com", "cohere.ai", "perplexity.ai", "deepinfra.com", "anyscale.com", "cerebras.ai",
                   "nebius.com", "sambanova.ai", "novita.ai", "hyperbolic.xyz")
HOSTED_TIMEOUT = 120.0
LOCAL_TIMEOUT = 900.0  # a CPU model's answer took 80-140 s here (Qwen2.5 1.5B), a long claude-mem prompt more


def host_of(base_url: str | None) -> str:
    return (urlsplit(base_url or "").hostname or "").lower()


def is_hosted(base_url: str | None) -> bool:
    """A known hosted API (None: the provider's default server, which is hosted)."""
    if not base_url:
        return True
    host = host_of(base_url)
    return any(host == s or host.endswith("." + s) for s in HOSTED_SUFFIXES)


def is_loopback(base_url: str | None) -> bool:
    host = host_of(base_url)
    if host in ("localhost", "localhost.localdomain") or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_private(base_url: str | None) -> bool:
    """Loopback, a private or link-local address, or a ``.local``/``.lan``/``.internal`` name."""
    host = host_of(base_url)
    if is_loopback(base_url) or host.endswith((".local", ".lan", ".internal", ".home.arpa")):
        return True
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        return False
    return addr.is_private or addr.is_link_local


def default_timeout(base_url: str | None) -> float:
    """Seconds per call when ``--timeout`` is not given: long for a server that may be one CPU."""
    return HOSTED_TIMEOUT if is_hosted(base_url) else LOCAL_TIMEOUT


def server_root(base_url: str) -> str:
    """``http://h:p/v1`` → ``http://h:p`` (llama.cpp's /props and /slots live at the root)."""
    url = base_url.rstrip("/")
    return url[:-3] if url.endswith("/v1") else url


def _get_json(url: str, timeout: float) -> object | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            if resp.status != 200:
                return None
            return json.loads(resp.read() or b"null")
    except (OSError, ValueError, urllib.error.URLError):
        return None


def reported_slots(base_url: str, timeout: float = 3.0) -> int | None:
    """The number of parallel slots the server reports (llama.cpp's ``/props``), else None."""
    props = _get_json(server_root(base_url) + "/props", timeout)
    if isinstance(props, dict):
        slots = props.get("total_slots")
        if isinstance(slots, int) and slots > 0:
            return slots
    return None


def server_busy(base_url: str, timeout: float = 3.0) -> bool | None:
    """True while the server still computes a call, False when idle, None when it cannot tell.

    llama.cpp's ``/slots`` says per slot; llama-cpp-python's ``/v1/models`` waits for the model
    lock, so no answer within ``timeout`` means busy there. Other servers answer ``/v1/models`` at
    once: for them this says idle (vLLM and Ollama stop computing a call whose client is gone).
    """
    slots = _get_json(server_root(base_url) + "/slots", timeout)
    if isinstance(slots, list) and slots and all(isinstance(s, dict) for s in slots):
        return any(s.get("is_processing") or s.get("state") == 1 for s in slots)
    try:
        with urllib.request.urlopen(base_url.rstrip("/") + "/models", timeout=timeout) as resp:
            resp.read()
            return False
    except TimeoutError:
        return True
    except urllib.error.URLError as exc:
        return True if isinstance(exc.reason, TimeoutError) else None
    except OSError:
        return None
