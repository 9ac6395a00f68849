"""Parse a session transcript as the kit renders it (claude-mem's ``Read`` tool response).

Format::

    [Session 3 — 1:56 pm on 8 May, 2023]
    [Conversation between Caroline and Melanie]
    [D3:1] Caroline: Hey Mel! ...
    [D3:2] Melanie: Look at this. [shares an image: a photo of a dog]

The ``[D3:1]`` tags are optional; without them turn ids are numbered ``T<session>:<n>``. A line
without a speaker right after a tagged turn continues that turn (a turn whose text had a line
break); any other line without a speaker becomes a turn by "unknown".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

_HEADER = re.compile(r"^\[Session\s+(\d+)\s*[—–-]+\s*(.+?)\]\s*$")
_PAIR = re.compile(r"^\[Conversation between (.+?) and (.+?)\]\s*$")
_TURN = re.compile(r"^(?:\[(D\d+:\d+)\]\s*)?([^:\[\]]{1,60}):(?:\s+(.*))?$")
_IMAGE = re.compile(r"\[shares an image:\s*(.*?)\]\s*$")
DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%d %B, %Y", "%d %B %Y", "%Y-%m-%d", "%Y-%m-%dT%H:%M:%S")


@dataclass(frozen=True)
class Turn:
    turn_id: str
    speaker: str
    text: str
    image_caption: str | None


@dataclass(frozen=True)
class Transcript:
    session: int | None
    date: datetime | None
    date_text: str | None
    speakers: tuple[str, ...]
    turns: tuple[Turn, ...]


def parse_date(text: str) -> datetime | None:
    text = text.strip()
    for fmt in DATE_FORMATS:
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    return None


def parse_transcript(raw: str, fallback_date: datetime | None = None) -> Transcript:
    session: int | None = None
    date: datetime | None = None
    date_text: str | None = None
    speakers: tuple[str, ...] = ()
    turns: list[Turn] = []
    for line in raw.splitlines():
        line = line.strip()
        if not line:
            continue
        if m := _HEADER.match(line):
            session, date_text = int(m.group(1)), m.group(2).strip()
            date = parse_date(date_text)
            continue
        if m := _PAIR.match(line):
            speakers = (m.group(1).strip(), m.group(2).strip())
            continue
        m = _TURN.match(line)
        if m and not m.group(1) and m.group(3) is None:
            m = None  # "Note:" alone is text, not an untagged speaker with nothing to say
        if not m and turns and turns[-1].turn_id.startswith("D") and turns[-1].image_caption is None:
            last = turns[-1]
            turns[-1] = Turn(last.turn_id, last.speaker, f"{last.text} {line}".strip(), None)
            if im := _IMAGE.search(turns[-1].text):
                turns[-1] = Turn(last.turn_id, last.speaker, turns[-1].text[: im.start()].rstrip(),
                                 im.group(1).strip() or None)
            continue
        dia, speaker, text = (m.group(1), m.group(2).strip(), m.group(3) or "") if m else (None, "unknown", line)
        caption = None
        if im := _IMAGE.search(text):
            caption = im.group(1).strip() or None
            text = text[: im.start()].rstrip()
        turn_id = dia or f"T{session or 0}:{len(turns) + 1}"
        turns.append(Turn(turn_id=turn_id, speaker=speaker, text=text, image_caption=caption))
    return Transcript(session, date or fallback_date, date_text, speakers, tuple(turns))
