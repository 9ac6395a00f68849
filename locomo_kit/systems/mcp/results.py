"""An MCP tool's result read the way its profile says: structured content, JSON in its text, or text
matched by a regex; then each item's text, id, turn id and score by dotted path."""

from __future__ import annotations

import json
import re
from typing import Any

from locomo_kit.systems.base import MemorySystemError
from locomo_kit.systems.mcp.profiles import ResultMap


def pick(value: Any, path: str | None) -> Any:
    """``value`` at a dotted path (``results.0.title``); None when any step is missing."""
    if not path:
        return value
    for step in path.split("."):
        if isinstance(value, dict):
            value = value.get(step)
        elif isinstance(value, list) and step.isdigit() and int(step) < len(value):
            value = value[int(step)]
        else:
            return None
    return value


def payload(result: dict, rmap: ResultMap, what: str) -> Any:
    """The JSON a result carries (``structured`` or ``json-text``), or its joined text (``text``)."""
    texts = result.get("text") or []
    if rmap.kind == "structured":
        data = result.get("structured")
        if data is None:
            raise MemorySystemError(f"{what}: the result has no structured content (its text: "
                                    f"{' '.join(texts)[:300]!r}); the profile's results = \"structured\" does not fit "
                                    f"this tool: try \"json-text\" or \"text\"")
        return data
    joined = "\n".join(texts)
    if rmap.kind == "json-text":
        try:
            return json.loads(joined)
        except ValueError:
            raise MemorySystemError(f"{what}: the result's text is not JSON ({joined[:300]!r}); the profile's "
                                    "results = \"json-text\" does not fit this tool (if that is its answer when "
                                    "nothing is held, name it with none_if = \"<a regex of that text>\")") from None
    return joined


def items_of(result: dict, rmap: ResultMap, what: str) -> tuple[list[Any], int | None]:
    """The result's items, and its ``total`` when the profile names one."""
    if rmap.none_if and re.search(rmap.none_if, "\n".join(result.get("text") or [])):
        return [], (0 if rmap.total else None)
    data = payload(result, rmap, what)
    if rmap.kind == "text":
        assert rmap.pattern is not None
        items = [m.groupdict() for m in re.finditer(rmap.pattern, data, re.MULTILINE)]
        return items, None
    total = None
    if rmap.total:
        value = pick(data, rmap.total)
        if not isinstance(value, (int, float)):
            raise MemorySystemError(f"{what}: no number at {rmap.total!r} in the result ({str(data)[:300]})")
        total = int(value)
    if total is not None and not rmap.items:
        return [], total
    items = pick(data, rmap.items)
    if items is None and total is not None:
        return [], total
    if not isinstance(items, list):
        raise MemorySystemError(f"{what}: no list at {rmap.items or 'the top'!r} of the result ({str(data)[:300]})")
    return items, total


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return "\n".join(_text(v) for v in value)
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def memory_fields(item: Any, rmap: ResultMap) -> dict[str, Any]:
    """text, id, turn and score of one item (score as a float or None; turn the LoCoMo dia_id or None)."""
    turn = pick(item, rmap.turn) if rmap.turn else None
    if turn is not None and rmap.turn_pattern:
        match = re.search(rmap.turn_pattern, str(turn))
        turn = match.group(1) if match else None
    raw_score = pick(item, rmap.score) if rmap.score else None
    try:
        score = float(raw_score) if raw_score is not None else None
    except (TypeError, ValueError):
        score = None
    ident = pick(item, rmap.id) if rmap.id else None
    return {"text": _text(pick(item, rmap.text)), "id": None if ident is None else str(ident),
            "turn": None if turn is None else str(turn), "score": score}
