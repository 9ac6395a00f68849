"""LoCoMo turns as the text a third-party memory system stores, and that text mapped back to turn ids.

Systems such as MemPalace keep no custom metadata on what they return, so the kit finds a hit's
source turns by its text: every turn is rendered as one deterministic line,
``[8 May 2023] Caroline: …``, and a hit's lines (or the pieces of a line a chunker split) are
looked up among the lines of the conversation.
"""

from __future__ import annotations

import re

from locomo_kit.dataset import Conversation, Session, Turn
from locomo_kit.worker.transcript import one_line

_SPACE = re.compile(r"\s+")


def session_day(session: Session) -> str:
    """``8 May 2023`` (the day of ``1:56 pm on 8 May, 2023``)."""
    return f"{session.date.day} {session.date:%B %Y}"


def turn_line(session: Session, turn: Turn) -> str:
    """One line per turn, with its session's date and its speaker; an image's caption kept inline."""
    line = f"[{session_day(session)}] {turn.speaker}: {one_line(turn.text)}"
    if turn.image_caption:
        line += f" [shares an image: {one_line(turn.image_caption)}]"
    return line


def conversation_lines(conv: Conversation) -> list[tuple[str, str]]:
    """(dia_id, :func:`turn_line`) of every turn of the conversation, in order."""
    return [(t.dia_id, turn_line(s, t)) for s in conv.sessions for t in s.turns]


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


class TurnLocator:
    """Maps text a system returns to the dia_ids of the turns it came from."""

    def __init__(self, lines: list[tuple[str, str]]):
        """``lines``: (dia_id, rendered line) of every turn of the conversation."""
        self.lines: list[tuple[str, str]] = [(dia, _norm(line)) for dia, line in lines]
        self._exact: dict[str, list[str]] = {}
        for dia_id, line in self.lines:
            self._exact.setdefault(line, []).append(dia_id)

    @classmethod
    def of(cls, conv: Conversation) -> "TurnLocator":
        return cls(conversation_lines(conv))

    def turns_of(self, text: str, min_fragment: int = 12) -> list[str]:
        """Source turns of ``text``, in order of appearance: each line is a whole turn or a piece of one
        (a chunker split a long turn); a piece shorter than ``min_fragment`` characters is ignored."""
        found: list[str] = []
        for raw in text.splitlines():
            piece = _norm(raw.lstrip("> ").strip())
            if len(piece) < min_fragment:
                continue
            ids = self._exact.get(piece)
            if ids is None:
                ids = [dia for dia, line in self.lines if piece in line or line in piece]
            for dia in ids:
                if dia not in found:
                    found.append(dia)
        return found
