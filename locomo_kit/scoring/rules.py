"""Rule-based judges: a binary verdict from the answer and the gold alone, no model.

- ``f1`` (**F1 ≥ 0.5**): the official LoCoMo token F1 of the answer is at least 0.5 (the binary basis
  the flip tables and the explorer used).
- ``f1-polarity`` (**F1 ≥ 0.5, yes/no polarity**): as ``f1``, but an answer whose yes/no polarity is the
  opposite of the gold's is wrong (gold "Likely no" against "Likely yes" scores F1 0.5 and is right by
  ``f1``).
- ``f1-strict`` (**F1 ≥ 0.5, yes/no polarity, numbers as words**): as ``f1-polarity``, with numbers written
  as words read as digits on both sides before F1 ("three" against gold "3" is right).

Every rule is named by its label wherever a view uses it ("F1 ≥ 0.5", never "correct").

:data:`DEFAULT_BASIS`, the rule that decides "right" wherever no judge decided (the explorer, the flip
tables, the error analysis), is the rule that agrees best with people on the labelled judge bank
(``locomo-kit judges --bank``; the figures are in docs/scoring.md): ``f1-polarity`` (86.7% agreement,
against 85.4% for ``f1``; ``f1-strict`` ties it and changes no verdict there, so the simpler rule is kept).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from locomo_kit.scoring.locomo_f1 import locomo_f1

THRESHOLD = 0.5
NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
NUMBER_WORDS.update({"once": "1", "twice": "2", "thrice": "3", "first": "1st", "second": "2nd", "third": "3rd"})
_WORD = re.compile(r"\b(" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)) + r")\b", re.I)
YES = {"yes", "yeah", "yep", "true", "correct"}
NO = {"no", "not", "never", "nope", "false", "neither", "none", "n't"}


def numbers_as_digits(text: str) -> str:
    """Number words ("three", "twice") as digits ("3", "2")."""
    return _WORD.sub(lambda m: NUMBER_WORDS[m.group(1).lower()], text)


def polarity(text: str) -> str | None:
    """``yes`` or ``no`` when the text's first clause answers yes or no (``Likely no``, ``No, …``), else None."""
    clause = re.split(r"[.,;:!?\n]", str(text).strip().lower(), maxsplit=1)[0]
    words = re.findall(r"[a-z']+", clause.replace("n't", " n't"))[:4]
    if not words:
        return None
    if any(w in NO for w in words):
        return "no"
    if any(w in YES for w in words):
        return "yes"
    return None


def f1_rule(prediction: str, gold: str, category: int, f1: float | None = None) -> bool:
    """``f1``: the answer's official F1 when already scored (``scores.jsonl``), else computed here."""
    return (locomo_f1(prediction, gold, category) if f1 is None else f1) >= THRESHOLD


def polarity_rule(prediction: str, gold: str, category: int, f1: float | None = None) -> bool:
    g = polarity(gold)
    if g is not None and polarity(prediction) not in (None, g):
        return False
    if g is not None and polarity(prediction) == g and len(str(gold).split()) <= 2:
        return True  # gold "Yes" / "Likely no": the polarity is the whole answer
    return f1_rule(prediction, gold, category, f1)


def strict_rule(prediction: str, gold: str, category: int, f1: float | None = None) -> bool:
    """Numbers written as words change the F1, so it is computed here whatever was scored."""
    return polarity_rule(numbers_as_digits(str(prediction)), numbers_as_digits(str(gold)), category)


@dataclass(frozen=True)
class Rule:
    name: str  # the verdict set's name
    label: str  # how every view names the basis
    decide: Callable[..., bool]  # (prediction, gold, category, f1=None) -> right?


RULES: dict[str, Rule] = {r.name: r for r in (
    Rule("rule:f1", "F1 ≥ 0.5", f1_rule),
    Rule("rule:f1-polarity", "F1 ≥ 0.5, yes/no polarity", polarity_rule),
    Rule("rule:f1-strict", "F1 ≥ 0.5, yes/no polarity, numbers as words", strict_rule),
)}

DEFAULT_BASIS = RULES["rule:f1-polarity"]


def default_verdict(prediction: str, gold: str, category: int, f1: float | None = None) -> bool:
    """Right by the default basis (:data:`DEFAULT_BASIS`); ``f1``: the official F1 already scored, if any."""
    return DEFAULT_BASIS.decide(str(prediction or ""), str(gold or ""), int(category), f1)
