"""What memworker refuses to keep, and how it keeps conversation text from acting as instructions.

Secrets: card numbers (13-19 digits passing the Luhn check), US social security numbers (dashed,
spaced, or bare after "SSN"), UK national insurance numbers, API keys and tokens of well-known
shapes (OpenAI, Anthropic, Stripe, AWS access and secret keys, GitHub, Slack, Google, JWTs,
bearer tokens), PEM private keys, and values assigned to a secret's name (``password=...``, a
JSON key ``"api_key"``) are replaced by ``[redacted <kind>]`` *before* anything is written to
disk, in every stored field and JSON key, so they are never stored.

Instructions: memories are always stored as something a speaker said ("Caroline said: ..."),
never as a rule for the system. Text that reads as an instruction to an AI (``memworker.injection``:
"ignore previous instructions", a spoofed system or tool message, "the assistant reading this
should…") is additionally flagged ``instruction_like`` (with the signals that fired) in metadata,
typed ``quote`` and given importance 0.1, on every route that stores memories, so that it is
neither ranked as a preference nor presented as one.
"""

from __future__ import annotations

import re

from memworker.injection import is_instruction_like, screen  # noqa: F401  (re-exported)

_CARD = re.compile(r"\b(?:\d[ -]?){12,22}\d\b")
_SSN = re.compile(r"\b\d{3}[- ]\d{2}[- ]\d{4}\b")
_SSN_BARE = re.compile(r"(?i)\b(ssn|social[ -]security(?:[ -]n(?:umber|o\.?))?|soc\.? ?sec\.?)(\W{1,20}|\s+(?:is|was|number|no\.?)\s*:?\s*)(\d{9})\b")
_NINO = re.compile(r"\b[A-CEGHJ-PR-TW-Z]{2}\s?\d{2}\s?\d{2}\s?\d{2}\s?[A-D]\b")
_KEYS = re.compile(
    r"\b(?:sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}|(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|xox[abpr]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_\-]{35})"
)
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")
_PEM = re.compile(r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----[\s\S]*?(?:-----END[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\Z)")
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{16,}")
_SECRET_NAME = r"(?:api[_ -]?key|secret(?:[_ -]?(?:access[_ -]?)?key)?|passw(?:or)?d|passphrase|token|access[_ -]?key|private[_ -]?key|credentials?)"
_KEY_ASSIGN = re.compile(r"(?i)(?<![A-Za-z])(" + _SECRET_NAME + r")([\"']?\s*(?:is|=|:|:=)\s*[\"']?)([^\s\"',;]{8,})")
_SECRET_KEY_NAME = re.compile(r"(?i)(?<![A-Za-z])" + _SECRET_NAME + r"(?![a-z])|authorization|cookie")


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
    """Redact the 13-19 digit run inside the match that passes the Luhn check (the match may carry a
    few extra digits before or after, e.g. ``id-1-4111 1111 1111 1111``)."""
    text = m.group(0)
    where = [i for i, ch in enumerate(text) if ch.isdigit()]
    digits = "".join(text[i] for i in where)
    n = len(digits)
    for start in range(0, min(4, n)):
        for end in range(n, max(start + 12, n - 4), -1):
            if 13 <= end - start <= 19 and _luhn_ok(digits[start:end]):
                return text[:where[start]] + "[redacted card number]" + text[where[end - 1] + 1:]
    return text


def _aws_secret(m: re.Match) -> str:
    token = m.group(0)
    mixed = any(c.islower() for c in token) and any(c.isupper() for c in token) and any(c.isdigit() for c in token)
    return "[redacted aws secret key]" if mixed else token


def redact_secrets(text: str) -> tuple[str, list[str]]:
    """Return ``text`` with secrets replaced, and the kinds that were found."""
    found: list[str] = []

    def sub(pattern: re.Pattern, repl, kind: str, s: str) -> str:
        new = pattern.sub(repl, s)
        if new != s:
            found.append(kind)
        return new

    text = sub(_PEM, "[redacted private key]", "private key", text)
    text = sub(_JWT, "[redacted token]", "token", text)
    text = sub(_BEARER, lambda m: f"{m.group(1)} [redacted token]", "token", text)
    text = sub(_KEYS, "[redacted api key]", "api key", text)
    text = sub(_KEY_ASSIGN, lambda m: f"{m.group(1)}{m.group(2)}[redacted secret]", "secret", text)
    text = sub(_AWS_SECRET, _aws_secret, "aws secret key", text)
    text = sub(_CARD, _card, "card number", text)
    text = sub(_SSN, "[redacted national id]", "national id", text)
    text = sub(_SSN_BARE, lambda m: f"{m.group(1)}{m.group(2)}[redacted national id]", "national id", text)
    text = sub(_NINO, "[redacted national id]", "national id", text)
    return text, found


def redact_json(value: object) -> tuple[object, list[str]]:
    """``redact_secrets`` applied to every string inside a JSON value, object keys included; the
    whole value of a key that names a secret (``password``, ``api_key``, ``authorization``...)."""
    found: list[str] = []

    def text(v: str) -> str:
        new, kinds = redact_secrets(v)
        found.extend(kinds)
        return new

    def walk(v: object) -> object:
        if isinstance(v, str):
            return text(v)
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            out = {}
            for k, x in v.items():
                key = text(k) if isinstance(k, str) else k
                if isinstance(k, str) and isinstance(x, str) and x and _SECRET_KEY_NAME.search(k) \
                        and not x.startswith("[redacted"):
                    found.append("secret")
                    out[key] = "[redacted secret]"
                else:
                    out[key] = walk(x)
            return out
        return v

    return walk(value), found


def json_depth(value: object) -> int:
    """How deeply a JSON value nests (a scalar: 0), without recursion."""
    depth, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (list, dict)):
            depth = max(depth, d)
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return depth
