"""Match imported records to LoCoMo questions: by conversation and question text, or by index checked
against the text (or, without text, against the category).

Text is compared after normalising whitespace and case only: leading and trailing whitespace is
dropped, every run of whitespace becomes one space, and the text is case-folded (``str.casefold``).
Nothing else changes (punctuation, quotes and names must agree), so a renamed speaker does not
match. A record that does not match is kept in the listing with its reason.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from locomo_kit.dataset import Conversation, Question
from locomo_kit.imported.formats import SourceRecord

NORMALISATION = "whitespace collapsed and trimmed, case-folded; nothing else"
REASONS = ("unknown conversation", "ambiguous question text", "text differs", "no such question", "category differs",
           "duplicate", "empty answer")


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", str(text)).strip().casefold()


@dataclass
class Match:
    record: SourceRecord
    question: Question | None
    reason: str | None = None  # why it did not match (None: matched)
    by: str = ""  # text | index+text | index+category | index

    def listing(self) -> dict:
        r = self.record
        return {"file": r.file, "position": r.position, "conversation": reference(r.conversation), "index": r.index,
                "question": r.question, "reason": self.reason,
                "locomo_question": self.question.question if self.question is not None else None}


def reference(ref) -> str:
    """A record's conversation reference as the listing says it (``@file conv-26.json``, never a tuple)."""
    if isinstance(ref, tuple):
        return " ".join(str(x) for x in ref)
    return str(ref)


SAMPLE_IN_TEXT = re.compile(r"conv(?:ersation)?[-_]?(\d+)", re.IGNORECASE)


def sample_in(text: str, conversations: list[Conversation]) -> Conversation | None:
    """The conversation whose sample id a text names (``conv-26``, ``conv26``, ``…_conv_26_…``), if any."""
    ids = {c.sample_id: c for c in conversations}
    for m in SAMPLE_IN_TEXT.finditer(text):
        if f"conv-{int(m.group(1))}" in ids:
            return ids[f"conv-{int(m.group(1))}"]
    return None


def conversation_of(ref, conversations: list[Conversation], by_file: dict[str, str]) -> Conversation | None:
    """The conversation a record names: a sample id (``conv-26``, also written ``conv26``), a dataset position
    (number, numeric string, or text ending in digits such as ``locomo_experiment_user_3``), or its file's
    conversation."""
    ids = {c.sample_id: c for c in conversations}
    if isinstance(ref, tuple) and ref and ref[0] == "@file":
        return ids.get(by_file.get(ref[1], ""))
    if ref is None or isinstance(ref, (bool, tuple)):
        return None
    text = str(ref).strip()
    if text in ids:
        return ids[text]
    if (named := sample_in(text, conversations)) is not None:
        return named
    m = re.search(r"(\d+)$", text)
    if m and not text.startswith("conv-"):
        position = int(m.group(1))
        return conversations[position] if position < len(conversations) else None
    return None


def file_conversations(records: list[SourceRecord], conversations: list[Conversation]) -> dict[str, str]:
    """For ``conversation=@file``: each file's conversation, from the digits in its name (``…conv3…``)."""
    out = {}
    for name in {r.file for r in records}:
        named = sample_in(name, conversations)  # a sample id in the name (conv-26, conv26) before a position
        if named is not None:
            out[name] = named.sample_id
            continue
        m = re.search(r"conv(?:ersation)?[-_]?(\d+)", name) or re.search(r"(\d+)", name)
        if m and int(m.group(1)) < len(conversations):
            out[name] = conversations[int(m.group(1))].sample_id
    return out


def match_records(records: list[SourceRecord], conversations: list[Conversation]) -> list[Match]:
    """One :class:`Match` per record, in file order. ``conversations``: the whole dataset, in file order."""
    by_file = file_conversations(records, conversations)
    texts: dict[str, dict[str, list[Question]]] = {}
    for c in conversations:
        index: dict[str, list[Question]] = {}
        for q in c.questions:
            index.setdefault(normalise(q.question), []).append(q)
        texts[c.sample_id] = index
    taken: set[tuple[str, int]] = set()
    out: list[Match] = []
    owners: dict[str, set[str]] = {}  # a question's text -> the conversations that ask it
    for sample, index in texts.items():
        for text in index:
            owners.setdefault(text, set()).add(sample)
    ids = {c.sample_id: c for c in conversations}
    for r in records:
        if r.conversation == ("@text",):  # no conversation named: the one whose question has this text
            found = owners.get(normalise(r.question or ""), set())
            if len(found) > 1:
                out.append(Match(r, None, "ambiguous question text"))
                continue
            conv = ids[next(iter(found))] if found else None
            if conv is None:
                out.append(Match(r, None, "text differs", "text"))
                continue
        else:
            conv = conversation_of(r.conversation, conversations, by_file)
        if conv is None:
            out.append(Match(r, None, "unknown conversation"))
            continue
        q, by, reason = _find(r, conv, texts[conv.sample_id], taken)
        if q is not None and (q.sample_id, q.index) in taken:
            out.append(Match(r, q, "duplicate", by))
            continue
        if q is not None and reason is None:
            taken.add((q.sample_id, q.index))
        out.append(Match(r, q, reason, by))
    return out


def _find(r: SourceRecord, conv: Conversation, texts: dict[str, list[Question]],
          taken: set[tuple[str, int]]) -> tuple[Question | None, str, str | None]:
    if r.index is not None:
        if not 0 <= r.index < len(conv.questions):
            return None, "index", "no such question"
        q = conv.questions[r.index]
        if r.question is not None:
            if normalise(r.question) != normalise(q.question):
                return None, "index+text", "text differs"
            return q, "index+text", None
        if r.category is not None and r.category != q.category:
            return None, "index+category", "category differs"
        return q, "index+category" if r.category is not None else "index", None
    if r.question is None:
        return None, "text", "text differs"
    candidates = texts.get(normalise(r.question), [])
    if not candidates:
        return None, "text", "text differs"
    free = [q for q in candidates if (q.sample_id, q.index) not in taken]
    return (free[0] if free else candidates[0]), "text", None


def reason_counts(matches: list[Match]) -> dict[str, int]:
    counts = Counter(m.reason for m in matches if m.reason)
    return {k: counts[k] for k in REASONS if counts[k]}
