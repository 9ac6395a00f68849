"""Every verdict set of a run as one binary verdict per question, under each gold key.

A judgement becomes a verdict as the report reads it: a binary protocol's answer is accepted when at
least half of its valid runs say CORRECT, a playbook answer when its mean score is at least 50.
Under the audited gold key a question whose gold the audit changed takes the set's judgement against
the audited gold; a set without one (imported sets, people's labels) leaves that question out under
that key (counted). The rule-based judges (:mod:`locomo_kit.scoring.rules`) are computed from the
answer and the gold of each key.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from locomo_kit.data_fetch import DataFetchError
from locomo_kit.runs import RunFolder
from locomo_kit.runs.records import load_answers
from locomo_kit.runs.verdicts import HUMAN, judgement_sets, set_kind
from locomo_kit.scoring.gold_judging import audited_answers, audited_config_key
from locomo_kit.scoring.rules import RULES

Question = tuple[str, int]


def accepted(j: dict) -> bool | None:
    """A judgement's verdict (None when no run of it is valid)."""
    if not j.get("n_ok"):
        return None
    return j["mean"] >= (50 if j["protocol"] == "playbook" else 0.5)


@dataclass
class VerdictSet:
    name: str
    kind: str  # kit | source | imported | human | rule
    basis: str  # what a verdict of this set means, as views name it
    verdicts: dict[str, dict[Question, bool]] = field(default_factory=dict)  # gold key → question → accepted
    reasons: dict[Question, str] = field(default_factory=dict)
    classes: dict[Question, str] = field(default_factory=dict)  # labelled answers' classes (people's labels)
    judge: dict = field(default_factory=dict)  # model, protocol, prompt version, runs (kit judges)
    not_audited: int = 0  # questions whose gold the audit changed that the set did not judge again

    def as_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "basis": self.basis, "judge": self.judge,
                "questions": {g: len(v) for g, v in self.verdicts.items()}, "not_audited": self.not_audited}


def _basis(kind: str, name: str, j: dict) -> str:
    if kind == "kit":
        return f"judged by {j['judge_model']} ({j['protocol']} protocol)"
    if kind == HUMAN:
        return "people's labels"
    return f"verdicts of {name}"


def run_verdict_sets(run: RunFolder, *, config_key: str | None = None, rules: bool = True,
                     audited: bool = True, dataset_path: str | None = None) -> tuple[list[VerdictSet], list[dict]]:
    """The run's verdict sets (kit judges, the source's, imported, people's, then the rules) and its answers
    of categories 1-4 with a gold answer."""
    answers = [a for a in load_answers(run, config_key or run.manifest().get("answer", {}).get("config_key"))
               if a["category"] != 5 and a.get("gold")]
    if not answers:
        return [], []
    key = answers[0]["config_key"]
    audited_key = audited_config_key(key)
    changed: dict[Question, dict] = {}
    if audited:
        try:
            changed = {(a["sample_id"], int(a["question_index"])): a for a in audited_answers(answers, "both",
                                                                                                dataset_path)}
        except (OSError, ValueError, DataFetchError):
            audited = False  # no audit on disk: the original key only
    mine = {(a["sample_id"], int(a["question_index"])) for a in answers}
    sets: list[VerdictSet] = []
    for name, records in sorted(judgement_sets(run, (key, audited_key)).items()):
        first = records[0]
        kind = set_kind(first)
        vs = VerdictSet(name, kind, _basis(kind, name, first),
                        judge={"model": first["judge_model"], "protocol": first["protocol"],
                               "prompt_version": first["prompt_version"], "runs": first.get("n_runs")})
        original: dict[Question, bool] = {}
        again: dict[Question, bool] = {}
        for j in records:
            q = (j["sample_id"], int(j["question_index"]))
            v = accepted(j)
            if q not in mine or v is None:
                continue
            if j["answer_config_key"] == key:
                original[q] = v
                reason = next((r.get("explanation") for r in j.get("runs", []) if r.get("explanation")), "")
                vs.reasons[q] = reason or ""
                if j.get("class"):
                    vs.classes[q] = j["class"]
            else:
                again[q] = v
        if not original:
            continue
        vs.verdicts["original"] = original
        if audited:
            under = {q: v for q, v in original.items() if q not in changed}
            under.update({q: v for q, v in again.items() if q in changed and q in original})
            vs.not_audited = sum(q in changed and q not in again for q in original)
            vs.verdicts["audited"] = under
        sets.append(vs)
    order = {"kit": 0, "source": 1, "imported": 2, HUMAN: 3}
    sets.sort(key=lambda s: (order.get(s.kind, 4), s.name))
    if rules:
        for rule in RULES.values():
            vs = VerdictSet(rule.name, "rule", rule.label)
            vs.verdicts["original"] = {(a["sample_id"], int(a["question_index"])):
                                       rule.decide(str(a.get("prediction") or ""), str(a["gold"]), int(a["category"]))
                                       for a in answers}
            if audited:
                vs.verdicts["audited"] = dict(vs.verdicts["original"])
                for q, a in changed.items():
                    vs.verdicts["audited"][q] = rule.decide(str(a.get("prediction") or ""), str(a["gold"]),
                                                            int(a["category"]))
            sets.append(vs)
    return sets, answers
