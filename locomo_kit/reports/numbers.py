"""How every report, page and table writes a number: one convention for all of them.

- a missing value (None, NaN) is "–", never "nan" or "None";
- thousands are separated by commas (``1,540``, ``12,345.6``), in every table and sentence;
- a float has a fixed number of digits after the point (one unless said otherwise); an int has none;
- a signed difference carries its sign (``+1.2``, ``-0.4``) and zero is ``0.0``, never ``+0.0`` or ``-0.0``.
"""

from __future__ import annotations

import math
from typing import Any

MISSING = "–"


def missing(v: Any) -> bool:
    """True for None and NaN: the values every formatter writes as "–"."""
    return v is None or (isinstance(v, float) and math.isnan(v))


def num(v: Any, digits: int = 1) -> str:
    """A number as a table shows it: ``1,234.5`` (float, ``digits`` after the point), ``1,540`` (int),
    "–" when missing; text and booleans as they are."""
    if missing(v):
        return MISSING
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    text = f"{v:,.{digits}f}"
    return text[1:] if text.startswith("-") and not any(c not in "-0.," for c in text) else text  # no "-0.0"


def signed(v: Any, digits: int = 1) -> str:
    """A difference with its sign: ``+1.2``, ``-0.4``, ``0.0``; "–" when missing."""
    if missing(v):
        return MISSING
    text = f"{v:+,.{digits}f}"
    return text[1:] if not any(c not in "+-0.," for c in text) else text


def pct(fraction: Any, digits: int = 1) -> str:
    """A fraction (0-1) as a percentage number without the sign: ``0.123`` → ``12.3``; "–" when missing."""
    return MISSING if missing(fraction) else num(100 * fraction, digits)


def interval(low: Any, high: Any, digits: int = 1) -> str:
    """A confidence interval: ``[12.3, 45.6]`` ("–" for a missing end)."""
    return f"[{num(low, digits)}, {num(high, digits)}]"


def signed_interval(low: Any, high: Any, digits: int = 1) -> str:
    """The interval of a difference: ``[-1.2, +3.4]``."""
    return f"[{signed(low, digits)}, {signed(high, digits)}]"


def p_value(p: Any) -> str:
    """A p-value: ``< 0.0001``, four digits below 0.01, three above."""
    if missing(p):
        return MISSING
    return "< 0.0001" if p < 1e-4 else f"{p:.4f}" if p < 0.01 else f"{p:.3f}"


def cell(v: Any, digits: int = 1) -> str:
    """A markdown table cell: text as it is, a number through :func:`num`."""
    return v if isinstance(v, str) else num(v, digits)


def markdown_table(header: list[str], rows: list[list[Any]]) -> list[str]:
    """A markdown table (with a blank line after it); numbers written by :func:`num`."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return out + ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows] + [""]
