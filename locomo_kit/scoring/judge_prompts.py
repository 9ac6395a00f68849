"""Named, versioned judge prompts beyond the two protocols' originals (those live in ``judge.py``).

``strict`` is a binary CORRECT/WRONG prompt that grades like ``mem0`` but without its leniency:
the answer must state the gold answer's specific facts; a vague, evasive or merely topical answer
is WRONG, and so is a different date, person, place or number. The label is parsed like ``mem0``'s
(``parse_mem0``) and aggregated the same way, so the two Js can be read side by side, together
with each prompt's false-accept rates on the calibration set.
"""

from __future__ import annotations

STRICT_VERSION = "judge-strict-v1"
STRICT_PROMPT = """Label a generated answer to a question as CORRECT or WRONG. Grade strictly.
You are given: (1) a question one person asked about the other, based on their earlier conversations;
(2) the gold answer; (3) the generated answer to grade.
The generated answer is CORRECT only if it states the specific facts of the gold answer: the same
people, things, places, numbers, and for time questions the same date or period (another format is fine;
a relative reference only if it resolves to the same date). It is WRONG if it is vague, evasive or only
on the same topic, if it names something different, if it misses a required part of the gold answer, or
if it hedges between several answers.

Question: {question}
Gold answer: {gold}
Generated answer: {prediction}

Give a one-sentence explanation, then the label. Return JSON: {{"explanation": "...", "label": "CORRECT" or "WRONG"}}"""
