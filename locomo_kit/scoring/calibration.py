"""Judge calibration: how often does the judge accept answers known to be wrong, and gold answers?

Built from the dataset with no LLM, for a fixed-seed sample of category 1-4 questions (default 100):

- ``specific-wrong``: the gold answer of another question of the same category and conversation
  (one sharing no word with this question's gold answer, so it is surely wrong);
- ``vague-topical``: a topical non-answer made from the question's own words ("It had to do with
  Caroline and the LGBTQ support group, as they discussed."), skipped when it happens to share a
  word with the gold answer;
- ``gold``: the gold answer itself.

The judge grades every item like an answer; the report gives the false-accept rate on each wrong
kind and the true-accept rate on gold, with Wilson intervals over items. (A published stress test
put a lenient judge at 62.8% false-accept on vague answers and 10.6% on specific ones.)
"""

from __future__ import annotations

import random
import re
import statistics
from dataclasses import dataclass
from typing import Iterable

from locomo_kit.dataset import Conversation
from locomo_kit.scoring.aggregate import wilson_ci
from locomo_kit.scoring.judge import SENTINEL
from locomo_kit.scoring.locomo_f1 import stemmed_tokens

CALIBRATION_VERSION = "calibration-v1"
CALIBRATION_SEED = 20250
CALIBRATION_SIZE = 100
KINDS = ("specific-wrong", "vague-topical", "gold")
ACCEPT_SCORE = 50  # a playbook (0-100) run accepts at ≥ 50, as the error analysis counts "correct"
PUBLISHED_FALSE_ACCEPT = {"vague-topical": 62.8, "specific-wrong": 10.6}
CONFIG_PREFIX = "calibration/"

_LEAD = re.compile(r"^(what|when|where|who|whom|whose|which|why|how( many| much| long| often| old)?|did|does|do|is|are|"
                   r"was|were|has|have|had|would|could|can|will|should|might)\b\s*", re.I)
_AUX = re.compile(r"^(did|does|do|is|are|was|were|has|have|had|would|could|can|will|kind of|type of|sort of)\b\s*", re.I)
_TEMPLATES = {
    2: "At some point; it was about {topic}, as they mentioned in their conversations.",
    1: "Several things, all about {topic}, as they discussed.",
    3: "Probably something to do with {topic}, judging by their conversations.",
    4: "It had to do with {topic}, as they discussed.",
}


@dataclass(frozen=True)
class CalibrationItem:
    sample_id: str
    question_index: int
    category: int
    category_name: str
    question: str
    gold: str
    kind: str
    prediction: str

    def as_answer(self) -> dict:
        """The item as an answer record that the judge grades like any other."""
        return {"sample_id": self.sample_id, "question_index": self.question_index, "category": self.category,
                "category_name": self.category_name, "question": self.question, "gold": self.gold,
                "prediction": self.prediction, "config_key": config_key(self.kind), "answerer": "calibration"}


def config_key(kind: str) -> str:
    return f"{CONFIG_PREFIX}{CALIBRATION_VERSION}/{kind}"


def topic_of(question: str) -> str:
    """The question without its question word and auxiliary: "When did Caroline go to X?" → "Caroline go to X"."""
    text = question.strip().rstrip("?").strip()
    for _ in range(2):
        text = _LEAD.sub("", text)
        text = _AUX.sub("", text)
    return text or question.strip().rstrip("?")


def vague_answer(question: str, category: int) -> str:
    return _TEMPLATES.get(category, _TEMPLATES[4]).format(topic=topic_of(question))


def _shares_words(a: str, b: str) -> bool:
    return bool(set(stemmed_tokens(a)) & set(stemmed_tokens(b)))


def build_calibration_set(conversations: Iterable[Conversation], size: int = CALIBRATION_SIZE,
                          seed: int = CALIBRATION_SEED) -> list[CalibrationItem]:
    """Deterministic for the same conversations, size and seed."""
    pool = [(c, q) for c in conversations for q in c.questions if q.category != 5 and q.answer]
    rng = random.Random(seed)
    chosen = rng.sample(pool, min(size, len(pool)))
    items: list[CalibrationItem] = []
    for conv, q in sorted(chosen, key=lambda cq: (cq[0].sample_id, cq[1].index)):
        base = dict(sample_id=q.sample_id, question_index=q.index, category=q.category,
                    category_name=q.category_name, question=q.question, gold=q.answer)
        others = [o.answer for o in conv.questions
                  if o.category == q.category and o.index != q.index and o.answer and not _shares_words(o.answer, q.answer)]
        if others:
            items.append(CalibrationItem(**base, kind="specific-wrong", prediction=rng.choice(others)))
        if not _shares_words(topic_of(q.question), q.answer):  # else the question's words may answer it
            items.append(CalibrationItem(**base, kind="vague-topical", prediction=vague_answer(q.question, q.category)))
        items.append(CalibrationItem(**base, kind="gold", prediction=q.answer))
    return items


def _accepts(judgement: dict) -> float | None:
    """The share of a judgement's valid runs that accepted the answer."""
    runs = [r["score"] for r in judgement["runs"] if r["score"] != SENTINEL]
    if not runs:
        return None
    if judgement["protocol"] == "playbook":
        return statistics.mean(1.0 if s >= ACCEPT_SCORE else 0.0 for s in runs)
    return statistics.mean(runs)


def calibration_rates(judgements: Iterable[dict]) -> list[dict]:
    """Per (protocol, judge model, prompt version) and kind: items, acceptance rate (%) and its Wilson
    interval over items (per-item share of accepting runs)."""
    groups: dict[tuple, dict[str, list[float]]] = {}
    for j in judgements:
        key = j.get("answer_config_key", "")
        if not key.startswith(CONFIG_PREFIX):
            continue
        kind = key.rsplit("/", 1)[-1]
        share = _accepts(j)
        if share is not None:
            groups.setdefault((j["protocol"], j["judge_model"], j["prompt_version"], key.split("/")[1]), {}) \
                .setdefault(kind, []).append(share)
    rows = []
    for (protocol, model, prompt_version, version), kinds in sorted(groups.items()):
        for kind in KINDS:
            values = kinds.get(kind, [])
            low, high = wilson_ci(sum(values), len(values)) if values else (None, None)
            rows.append({"protocol": protocol, "judge_model": model, "prompt_version": prompt_version,
                         "calibration_version": version, "kind": kind,
                         "rate_name": "true-accept" if kind == "gold" else "false-accept", "items": len(values),
                         "rate": 100 * statistics.mean(values) if values else None,
                         "ci_low": None if low is None else 100 * low, "ci_high": None if high is None else 100 * high,
                         "published_false_accept": PUBLISHED_FALSE_ACCEPT.get(kind)})
    return rows
