"""The offline answerer: a rule-based floor that answers from retrieved memories with no model.

It is a floor so that the pipeline runs with no key, never a number to compare with LLM answerers.
It picks the retrieved memory that shares most words with the question (ties broken by rank), then:
- "when…" questions: the memory's absolute event date (memworker's ``event_when``), else a date
  written in it, else its session date;
- yes/no questions: "Likely yes" for "would/likely" questions, else "Yes";
- "how many": the first number in the memory;
- list questions ("what activities…", "which…"): the key phrase of each of the best memories, comma-separated;
- anything else: the words of the memory's best sentence that are not in the question, cut short.
"""

from __future__ import annotations

import re
from functools import lru_cache

from nltk.stem import PorterStemmer

from locomo_kit.qa.prompts import is_temporal
from locomo_kit.worker.client import Observation

LABEL = "extractive (rule-based floor, no LLM; not comparable to LLM answerers)"
_STEM = PorterStemmer()
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’-]*")
_PREFIX = re.compile(r"^[^:\[\]]{1,60}?(?: said)?(?: on \d{1,2} \w+ \d{4})?:\s*")
_NOTE = re.compile(r"\s*\(([^()=]+) = ([^()]+)\)")
_DATE = re.compile(r"\b(\d{1,2} (?:January|February|March|April|May|June|July|August|September|October|November|"
                   r"December) \d{4}|(?:January|February|March|April|May|June|July|August|September|October|"
                   r"November|December) \d{4}|(?:19|20)\d{2})\b")
_NUMBER = re.compile(r"\b(\d+|one|two|three|four|five|six|seven|eight|nine|ten|a couple|a few|several)\b", re.I)
YES_NO = ("is ", "are ", "was ", "were ", "do ", "does ", "did ", "can ", "could ", "would ", "will ", "has ",
          "have ", "should ", "might ")
STOP = frozenset(
    "a an the and or but of to in on at for with from by about as is are was were be been being i me my we our "
    "you your he him his she her it its they them their this that these those so do does did have has had just "
    "really very too also oh yeah yes no not hey hi wow what when where who why how which would could should "
    "will can may might there here some any all more most much many like get got go going went one thing things "
    "i'm it's that's you're i've don't can't didn't lot kind sort always never ever yet still well pretty "
    "great super awesome amazing cool nice glad happy thanks thank congrats wow bet sure totally definitely "
    "especially though actually maybe really sounds sound seems feel felt think thought know knew make made "
    "love loved see saw look looks looking hear heard tell told say said glad wait now then just lately "
    "recently last week month year today yesterday something anything everything time times way ways".split())
LIST_CUES = ("what activities", "what are", "what kind", "what types", "what books", "what things", "which ",
             "what hobbies", "what items", "what events", "what places", "what pets", "what instruments",
             "what games", "what ways", "what do", "what has")


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    """The Porter stem of a lower-cased word (cached: a run stems the same few thousand words over and over)."""
    return _STEM.stem(word)


def _stems(text: str) -> set[str]:
    return {_stem(w.lower()) for w in _WORD.findall(text) if w.lower() not in STOP}


def _body(o: Observation) -> str:
    """The memory's own words: without memworker's 'Speaker on date:' prefix and date notes."""
    text = o.narrative or o.text or o.title or ""
    return _NOTE.sub("", _PREFIX.sub("", text, count=1)).replace("[image:", " ").replace("]", " ")


def _rank_memories(question: str, memories: list[Observation]) -> list[Observation]:
    q = _stems(question)
    scored = [(len(q & _stems(_body(o))) + 0.5 / (i + 1), -i, o) for i, o in enumerate(memories)]
    return [o for *_, o in sorted(scored, key=lambda x: (x[0], x[1]), reverse=True)]


def _when(o: Observation) -> str:
    notes = _NOTE.findall(o.narrative or "")
    if notes:
        return notes[0][1].strip()
    if o.metadata.get("event_when"):
        return str(o.metadata["event_when"])
    m = _DATE.search(_body(o))
    if m:
        return m.group(1)
    date = o.metadata.get("event_date") or o.metadata.get("session_date") or (o.created_at or "")[:10]
    return str(date)


def _phrase(question: str, text: str, max_words: int) -> str:
    """Content words of the best sentence that the question does not already say, preferring
    those right after the last word the sentence shares with the question."""
    q = _stems(question)
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()] or [text]
    best = max(sentences, key=lambda s: len(q & _stems(s)))
    tokens = _WORD.findall(best)
    hits = [i for i, w in enumerate(tokens) if _stem(w.lower()) in q]
    def keep(ws: list[str]) -> list[str]:
        return [w for w in ws if w.lower() not in STOP and _stem(w.lower()) not in q]
    after = keep(tokens[hits[-1] + 1:]) if hits else []
    words = after if after else keep(tokens)
    return " ".join(words[:max_words])


class ExtractiveAnswerer:
    label = LABEL
    model = "extractive"
    provider = "extractive"

    def __init__(self, max_words: int = 6, list_items: int = 3) -> None:
        self.max_words, self.list_items = max_words, list_items

    def answer(self, question: str, memories: list[Observation]) -> str:
        if not memories:
            return "No information available"
        ranked = _rank_memories(question, memories)
        best = ranked[0]
        q = question.lower().strip()
        if is_temporal(question):
            return _when(best)
        if q.startswith(YES_NO):
            return "Likely yes" if ("would" in q.split()[:2] or "likely" in q) else "Yes"
        if q.startswith("how many") or q.startswith("how much"):
            m = _NUMBER.search(_body(best))
            return m.group(1) if m else _phrase(question, _body(best), self.max_words)
        if q.startswith(LIST_CUES):
            parts = [_phrase(question, _body(o), 2) for o in ranked[: self.list_items]]
            return ", ".join(dict.fromkeys(p for p in parts if p)) or _phrase(question, _body(best), self.max_words)
        return _phrase(question, _body(best), self.max_words) or _body(best)[:60]
