"""Where a memory came from, and whether a claim saved outside the conversation is backed by it.

Every memory records its route in ``metadata.provenance`` (``observation``: extracted from a
conversation transcript sent as a tool observation; ``memory/save``: text a client saved directly)
and ``metadata.unverified`` (true for ``memory/save``: nobody said it in a transcript the Worker saw).

A memory layer cannot tell a true statement from a false one. What it can check cheaply is whether
a directly saved claim about someone the project's transcripts cover uses words that person
actually used: ``corroboration`` looks up each content word of the claim (porter-stemmed, through the
full-text index) among that person's memories extracted from transcripts. A claim with a word they
never used ("Caroline moved from Norway" when Caroline only ever spoke of Sweden) is
``uncorroborated`` and lists those words; one whose every word they used is ``corroborated``. This
is a heuristic about wording, not truth: a true paraphrase in new words is uncorroborated, and a
false claim assembled from the person's own words is corroborated.
"""

from __future__ import annotations

import re

from memworker.extract import content_words
from memworker.store import Store

# words that say nothing about what a claim is about
GENERIC = frozenset(
    "actually really indeed truly correction fact facts note said says say told tell thing things something stuff "
    "lot lots kind sort way ways time times today now recently ago before after still always never also "
    "not isn't wasn't aren't weren't don't doesn't didn't can't won't one ones some any many much more most "
    "other another her hers his him them their theirs she he they person people named name names called".split()
)
NUMBER_WORDS = {"one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
                "eight": "8", "nine": "9", "ten": "10", "twelve": "12", "twenty": "20"}
_POSSESSIVE = re.compile(r"'s\b")


def subjects(text: str, speakers: set[str]) -> list[str]:
    """The project's speakers a text names (whole words, any case)."""
    return sorted(s for s in speakers if re.search(rf"(?i)\b{re.escape(s)}\b", text))


def claim_terms(text: str, names: set[str]) -> list[str]:
    """The words of a claim that carry its content (not names, stopwords or generic words), in order."""
    lowered = {n.lower() for n in names}
    seen: list[str] = []
    for w in content_words(_POSSESSIVE.sub("", text)):
        w = w.strip("'")
        if len(w) >= 3 or w.isdigit():
            if w not in lowered and w not in GENERIC and w not in seen:
                seen.append(w)
    return seen


def _stem(word: str) -> str:
    """A crude stem for matching a word inside a stored text (FTS5's porter stemmer found the rows)."""
    for suffix in ("ing", "ed", "es", "s", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _said(store: Store, project: str, speakers: list[str], term: str) -> bool:
    """Whether one of ``speakers`` said ``term`` in a transcript: a memory extracted from one (a queue
    item; ``memory/save`` has none) holds it in a fact attributed to them. Facts, not the memory's
    own text, because de-duplication merges one speaker's memory into another's facts."""
    forms = [term] + ([NUMBER_WORDS[term]] if term in NUMBER_WORDS else [])
    forms += [w for w, d in NUMBER_WORDS.items() if d == term]
    forms = [f for f in forms if f.replace("'", "").isalnum()]
    if not forms:
        return True
    facts = store.transcript_facts(project, forms)
    word = re.compile(r"(?i)\b(?:" + "|".join(re.escape(_stem(f)) for f in forms) + ")")
    by = tuple(speakers)
    return any(fact.startswith(by) and word.search(fact.split(":", 1)[-1]) for fact in facts)


def corroboration(store: Store, project: str, text: str) -> dict | None:
    """``{"status": "corroborated"|"uncorroborated", "subjects": [...], "unsupported_terms": [...]}`` for a
    directly saved claim that names a speaker of the project's transcripts; None when it names none
    (nothing to check it against)."""
    speakers = store.speakers(project)
    named = subjects(text, speakers)
    if not named:
        return None
    if not store.has_transcript_memories(project):
        return None
    terms = claim_terms(text, speakers)
    unsupported = [t for t in terms if not _said(store, project, named, t)]
    return {"status": "uncorroborated" if unsupported else "corroborated", "subjects": named,
            "unsupported_terms": unsupported}
