"""The ``oracle`` answer source: a question's gold evidence turns only, as memories.

It isolates the answerer from the memory system: the context holds exactly the turns the
dataset marks as the answer's evidence (so its evidence recall is 1 by construction), each as
``[8 May 2023] Caroline: …`` in conversation order. Evidence ids that name no turn of the
conversation (a few in LoCoMo) are left out.
"""

from __future__ import annotations

from locomo_kit.dataset import Conversation, Question
from locomo_kit.systems.turn_text import session_day, turn_line
from locomo_kit.worker.client import Observation

LABEL = "oracle: the question's gold evidence turns only (evidence recall 1 by construction; no memory system)"


def evidence_memories(conv: Conversation, q: Question) -> list[Observation]:
    wanted = set(q.evidence)
    out = []
    for session in conv.sessions:
        for turn in session.turns:
            if turn.dia_id in wanted:
                out.append(Observation(
                    id=f"{conv.sample_id}:{turn.dia_id}", project=None, type="evidence", title=None, subtitle=None,
                    narrative=turn_line(session, turn), text=None, facts=[], concepts=[], created_at=None,
                    created_at_epoch=None, metadata={"source_turns": [turn.dia_id], "session": session.number,
                                                     "session_date": session_day(session),
                                                     "memory_type": "gold evidence"}))
    return out


ORACLE_IDENTITY = {"name": "oracle", "version": None, "url": "none (gold evidence turns)", "settings": {},
                   "semantic_search": "none: the gold evidence turns are given"}
