"""The LoCoMo paper's official per-question score (snap-research/locomo, task_eval/evaluation.py).

Reproduced exactly, quirks included (scoring.md §2): commas removed before lower-casing, the
words a/an/the/and dropped, Porter stemming, multiset overlap, 0 when nothing overlaps (even for
two empty strings), category 1 scored per comma-separated gold part, category 3 gold cut at the
first ``;``, category 5 scored by refusal phrases.
"""

from __future__ import annotations

import string
from collections import Counter
from functools import lru_cache

import numpy as np
import regex
from nltk.stem import PorterStemmer

_PUNCTUATION = set(string.punctuation)
_ARTICLES = regex.compile(r"\b(a|an|the|and)\b")
_STEMMER = PorterStemmer()
REFUSAL_PHRASES = ("no information available", "not mentioned")


def normalize_answer(text: str) -> str:
    """Official normalisation: drop commas, lowercase, drop punctuation, drop a/an/the/and."""
    text = text.replace(",", "").lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return _STEMMER.stem(word)


def stemmed_tokens(text: str) -> list[str]:
    return list(_stemmed(text))


@lru_cache(maxsize=16384)  # the same answers and retrieved memories are scored by several rules and reports
def _stemmed(text: str) -> tuple[str, ...]:
    return tuple(_stem(w) for w in normalize_answer(text).split())


def token_f1(prediction: str, answer: str) -> float:
    """Official token F1 over stemmed, normalised tokens (multiset overlap)."""
    pred = _stemmed(prediction)
    gold = _stemmed(answer)
    common = sum((Counter(pred) & Counter(gold)).values())
    if common == 0:
        return 0.0
    precision = common / len(pred)
    recall = common / len(gold)
    return 2 * precision * recall / (precision + recall)


def multi_answer_f1(prediction: str, answer: str) -> float:
    """Category 1: mean over gold parts of the best F1 against any prediction part."""
    preds = [p.strip() for p in prediction.split(",")]
    golds = [g.strip() for g in answer.split(",")]
    return float(np.mean([max(token_f1(p, g) for p in preds) for g in golds]))


def is_refusal(prediction: str) -> bool:
    lowered = prediction.lower()
    return any(p in lowered for p in REFUSAL_PHRASES)


def locomo_f1(prediction: str, answer: object, category: int) -> float:
    """The official LoCoMo score of one answer, by category id (1-5)."""
    prediction = str(prediction)
    if category == 5:
        return 1.0 if is_refusal(prediction) else 0.0
    gold = str(answer)
    if category == 3:
        gold = gold.split(";")[0].strip()
    if category in (2, 3, 4):
        return token_f1(prediction, gold)
    if category == 1:
        return multi_answer_f1(prediction, gold)
    raise ValueError(f"category must be 1-5, got {category!r}")
