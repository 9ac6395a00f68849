"""Verdict files produced elsewhere, added to a run as named verdict sets over its answers.

A :class:`VerdictMapping` says where a file's records are and which fields hold the conversation, the
question (index or text), the verdict and the judge's reason; ``labels`` maps the file's verdict labels
to correct/wrong (without it: true/false, 0/1, CORRECT/WRONG and scores in [0, 1]). ``id`` names one
field that holds both the conversation position and the question index (``conv3_q17``: the first and
the last number). Records are matched to the run's answers by conversation and question index, or by
question text (whitespace and case normalised); with ``answer`` the file's answer must be the run's.

Refused, with what to do: a label outside the mapping; a file whose records match fewer than half of
the run's answers, or whose answers are not the run's (a verdict file for another run); a name already
used by another set of the run. A set that covers part of the answers is kept, and what it leaves out
is counted and listed (``verdicts.json``).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from locomo_kit.data_fetch import sha256_file
from locomo_kit.dataset import Conversation
from locomo_kit.imported.formats import ImportFormatError, get_path, read_json, verdict_of
from locomo_kit.imported.matching import conversation_of, file_conversations, normalise
from locomo_kit.runs import RunFolder, slug, utc_now
from locomo_kit.runs.records import JUDGEMENTS_FILE, load_answers
from locomo_kit.runs.verdicts import VERDICTS_PROTOCOL, imported_set_names, is_human

VERDICT_FIELDS = ("records", "conversation", "index", "id", "question", "answer", "verdict", "explanation", "class")
LISTING_FILE = "verdicts.json"
MIN_MATCHED = 0.5
_POSITIVE = {"correct", "right", "true", "yes", "1", "accept", "accepted"}
_NEGATIVE = {"wrong", "incorrect", "false", "no", "0", "reject", "rejected"}


class VerdictImportError(ImportFormatError):
    """A verdict file that cannot be added to this run (what is wrong and what to do)."""


@dataclass
class VerdictMapping:
    records: str = ""
    conversation: str | None = "@file"
    index: str | None = None
    id: str | None = None
    question: str | None = None
    answer: str | None = None
    verdict: str = "verdict"
    explanation: str | None = None
    class_: str | None = None  # a labelled answer's class (correct, specific-wrong, …), for people's labels
    labels: dict[str, bool] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in (None, {}, "")}

    @classmethod
    def from_options(cls, items: list[str], labels: list[str]) -> "VerdictMapping":
        """From ``--verdict-map KEY=FIELD`` and ``--verdict-label LABEL=correct|wrong`` items."""
        data: dict[str, Any] = {}
        for item in items:
            key, sep, value = item.partition("=")
            key = key.strip()
            if not sep or key not in VERDICT_FIELDS:
                raise VerdictImportError(f"--verdict-map {item!r}: expected KEY=FIELD with KEY one of "
                                         f"{', '.join(VERDICT_FIELDS)} (e.g. --verdict-map verdict=label)")
            data["class_" if key == "class" else key] = value.strip() or (None if key != "records" else "")
        names: dict[str, bool] = {}
        for item in labels:
            label, sep, value = item.partition("=")
            v = value.strip().lower()
            if not sep or v not in ("correct", "wrong"):
                raise VerdictImportError(f"--verdict-label {item!r}: expected LABEL=correct or LABEL=wrong "
                                         "(e.g. --verdict-label CORRECT=correct --verdict-label WRONG=wrong)")
            names[label.strip().lower()] = v == "correct"
        mapping = cls(**data, labels=names)
        if mapping.index is None and mapping.id is None and mapping.question is None:
            raise VerdictImportError("say how a verdict names its question: --verdict-map index=FIELD, id=FIELD "
                                     "(e.g. conv3_q17) or question=FIELD (its text)")
        return mapping

    def decide(self, value: Any) -> bool:
        if self.labels:
            key = str(value).strip().lower()
            if key not in self.labels:
                raise KeyError(str(value))
            return self.labels[key]
        try:
            got = verdict_of(value)
        except ImportFormatError:
            raise KeyError(str(value)) from None
        if got is None:
            raise KeyError(str(value))
        return got


@dataclass
class VerdictSetResult:
    name: str
    files: list[str]
    records: int
    added: int
    answers: int  # the run's answers the set could cover (categories 1-4 with a gold answer)
    listed: list[dict]
    already: bool = False

    def line(self) -> str:
        skipped = len(self.listed)
        cover = f"covers {self.added} of the run's {self.answers} judged answers"
        return (f"verdict set {self.name!r}: {self.records} records, {cover}"
                + (f"; {skipped} listed (not matched, or answers the set leaves out): see {LISTING_FILE}" if skipped
                   else "") + (" (already added: unchanged)" if self.already else ""))


def _position(text: str) -> tuple[int, int] | None:
    nums = re.findall(r"\d+", str(text))
    return (int(nums[0]), int(nums[-1])) if len(nums) >= 2 else None


def _read(files: list[Path], mapping: VerdictMapping) -> list[dict]:
    out = []
    for path in files:
        doc = read_json(path)
        try:
            items = get_path(doc, mapping.records)
        except KeyError as exc:
            raise VerdictImportError(f"{path}: no {mapping.records!r} (missing {exc.args[0]!r}): set "
                                     "--verdict-map records=<path of the list of verdicts>") from None
        if not isinstance(items, list):
            raise VerdictImportError(f"{path}: {mapping.records or 'the file'} is a {type(items).__name__}, not a list "
                                     "of verdict records: set --verdict-map records=…")
        for i, raw in enumerate(items):
            if not isinstance(raw, dict):
                raise VerdictImportError(f"{path.name} record {i} is a {type(raw).__name__}, not an object")
            out.append({"file": path.name, "position": i, "raw": raw})
    return out


def _field(rec: dict, path: str | None, required: bool = False) -> Any:
    if path is None:
        return None
    try:
        return get_path(rec["raw"], path)
    except KeyError:
        if required:
            raise VerdictImportError(f"{rec['file']} record {rec['position']}: no field {path!r} (the record has "
                                     f"{', '.join(sorted(rec['raw']))}): fix --verdict-map") from None
        return None


def read_verdicts(files: list[Path], mapping: VerdictMapping, answers: list[dict],
                  conversations: list[Conversation]) -> tuple[dict[tuple[str, int], dict], list[dict]]:
    """The file's verdicts keyed by the run's questions, and the listing of what did not match.

    Raises :class:`VerdictImportError` for labels outside the mapping, a file for another run's answers,
    or one that matches too few of the run's answers."""
    records = _read(files, mapping)
    by_file = file_conversations([SimpleNamespace(file=r["file"]) for r in records], conversations)
    by_q = {(a["sample_id"], int(a["question_index"])): a for a in answers}
    by_text = {(a["sample_id"], normalise(a["question"])): a for a in answers}
    got: dict[tuple[str, int], dict] = {}
    listed: list[dict] = []
    bad_labels: dict[str, list[str]] = {}
    differ: list[dict] = []
    for rec in records:
        where = f"{rec['file']} record {rec['position']}"
        value = _field(rec, mapping.verdict, required=True)
        try:
            verdict = mapping.decide(value)
        except KeyError:
            bad_labels.setdefault(str(value), []).append(where)
            continue
        conv, index = None, None
        if mapping.id:
            pos = _position(_field(rec, mapping.id, required=True))
            if pos is not None and pos[0] < len(conversations):
                conv, index = conversations[pos[0]], pos[1]
        else:
            ref = ("@file", rec["file"]) if mapping.conversation == "@file" else _field(rec, mapping.conversation, True)
            conv = conversation_of(ref, conversations, by_file)
            if mapping.index:
                raw_index = _field(rec, mapping.index, required=True)
                pos = re.findall(r"\d+", str(raw_index))
                index = int(pos[-1]) if pos else None
        answer = None
        if conv is not None and index is not None:
            answer = by_q.get((conv.sample_id, index))
        elif conv is not None and mapping.question:
            answer = by_text.get((conv.sample_id, normalise(str(_field(rec, mapping.question, required=True)))))
        if answer is None:
            listed.append({"file": rec["file"], "position": rec["position"], "reason":
                           "unknown conversation" if conv is None else "no such answer in this run"})
            continue
        q = (answer["sample_id"], int(answer["question_index"]))
        if mapping.answer is not None:
            theirs = _field(rec, mapping.answer, required=True)
            if normalise(str(theirs or "")) != normalise(str(answer.get("prediction") or "")):
                differ.append({"where": where, "question": q, "theirs": theirs, "ours": answer.get("prediction")})
                continue
        if q in got:
            listed.append({"file": rec["file"], "position": rec["position"], "reason": "duplicate",
                           "sample_id": q[0], "question_index": q[1]})
            continue
        explanation = _field(rec, mapping.explanation)
        got[q] = {"verdict": verdict, "label": value, "explanation": "" if explanation is None else str(explanation),
                  "class": _field(rec, mapping.class_), "file": rec["file"], "position": rec["position"]}
    if bad_labels:
        shown = "; ".join(f"{label!r} ×{len(w)} (first: {w[0]})" for label, w in list(bad_labels.items())[:5])
        known = ", ".join(sorted(mapping.labels)) if mapping.labels else "true/false, 0/1, CORRECT/WRONG"
        raise VerdictImportError(f"{sum(map(len, bad_labels.values()))} verdicts have labels outside the mapping "
                                 f"({known}): {shown}. Map each with --verdict-label LABEL=correct|wrong; nothing was "
                                 "added")
    if differ:
        d = differ[0]
        raise VerdictImportError(f"the verdict file judges other answers than this run's: {len(differ)} of "
                                 f"{len(records)} answers differ (first: {d['where']}, {d['question'][0]} "
                                 f"q{d['question'][1]}: file {str(d['theirs'])[:60]!r}, run "
                                 f"{str(d['ours'])[:60]!r}). Add it to the run whose answers it judged; nothing "
                                 "was added")
    if len(got) < MIN_MATCHED * len(records):
        raise VerdictImportError(f"only {len(got)} of {len(records)} verdicts match this run's answers (first "
                                 f"not matched: {listed[0] if listed else '–'}): a verdict file for another run, or "
                                 "a mapping that names the wrong conversation or question field? Nothing was added")
    return got, listed


