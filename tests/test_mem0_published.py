"""Mem0's F1 and BLEU-1 against the per-question values Mem0's own evaluation code published.

The fixture holds, for Memobase's two published LoCoMo runs (3,080 answers), the gold answer, the
response and the ``bleu_score``/``f1_score`` that Mem0's ``metrics/utils.py`` wrote (NLTK 3.9 with
punkt). Every one must be reproduced.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from nltk.tokenize import NLTKWordTokenizer
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

from locomo_kit.scoring import bleu1, mem0_f1
from locomo_kit.scoring.mem0_tokenize import sent_tokenize, word_tokenize

FIXTURE = Path(__file__).parent / "fixtures" / "mem0_published_memobase.json.gz"


@pytest.fixture(scope="module")
def published() -> list[list]:
    return json.loads(gzip.open(FIXTURE, "rt", encoding="utf-8").read())["rows"]


def test_bleu1_and_mem0_f1_equal_every_published_value(published):
    assert len(published) == 3080
    bad_bleu = [r for r in published if abs(bleu1(r[2], r[1]) - r[3]) > 1e-12]
    bad_f1 = [r for r in published if abs(mem0_f1(r[2], r[1]) - r[4]) > 1e-12]
    assert bad_bleu == [] and bad_f1 == []


def test_the_fixture_tells_tokenizers_apart(published):
    """Without punkt and NLTK 3.9's quote rule, some published values are missed: the check has teeth."""
    plain = NLTKWordTokenizer()

    def plain_bleu1(prediction: str, answer: str) -> float:
        pred, ref = plain.tokenize(prediction.lower()), plain.tokenize(answer.lower())
        return sentence_bleu([ref], pred, weights=(1, 0, 0, 0), smoothing_function=SmoothingFunction().method1)

    assert sum(abs(plain_bleu1(r[2], r[1]) - r[3]) > 1e-12 for r in published) == 25


def test_nltk39_rules():
    assert word_tokenize("'sleep' is good") == ["'sleep", "'", "is", "good"]  # NLTK 3.10: "'", "sleep", "'"
    assert word_tokenize("She went home. Then she slept.") == ["She", "went", "home", ".", "Then", "she", "slept", "."]
    assert sent_tokenize("Dr. Smith went home. He was tired.") == ["Dr. Smith went home.", "He was tired."]
    assert word_tokenize("a–b") == ["a–b"]  # NLTK 3.10 splits the en dash
