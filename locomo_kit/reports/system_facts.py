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


def setting_value(v: Any) -> str:
    """One setting as a table cell: text and numbers as they are, lists and mappings as compact JSON."""
    if isinstance(v, (dict, list, tuple)):
        return json.dumps(v, sort_keys=True, default=str)
    return "–" if v is None or v == "" else str(v)


def fact_rows(m: dict[str, Any]) -> list[list[str]]:
    """The system's rows of the run facts: what it is, then one row per setting it reported (the settings
    that only place it, such as its port or database path, left out), each labelled as the system's own
    option so that it is not read as the kit's retrieval settings."""
    w = m.get("system") or m.get("worker") or {}
    settings = w.get("settings")
    rows = [["memory system", f"{system_label(m)} ({w.get('url', '–')})"]]
    if not isinstance(settings, dict):
        return rows + [["system settings", "–" if not settings else setting_value(settings)]]
    kept = {k: v for k, v in settings.items() if k not in PLACEMENT_SETTINGS}
    if not kept:
        return rows + [["system settings", "–"]]
    name = w.get("name") or "the system"
    return rows + [[f"system option `{k}` ({name}'s own)", setting_value(v)] for k, v in sorted(kept.items())]


def source_phrase(m: dict[str, Any], source: str) -> str:
    """Where the answers' context came from, for the report's summary line."""
    if source == "memory":
        return f"memories retrieved from {system_label(m) or 'the Worker'}"
    if source == "oracle":
        return ("the gold evidence turns only (**oracle source**: no memory system; evidence recall is 1 by "
                "construction, so the scores measure the answerer alone)")
    return "the full conversation"
