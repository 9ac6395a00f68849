"""The report's lines about the memory system a run measured (name, version, where, settings) or the
oracle source that stood in for one."""

from __future__ import annotations

import json
from typing import Any

from locomo_kit.worker.identity import PLACEMENT_SETTINGS


def system_label(m: dict[str, Any]) -> str:
    """``bm25 0.3.16`` (the name and version the run's answers came from), followed by the system's own
    ``label`` setting when it has one (``mem0 2.2.1 (Mem0 without LLM extraction)``)."""
    w = m.get("system") or m.get("worker") or {}
    base = f"{w.get('name', '–')} {w.get('version') or ''}".strip()
    own = (w.get("settings") or {}).get("label") if isinstance(w.get("settings"), dict) else None
    return f"{base} ({own})" if own else base


def run_system(m: dict[str, Any], source: str) -> str:
    """What the run's context came from, in a table row's label: ``bm25 0.3.16``, ``oracle``, ``full conversation``."""
    if source == "oracle":
        return "oracle: gold evidence turns"
    return system_label(m) if source == "memory" else "full conversation"


def fact_rows(m: dict[str, Any]) -> list[list[str]]:
    w = m.get("system") or m.get("worker") or {}
    settings = w.get("settings")
    if isinstance(settings, dict):
        settings = {k: v for k, v in settings.items() if k not in PLACEMENT_SETTINGS}
    return [["memory system", f"{system_label(m)} ({w.get('url', '–')})"],
            ["system settings", json.dumps(settings, sort_keys=True, default=str) if settings else "–"]]


def source_phrase(m: dict[str, Any], source: str) -> str:
    """Where the answers' context came from, for the report's summary line."""
    if source == "memory":
        return f"memories retrieved from {system_label(m) or 'the Worker'}"
    if source == "oracle":
        return ("the gold evidence turns only (**oracle source**: no memory system; evidence recall is 1 by "
                "construction, so the scores measure the answerer alone)")
    return "the full conversation"
