"""Deterministic predictions derived from the dataset's questions, for checking scorers.

The same function generated the inputs whose official scores are stored in
``fixtures/locomo_f1_dataset_expected.json``; keep it unchanged or regenerate the fixture.
"""

from __future__ import annotations


def prediction_variants(question: str, answer: str, adversarial: str) -> list[str]:
    words = answer.split()
    half = " ".join(words[: max(1, len(words) // 2)])
    return [
        answer,
        "The " + answer.upper() + "!",
        " ".join(reversed(words)),
        half,
        answer + ", and the other one, maybe; not sure",
        question,
        "",
        "No information available",
        "It is not mentioned in the conversation.",
        adversarial,
        answer.replace(" ", ","),
        "running quickly, " + answer.lower() + "\nthe end",
    ]
