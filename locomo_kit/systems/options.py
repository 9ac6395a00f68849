"""A system's options as its user gives them: ``--system-option NAME=VALUE`` (repeatable), checked against the
:class:`~locomo_kit.systems.base.SystemOption` s the adapter declares and typed by them, before any work."""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from locomo_kit.systems.base import MemorySystem


def parse_pairs(pairs: Iterable[str]) -> dict[str, str]:
    """``["k1=1.2", "b=0.5"]`` as ``{"k1": "1.2", "b": "0.5"}``; a pair without ``=`` or a name given twice
    is a ValueError that says so."""
    out: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ValueError(f"--system-option takes NAME=VALUE, not {pair!r}")
        if name in out:
            raise ValueError(f"--system-option {name} is given twice")
        out[name] = value.strip()
    return out


def options_from_text(text: str) -> dict[str, Any]:
    """Options written as one string, as a notebook parameter passed by ``papermill -p`` arrives: a JSON
    object (``{"k1": 1.2}``) or comma-separated pairs (``k1=1.2,b=0.5``); empty text is no option."""
    text = text.strip()
    if not text:
        return {}
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"system options {text!r} are not a JSON object: {exc}") from None
        if not isinstance(value, dict):
            raise ValueError(f"system options {text!r} are not a JSON object")
        return value
    return parse_pairs(text.split(","))


def checked_options(system: str, cls: type[MemorySystem], options: Mapping[str, Any] | str | None) -> dict[str, Any]:
    """``options`` typed by what ``cls`` declares (text from the command line is parsed; values from the
    library are kept as given; one string is read by :func:`options_from_text`); an option it does not
    declare is a ValueError listing those it does."""
    if isinstance(options, str):
        options = options_from_text(options)
    declared = {o.name: o for o in cls.system_options}
    out: dict[str, Any] = {}
    for name, value in (options or {}).items():
        if name not in declared:
            takes = "; ".join(o.describe() for o in cls.system_options) or "none"
            raise ValueError(f"{system} takes no option {name} (its options: {takes}; `locomo-kit systems` lists "
                             "every system's)")
        out[name] = declared[name].parse(value) if isinstance(value, str) else value
    return out
