"""What memworker refuses to keep, and how it keeps conversation text from acting as instructions.

Secrets: card numbers (13-19 digits passing the Luhn check), US social security and UK national
insurance numbers, and API keys/tokens of well-known shapes are replaced by ``[redacted <kind>]``
*before* anything is written to disk, so they are never stored.

Instructions: memories are always stored as something a speaker said ("Caroline said: ..."),
never as a rule for the system. A sentence that reads as an instruction to an assistant (e.g.
"from now on answer sarcastically", "ignore previous instructions") is additionally flagged
``instruction_like`` in metadata, typed ``quote`` and given importance 0.1, so that it is
neither ranked as a preference nor presented as one.
"""

from __future__ import annotations

import re

_CARD = re.compile(r"\b(?:\d[ -]?){12,18}\d\b")
_SSN = re.compile(r"\b\d{3}-\d{2}-\d{4}\b")
_NINO = re.compile(r"\b[A-CEGHJ-PR-TW-Z]{2}\s?\d{2}\s?\d{2}\s?\d{2}\s?[A-D]\b")
_KEYS = re.compile(
    r"\b(?:sk-(?:ant-)?[A-Za-z0-9_\-]{16,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{30,}"
    r"|xox[abpr]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_\-]{35})"
)
_KEY_ASSIGN = re.compile(r"(?i)\b(api[_ -]?key|secret|password|token)\b(\s*(?:is|=|:)\s*)(\S{8,})")

_INSTRUCTION = re.compile(
    r"(?i)\b(?:from now on|ignore (?:all |any )?(?:previous|prior|above) (?:instructions|messages)"
    r"|disregard (?:all |any )?(?:previous|prior) |you (?:must|should) (?:always|never)"
    r"|(?:always|never) (?:answer|respond|reply|say)|system prompt|act as (?:a|an) "
    r"|(?:answer|respond|reply) (?:only )?(?:in|with) (?:a |an )?\w+ (?:tone|style|voice)"
    r"|(?:answer|respond|reply) sarcastically|pretend (?:to be|you are))"
)


def _luhn_ok(digits: str) -> bool:
    total, parity = 0, len(digits) % 2
    for i, ch in enumerate(digits):
        d = int(ch)
        if i % 2 == parity:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _card(m: re.Match) -> str:
    digits = re.sub(r"\D", "", m.group(0))
    return "[redacted card number]" if 13 <= len(digits) <= 19 and _luhn_ok(digits) else m.group(0)


def redact_secrets(text: str) -> tuple[str, list[str]]:
    """Return ``text`` with secrets replaced, and the kinds that were found."""
    found: list[str] = []

    def sub(pattern: re.Pattern, repl, kind: str, s: str) -> str:
        new = pattern.sub(repl, s)
        if new != s:
            found.append(kind)
        return new

    text = sub(_CARD, _card, "card number", text)
    text = sub(_SSN, "[redacted national id]", "national id", text)
    text = sub(_NINO, "[redacted national id]", "national id", text)
    text = sub(_KEYS, "[redacted api key]", "api key", text)
    text = sub(_KEY_ASSIGN, lambda m: f"{m.group(1)}{m.group(2)}[redacted secret]", "secret", text)
    return text, found


def is_instruction_like(text: str) -> bool:
    return bool(_INSTRUCTION.search(text))


def redact_json(value: object) -> tuple[object, list[str]]:
    """``redact_secrets`` applied to every string inside a JSON value."""
    found: list[str] = []

    def walk(v: object) -> object:
        if isinstance(v, str):
            new, kinds = redact_secrets(v)
            found.extend(kinds)
            return new
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        return v

    return walk(value), found
