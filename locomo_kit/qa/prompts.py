"""Answer prompts. Bump a version whenever its text changes: versions key the cache and the records."""

from __future__ import annotations

ANSWER_PROMPT_VERSION = "answer-v1"
FULL_CONTEXT_PROMPT_VERSION = "full-context-v1"

ANSWER_SYSTEM = """You answer questions about a long conversation between two people, using only the memories provided.
Answer with a short phrase (a few words), not a sentence, and no explanation.
For questions about time, use the dates in the memories and answer with an absolute date or period
(for example "7 May 2023" or "the week before 9 June 2023"), never a relative one.
If the memories do not contain the answer, answer "No information available"."""

TEMPORAL_HINT = "This question is about time: use the dates written in the memories."

FULL_CONTEXT_SYSTEM = """You answer questions about the conversation below between two people.
Answer with a short phrase (a few words), not a sentence, and no explanation.
For questions about time, answer with an absolute date or period computed from the session dates.
If the conversation does not contain the answer, answer "No information available"."""

TEMPORAL_WORDS = ("when", "what date", "what year", "what month", "how long", "what time", "which year", "which month")


def is_temporal(question: str) -> bool:
    q = question.lower()
    return any(q.startswith(w) or f" {w} " in q for w in TEMPORAL_WORDS)


def answer_user_prompt(question: str, context: str) -> str:
    hint = f"\n{TEMPORAL_HINT}" if is_temporal(question) else ""
    return f"{context}\n\nQuestion: {question}{hint}\nShort answer:"
