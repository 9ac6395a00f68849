"""The Mem0 paper's lexical metrics (mem0ai/mem0 evaluation/metrics/utils.py), for its F1/B1 columns.

Mem0's F1 lowercases, turns ``. , ! ?`` into spaces, splits on whitespace, and compares token
*sets* (no stemming, no stop words). Its BLEU-1 is nltk ``sentence_bleu`` with weights (1,0,0,0)
and smoothing method1 over ``nltk.word_tokenize`` tokens, reproduced offline with NLTK 3.9's rules
and punkt's English parameters (``mem0_tokenize``). Both equal the values Mem0's code wrote for
3,080 published answers (tests/fixtures/mem0_published_memobase.json.gz).
"""

from __future__ import annotations

from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

from locomo_kit.scoring.mem0_tokenize import word_tokenize

_SMOOTH = SmoothingFunction().method1


def mem0_tokenize(text: object) -> list[str]:
    text = str(text).lower()
    for ch in ".,!?":
        text = text.replace(ch, " ")
    return text.split()


def mem0_f1(prediction: object, answer: object) -> float:
    """Mem0's set-based token F1 (0 when either side is empty)."""
    if not prediction or not answer:
        return 0.0
    pred = set(mem0_tokenize(str(prediction).strip()))
    gold = set(mem0_tokenize(str(answer).strip()))
    if not pred or not gold:
        return 0.0
    common = len(pred & gold)
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def bleu1(prediction: object, answer: object) -> float:
    """Mem0's BLEU-1 (0 when either side is empty or the score cannot be computed)."""
    if not prediction or not answer:
        return 0.0
    pred = word_tokenize(str(prediction).lower())
    ref = word_tokenize(str(answer).lower())
    if not pred or not ref:
        return 0.0
    try:
        return float(sentence_bleu([ref], pred, weights=(1, 0, 0, 0), smoothing_function=_SMOOTH))
    except Exception:  # Mem0's code scores 0 whenever nltk raises
        return 0.0