def set_key(shas: list[str], mapping: VerdictMapping) -> str:
    blob = json.dumps({"files": sorted(shas), "mapping": mapping.as_dict()}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def add_verdict_set(run: RunFolder, files: list[str | Path], *, name: str, mapping: VerdictMapping,
                    conversations: list[Conversation], config_key: str | None = None) -> VerdictSetResult:
    """Add the verdicts of ``files`` to ``run`` as the set ``name`` (see the module doc)."""
    name = name.strip()
    if not name or name.startswith("rule:"):
        raise VerdictImportError(f"--judge-name {name!r}: give the set a name of its own (names starting 'rule:' are "
                                 "the kit's rule-based judges)")
    paths = [Path(f) for f in files]
    for p in paths:
        if not p.is_file():
            raise VerdictImportError(f"{p}: no such verdict file")
    answers = [a for a in load_answers(run, config_key or run.manifest().get("answer", {}).get("config_key"))
               if a["category"] != 5 and a.get("gold")]
    if not answers:
        raise VerdictImportError(f"{run.path}: no answers of categories 1-4 to add verdicts to")
    shas = [sha256_file(p) for p in paths]
    key = set_key(shas, mapping)
    version = f"verdicts-{key}"
    existing = imported_set_names(run)
    if name in existing and existing[name] != version:
        raise VerdictImportError(f"the run already holds a verdict set named {name!r} (from other files or another "
                                 "mapping): two sets cannot share a name; pass another --judge-name")
    got, listed = read_verdicts(paths, mapping, answers, conversations)
    result = VerdictSetResult(name, [p.name for p in paths], len(got) + len(listed), len(got), len(answers), listed)
    missing = [a for a in answers if (a["sample_id"], int(a["question_index"])) not in got]
    for a in missing:
        listed.append({"sample_id": a["sample_id"], "question_index": a["question_index"],
                       "reason": "answer the set leaves out"})
    if existing.get(name) == version:
        result.already = True
        return result
    files_info = [{"name": p.name, "sha256": s} for p, s in zip(paths, shas)]
    now = utc_now()
    for a in answers:
        q = (a["sample_id"], int(a["question_index"]))
        if q not in got:
            continue
        v = got[q]
        score = 1.0 if v["verdict"] else 0.0
        rec = {"sample_id": q[0], "question_index": q[1], "category": a["category"], "protocol": VERDICTS_PROTOCOL,
               "judge_model": f"verdicts/{slug(name)}", "prompt_version": version, "answer_config_key": a["config_key"],
               "answerer": a["answerer"],
               "runs": [{"run": 0, "score": score, "explanation": v["explanation"], "error": None, "input_tokens": 0,
                         "output_tokens": 0, "cached": False, "params": {}}],
               "mean": score, "std": 0.0, "n_ok": 1, "n_runs": 1, "warning": None, "params": {},
               "status": "complete", "failed_runs": [], "created_at": now,
               "judge_name": name, "label": v["label"], "verdict_files": files_info}
        if v["class"] is not None:
            rec["class"] = str(v["class"])
        run.append(JUDGEMENTS_FILE, rec)
    path = run.path / LISTING_FILE
    listing = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    listing[name] = {"files": files_info, "mapping": mapping.as_dict(), "records": result.records, "added": len(got),
                     "answers": len(answers), "human": is_human(name), "listed": listed, "added_at": now}
    path.write_text(json.dumps(listing, indent=1, ensure_ascii=False, default=str), encoding="utf-8")
    return result
