"""LoCoMo → claude-mem Worker calls: deterministic ids, projects and session transcripts.

A session is sent the way an agent's tool use would be: one ``Read`` of
``conversation-transcript/session-N.txt`` whose response is the raw transcript (not
pre-digested: the Worker's own compression is part of what is measured). Turn lines carry their
``dia_id`` as a ``[D1:3]`` tag so that a Worker can report exact source turns.
"""

from __future__ import annotations

import re

from locomo_kit.dataset import Conversation, Session, Turn

_LINE_BREAKS = re.compile(r"\s*[\r\n]+\s*")


def content_session_id(sample_id: str, session: int) -> str:
    return f"locomo-{sample_id}-s{session}"


def project_name(sample_id: str) -> str:
    return f"locomo-eval-{sample_id}"


def tool_use_id(sample_id: str, session: int, generation: str = "") -> str:
    """Deterministic within one ingestion generation, so a Worker that de-duplicates tool uses ignores
    a session re-sent on resume; a new ``generation`` (after ``--force``) gives fresh ids, because
    claude-mem silently drops a tool_use_id it has already seen for the Worker's lifetime."""
    base = f"{content_session_id(sample_id, session)}-read"
    return f"{base}-{generation}" if generation else base


def turn_metadata(sample_id: str, session: Session, turn: Turn) -> dict:
    """``metadata`` for a turn saved with ``memory/save``: the exact source, returned by search."""
    return {"source_session": content_session_id(sample_id, session.number), "source_turns": [turn.dia_id],
            "session": session.number, "session_date": session.date_time}


def turn_title(sample_id: str, turn: Turn) -> str:
    """Title of a turn saved in ``turns`` mode; deterministic, used to skip turns already saved."""
    return f"locomo-{sample_id}-{turn.dia_id}"


def header(conv: Conversation, session: Session) -> str:
    return f"[Session {session.number} — {session.date_time}]\n[Conversation between {conv.speaker_a} and {conv.speaker_b}]"


def one_line(text: str) -> str:
    """``text`` with its line breaks (and the spaces around them) as single spaces."""
    return _LINE_BREAKS.sub(" ", text).strip()


def render_turn(turn: Turn) -> str:
    """One line per turn: a line break inside a turn (37 LoCoMo turns have one) would start a new
    line that a transcript parser cannot attribute."""
    line = f"[{turn.dia_id}] {turn.speaker}: {one_line(turn.text)}"
    if turn.image_caption:
        line += f" [shares an image: {one_line(turn.image_caption)}]"
    return line


def render_transcript(conv: Conversation, session: Session) -> str:
    return "\n".join([header(conv, session)] + [render_turn(t) for t in session.turns])


def init_prompt(conv: Conversation, session: Session) -> str:
    return f"Conversation between {conv.speaker_a} and {conv.speaker_b} on {session.date_time}"


def read_tool_call(conv: Conversation, session: Session, generation: str = "") -> dict:
    """Arguments for ``WorkerClient.queue_observation`` (minus the session id)."""
    return {
        "tool_name": "Read",
        "tool_input": {"file_path": f"conversation-transcript/session-{session.number}.txt"},
        "tool_response": render_transcript(conv, session),
        "tool_use_id": tool_use_id(conv.sample_id, session.number, generation),
        "cwd": f"/locomo-kit/{conv.sample_id}",
    }


def turn_memory_text(conv: Conversation, session: Session, turn: Turn) -> str:
    """One turn as a memory for ``turns`` mode: the session header line, then the turn line."""
    return f"[Session {session.number} — {session.date_time}]\n{render_turn(turn)}"
