"""Resolve relative time expressions ("yesterday", "last week", "next month", "last Friday") to
absolute dates against the date of the session in which they were said.

Each resolution carries an ISO date (the day, or the first day of the week/month/year meant)
and a phrase in the style LoCoMo's gold answers use ("7 May 2023", "the week before 9 June 2023",
"the Friday before 9 June 2023", "2022").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta

WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
            "seven": 7, "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "a few": 3, "few": 3, "couple of": 2}
_UNIT = r"(day|week|month|year)s?"
_N = r"(\d+|a couple of|couple of|a few|few|an|a|one|two|three|four|five|six|seven|eight|nine|ten)"

PATTERNS = re.compile(
    r"\b(?:"
    r"(?P<yesterday>yesterday|last night)"
    r"|(?P<today>today|tonight|this morning|this afternoon|this evening)"
    r"|(?P<tomorrow>tomorrow)"
    rf"|(?P<ago>{_N}\s+{_UNIT}\s+ago)"
    r"|(?P<rel>(?P<dir>last|next|this|past|coming)\s+(?P<unit>week|weekend|month|year|"
    + "|".join(WEEKDAYS) + r"))"
    r"|(?P<on>on\s+(?P<onday>" + "|".join(WEEKDAYS) + r"))"
    r")\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Resolution:
    expression: str
    iso: str  # the day, or the first day of the period meant
    phrase: str
    granularity: str  # day, week, weekend, month, year


def fmt_day(d: date) -> str:
    return f"{d.day} {d:%B} {d.year}"


def _shift_months(d: date, months: int) -> date:
    y, m = divmod(d.month - 1 + months, 12)
    return date(d.year + y, m + 1, 1)


def _resolve(m: re.Match, ref: date) -> Resolution | None:
    expr = m.group(0)
    if m.group("yesterday"):
        d = ref - timedelta(days=1)
        return Resolution(expr, d.isoformat(), fmt_day(d), "day")
    if m.group("today"):
        return Resolution(expr, ref.isoformat(), fmt_day(ref), "day")
    if m.group("tomorrow"):
        d = ref + timedelta(days=1)
        return Resolution(expr, d.isoformat(), fmt_day(d), "day")
    if m.group("ago"):
        parts = expr.lower().split()
        n = int(parts[0]) if parts[0].isdigit() else _NUMBERS.get(" ".join(parts[:-2]), 1)
        unit = parts[-2].rstrip("s")
        if unit == "day":
            d = ref - timedelta(days=n)
            return Resolution(expr, d.isoformat(), fmt_day(d), "day")
        if unit == "week":
            d = ref - timedelta(weeks=n)
            return Resolution(expr, d.isoformat(), f"the week of {fmt_day(d)}", "week")
        if unit == "month":
            d = _shift_months(ref, -n)
            return Resolution(expr, d.isoformat(), f"{d:%B} {d.year}", "month")
        return Resolution(expr, date(ref.year - n, 1, 1).isoformat(), str(ref.year - n), "year")
    if m.group("rel"):
        direction, unit = m.group("dir").lower(), m.group("unit").lower()
        sign = {"last": -1, "past": -1, "next": 1, "coming": 1, "this": 0}[direction]
        when = "before" if sign < 0 else "after"
        if unit in WEEKDAYS:
            target = WEEKDAYS.index(unit)
            delta = (target - ref.weekday()) % 7
            if sign < 0:
                d = ref - timedelta(days=(ref.weekday() - target) % 7 or 7)
            elif sign > 0:
                d = ref + timedelta(days=delta or 7)
            else:
                d = ref + timedelta(days=delta)
            label = unit.capitalize()
            phrase = fmt_day(d) if sign == 0 else f"the {label} {when} {fmt_day(ref)}"
            return Resolution(expr, d.isoformat(), phrase, "day")
        if unit in ("week", "weekend"):
            d = ref + timedelta(weeks=sign)
            if sign == 0:
                return Resolution(expr, d.isoformat(), f"the {unit} of {fmt_day(ref)}", unit)
            return Resolution(expr, d.isoformat(), f"the {unit} {when} {fmt_day(ref)}", unit)
        if unit == "month":
            d = _shift_months(ref, sign)
            return Resolution(expr, d.isoformat(), f"{d:%B} {d.year}", "month")
        y = ref.year + sign
        return Resolution(expr, date(y, 1, 1).isoformat(), str(y), "year")
    if m.group("on"):
        target = WEEKDAYS.index(m.group("onday").lower())
        d = ref - timedelta(days=(ref.weekday() - target) % 7)
        return Resolution(expr, d.isoformat(), f"the {m.group('onday').capitalize()} before {fmt_day(ref)}"
                          if d != ref else fmt_day(d), "day")
    return None


def resolve_relative(text: str, ref: date) -> list[Resolution]:
    """Every relative time expression in ``text``, resolved against ``ref``."""
    out = []
    for m in PATTERNS.finditer(text):
        r = _resolve(m, ref)
        if r:
            out.append(r)
    return out
