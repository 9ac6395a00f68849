"""Verdict sets in a run folder: every judge's verdicts over the same answers, kept in ``judgements.jsonl``.

A run holds any number of verdict sets, each named for its judge:

- the kit's judges: one set per (protocol, judge model, prompt version, runs), named
  ``<judge model> <protocol> <prompt version>`` (``score --judge-model …`` again adds one);
- the source's own verdicts of an imported run (protocol ``source``), named ``source: <system>``;
- imported verdict sets (protocol :data:`VERDICTS_PROTOCOL`), each record carrying ``judge_name``; a set
  named ``human`` (or ``human: …``) holds people's labels.

Records of imported sets are judgement records (the same keys) with fields added: ``judge_name``,
``label`` (the file's own label), ``verdict_files`` and, for labelled answers, ``class``.
"""

from __future__ import annotations

from locomo_kit.runs.folder import RunFolder
from locomo_kit.runs.records import JUDGEMENTS_FILE, judgement_key

VERDICTS_PROTOCOL = "verdicts"
SOURCE_PROTOCOL = "source"
HUMAN = "human"


def is_human(name: str) -> bool:
    return name == HUMAN or name.startswith(HUMAN + ":")


def set_name(j: dict) -> str:
    """The name of the verdict set a judgement record belongs to."""
    if j.get("judge_name"):
        return str(j["judge_name"])
    if j["protocol"] == SOURCE_PROTOCOL:
        return "source: " + str(j["judge_model"]).removeprefix("source/")
    return f"{j['judge_model']} {j['protocol']} {j['prompt_version']}" + (f" ×{j['n_runs']}" if j.get("n_runs", 1) != 1
                                                                          else "")


def set_kind(j: dict) -> str:
    """``kit``, ``source``, ``imported`` or ``human``."""
    if j["protocol"] == VERDICTS_PROTOCOL:
        return HUMAN if is_human(set_name(j)) else "imported"
    return "source" if j["protocol"] == SOURCE_PROTOCOL else "kit"


def judgement_sets(run: RunFolder, config_keys: tuple[str, ...]) -> dict[str, list[dict]]:
    """The latest judgement records over the answer configurations ``config_keys``, grouped by set name."""
    latest = {judgement_key(j): j for j in run.records(JUDGEMENTS_FILE) if j.get("answer_config_key") in config_keys}
    out: dict[str, list[dict]] = {}
    for j in latest.values():
        out.setdefault(set_name(j), []).append(j)
    return out


def imported_set_names(run: RunFolder) -> dict[str, str]:
    """Names of the run's imported verdict sets → their prompt version (which files and mapping made them)."""
    return {str(j["judge_name"]): j["prompt_version"] for j in run.records(JUDGEMENTS_FILE)
            if j.get("protocol") == VERDICTS_PROTOCOL and j.get("judge_name")}
