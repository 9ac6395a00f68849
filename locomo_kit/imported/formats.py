"""Reading other harnesses' per-question outputs: four presets and a generic mapping.

A :class:`Mapping` says where a file's records are and which fields hold what; every preset is
one, so a new harness's file imports without code (``--map records=results --map answer=pred``
or a small JSON mapping file). Field paths are dotted (``metrics.llm_judge.score``).

``records``: the dotted path of the list of records (``""``: the file is the list); ``*``: the file
is an object whose values are lists, one per conversation (Mem0's and Zep's shape). The
conversation of a record is then read from:

- a field (``conversation=conversation_id``): a sample id (``conv-26``) or a position in the
  dataset (``0`` … ``9``, as a number or a string; any text ending in digits, such as
  ``locomo_experiment_user_3``, is read as the position its digits give);
- ``@key``: the key of the object the record's list sits under (with ``records=*``);
- ``@file``: the file (one file per conversation), by the conversation its records' field names,
  else the digits in the file's name (``…_conv3_…``);
- ``@sequence``: records in dataset order, a new conversation each time the question index falls
  back (memU's ``qa_index`` restarts at 0 for each conversation);
- ``=conv-26`` (``--conversation conv-26``): every record is of that conversation (a file of one);
- none named (``@text``): each record's conversation is the one whose question has the record's text, where
  that text is unique in the dataset (a record whose text several conversations ask is listed as ambiguous).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from locomo_kit.dataset import CATEGORY_NAMES


class ImportFormatError(ValueError):
    """The file cannot be read with this format or mapping (what is wrong and what to do)."""


# the names harnesses give LoCoMo's categories (Mem0's paper names ids 1-4 differently: see scoring.md)
DEFAULT_CATEGORY_NAMES: dict[str, int] = {
    **{name: cid for cid, name in CATEGORY_NAMES.items()},
    **{name.replace("-", "_"): cid for cid, name in CATEGORY_NAMES.items()},
}
TRUE_WORDS = {"true", "correct", "yes", "1", "1.0", "right"}
FALSE_WORDS = {"false", "wrong", "incorrect", "no", "0", "0.0"}
MAPPING_FIELDS = ("records", "conversation", "question", "index", "answer", "category", "verdict", "gold",
                  "explanation", "f1", "bleu", "claim")


@dataclass
class Mapping:
    """Where the records are and which (dotted) fields hold what; None: the file has no such field."""

    records: str = ""
    conversation: str | None = None
    question: str | None = None
    index: str | None = None
    answer: str = "answer"
    category: str | None = None
    verdict: str | None = None
    gold: str | None = None  # the source's gold answer (for the listing; the kit scores against LoCoMo's)
    explanation: str | None = None  # the source judge's reason
    f1: str | None = None  # the source's own per-question scores, compared with the kit's
    bleu: str | None = None
    claim: str | None = None  # a dotted path to the file's own summary J (a fraction or a percentage)
    category_names: dict[str, int] = field(default_factory=dict)  # the file's category labels → LoCoMo ids
    verdict_optional: bool = False  # files come with and without verdicts and categories (Mem0's forks, Zep's)

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items()
                if (v not in (None, {}, "", False) or k in ("records", "answer"))}

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "the mapping") -> "Mapping":
        unknown = sorted(set(data) - set(MAPPING_FIELDS) - {"category_names", "verdict_optional"})
        if unknown:
            raise ImportFormatError(f"{where}: unknown key(s) {', '.join(unknown)}; a mapping names "
                                    f"{', '.join(MAPPING_FIELDS)} and category_names")
        names = data.get("category_names") or {}
        if not isinstance(names, dict):
            raise ImportFormatError(f"{where}: category_names must map the file's labels to LoCoMo ids 1-5")
        bad = {k: v for k, v in names.items() if str(v) not in {"1", "2", "3", "4", "5"}}
        if bad:
            raise ImportFormatError(f"{where}: category_names must map to LoCoMo ids 1-5, got {bad}")
        mapping = cls(**{k: (str(v) if v is not None else None) for k, v in data.items()
                         if k not in ("category_names", "verdict_optional")},
                      category_names={str(k).lower(): int(v) for k, v in names.items()},
                      verdict_optional=bool(data.get("verdict_optional")))
        if mapping.question is None and mapping.index is None:
            raise ImportFormatError(f"{where}: name the field that holds the question text (question=…) or its "
                                    "index in the conversation (index=…): records are matched by one of them")
        if mapping.conversation is None:  # inferred from the question texts, where each is unique in the dataset
            if mapping.question is None:
                raise ImportFormatError(f"{where}: name the conversation of each record (conversation=<field>, @key, "
                                        "@file, @sequence, or --conversation conv-26 for a file of one): records "
                                        "matched by index alone cannot be placed by their text")
            mapping.conversation = "@text"
        return mapping


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    mapping: Mapping
    several_files: bool = False  # one file per conversation (Cognee)


PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset("mem0", "Mem0's evaluation format (Memobase and other forks): {conversation index: [{question, answer "
           "(gold), response, category, bleu_score, f1_score, llm_score}]}",
           Mapping(records="*", conversation="@key", question="question", answer="response", category="category",
                   verdict="llm_score", gold="answer", f1="f1_score", bleu="bleu_score", verdict_optional=True)),
    Preset("zep", "Zep's responses or grades: {locomo_experiment_user_<i>: [{question, answer, golden_answer, "
           "grade, category}]} (the grades file carries the verdicts)",
           Mapping(records="*", conversation="@key", question="question", answer="answer", category="category",
                   verdict="grade", gold="golden_answer", verdict_optional=True)),
    Preset("cognee", "Cognee's per-conversation metrics files: [{conversation_id, question_idx, category, answer, "
           "metrics.llm_judge.score}], joined by question index (no question text)",
           Mapping(records="", conversation="conversation_id", index="question_idx", answer="answer",
                   category="category", verdict="metrics.llm_judge.score", explanation="metrics.llm_judge.reason"),
           several_files=True),
    Preset("memu", "memU's result.json: {summary{overall_accuracy}, detailed_results: [{qa_index, question, "
           "generated_answer, standard_answer, category, is_correct}]}",
           Mapping(records="detailed_results", conversation="@sequence", question="question", index="qa_index",
                   answer="generated_answer", category="category", verdict="is_correct", gold="standard_answer",
                   explanation="explanation", claim="summary.overall_accuracy")),
)}


@dataclass
class SourceRecord:
    """One record as the file gives it, before matching."""

    file: str
    position: int  # the record's number in its file (0-based)
    conversation: Any  # the raw conversation reference (a key, a field's value, a position)
    question: str | None
    index: int | None
    prediction: Any
    category: int | None
    verdict: bool | None
    gold: Any = None
    explanation: str | None = None
    f1: float | None = None
    bleu: float | None = None


def get_path(obj: Any, path: str) -> Any:
    """The value at a dotted ``path`` (a KeyError naming the missing part when absent)."""
    for part in path.split(".") if path else []:
        if isinstance(obj, dict) and part in obj:
            obj = obj[part]
        elif isinstance(obj, list) and part.isdigit() and int(part) < len(obj):
            obj = obj[int(part)]
        else:
            raise KeyError(part)
    return obj


def read_json(path: Path) -> Any:
    """A JSON document, or JSON Lines (one object a line): a clear error for anything else."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ImportFormatError(f"{path}: not a text file (not UTF-8): expected JSON or JSON Lines") from None
    except OSError as exc:
        raise ImportFormatError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as first:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if len(lines) > 1:
            try:
                return [json.loads(ln) for ln in lines]
            except json.JSONDecodeError:
                pass
        raise ImportFormatError(f"{path}: not JSON or JSON Lines ({first.msg} at line {first.lineno}, column "
                                f"{first.colno}): export the harness's per-question results as JSON") from None


def category_id(value: Any, names: dict[str, int]) -> int | None:
    """A LoCoMo category id from a number, a numeric string or a label (``names`` first, then LoCoMo's)."""
    if value is None or value == "":
        return None
    text = str(value).strip().lower()
    if text in names:
        return names[text]
    if text in DEFAULT_CATEGORY_NAMES:
        return DEFAULT_CATEGORY_NAMES[text]
    if re.fullmatch(r"[1-5](\.0)?", text):
        return int(float(text))
    raise ImportFormatError(f"category {value!r} is not a LoCoMo category id (1-5) or a known name: map it with "
                            f"category_names (e.g. --category-name {text}=4)")


def verdict_of(value: Any) -> bool | None:
    """The source's verdict as True/False (booleans, 0/1, scores in [0, 1], CORRECT/WRONG); None when absent."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        if 0 <= value <= 1:
            return value >= 0.5
        if 0 <= value <= 100:
            return value >= 50
    text = str(value).strip().lower()
    if text in TRUE_WORDS:
        return True
    if text in FALSE_WORDS:
        return False
    raise ImportFormatError(f"verdict {value!r} is neither true/false, 0/1, a score in [0, 1] nor CORRECT/WRONG")


def _number(value: Any) -> float | None:
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None


def _optional(raw: dict, path: str | None, where: str, required: bool = False) -> Any:
    if path is None:
        return None
    try:
        return get_path(raw, path)
    except KeyError:
        if required:
            raise
        return None


def read_records(paths: list[Path], mapping: Mapping) -> tuple[list[SourceRecord], dict[str, Any]]:
    """Every record of ``paths`` under ``mapping``, and what the files say about themselves (``claim``).

    Raises :class:`ImportFormatError` when a file is not JSON, its records are not where the mapping
    says, or the first record lacks a field the mapping names (a mapping for another file)."""
    out: list[SourceRecord] = []
    info: dict[str, Any] = {}
    for path in paths:
        doc = read_json(path)
        groups = _groups(doc, mapping, path)
        if mapping.claim:
            try:
                info["claim"] = float(get_path(doc, mapping.claim))
                info["claim_path"] = mapping.claim
            except (KeyError, TypeError, ValueError):
                pass
        position = 0
        for key, items in groups:
            for raw in items:
                out.append(_record(raw, mapping, path, position, key))
                position += 1
    if mapping.conversation == "@sequence":
        _number_sequence(out)
    if mapping.verdict_optional and len(paths) == 2:
        out, info["joined"] = join_verdicts(out)
    return out, info


def join_verdicts(records: list[SourceRecord]) -> tuple[list[SourceRecord], str]:
    """Two files of the same answers, one with verdicts (Zep's responses and grades): the graded file's
    records, after checking that every answer of the other file is the same (an error otherwise)."""
    files = list(dict.fromkeys(r.file for r in records))
    by_file = {f: [r for r in records if r.file == f] for f in files}
    graded = [f for f in files if any(r.verdict is not None for r in by_file[f])]
    if len(graded) != 1:
        raise ImportFormatError(f"two files ({', '.join(files)}): expected one with verdicts (grades) and one "
                                f"without (responses), found {len(graded)} with verdicts; import them one at a time")
    other = next(f for f in files if f != graded[0])

    def keyed(rs: list[SourceRecord]) -> dict[tuple, SourceRecord]:  # a question asked twice: its nth occurrence
        seen: dict[tuple, int] = {}
        out = {}
        for r in rs:
            k = (str(r.conversation), r.question)
            seen[k] = seen.get(k, 0) + 1
            out[(*k, seen[k])] = r
        return out

    answers, primary = keyed(by_file[other]), keyed(by_file[graded[0]])
    differ = [r for k, r in primary.items() if k in answers and answers[k].prediction != r.prediction]
    missing = sum(k not in answers for k in primary)
    if differ:
        r = differ[0]
        raise ImportFormatError(f"{other} and {graded[0]} disagree on {len(differ)} answers (first: conversation "
                                f"{r.conversation}, {r.question!r}): they are not the same run")
    return by_file[graded[0]], (f"{graded[0]} joined with {other}: the same answers"
                                + (f" ({missing} of the graded records have no response)" if missing else ""))


def _groups(doc: Any, mapping: Mapping, path: Path) -> list[tuple[Any, list]]:
    if mapping.records == "*":
        if not isinstance(doc, dict) or not all(isinstance(v, list) for v in doc.values()) or not doc:
            raise ImportFormatError(f"{path}: records=* expects an object of lists (one per conversation), got "
                                    f"{type(doc).__name__}" + (f" with keys {', '.join(list(doc)[:5])}"
                                                               if isinstance(doc, dict) else ""))
        return [(k, v) for k, v in doc.items()]
    try:
        items = get_path(doc, mapping.records)
    except KeyError as exc:
        keys = ", ".join(list(doc)[:8]) if isinstance(doc, dict) else type(doc).__name__
        raise ImportFormatError(f"{path}: no {mapping.records!r} (missing {exc.args[0]!r}; the file has {keys}): "
                                "set records= to the path of the list of per-question records") from None
    if not isinstance(items, list):
        raise ImportFormatError(f"{path}: {mapping.records or 'the file'} is a {type(items).__name__}, not a list of "
                                "records: set records= (or records=* for an object of lists per conversation)")
    return [(path.name, items)]


def _record(raw: Any, m: Mapping, path: Path, position: int, key: Any) -> SourceRecord:
    where = f"{path.name} record {position}"
    if not isinstance(raw, dict):
        raise ImportFormatError(f"{where} is a {type(raw).__name__}, not an object: check records=")
    missing = [f"{name}={p}" for name, p in (("answer", m.answer), ("question", m.question), ("index", m.index),
                                             ("category", None if m.verdict_optional else m.category),
                                             ("verdict", None if m.verdict_optional else m.verdict))
               if p is not None and _missing(raw, p)]
    if m.conversation and m.conversation[0] not in "@=" and _missing(raw, m.conversation):
        missing.append(f"conversation={m.conversation}")
    if missing:
        raise ImportFormatError(f"{where}: the mapping names field(s) the record does not have: {', '.join(missing)} "
                                f"(the record has {', '.join(sorted(raw))}); fix the mapping")
    try:
        category = category_id(_optional(raw, m.category, where), m.category_names)
        verdict = verdict_of(_optional(raw, m.verdict, where))
    except ImportFormatError as exc:
        raise ImportFormatError(f"{where}: {exc}") from None
    index = _optional(raw, m.index, where)
    if index is not None:
        try:
            index = int(index)
        except (TypeError, ValueError):
            raise ImportFormatError(f"{where}: index {index!r} is not a whole number") from None
    if m.conversation == "@key":
        conversation = key
    elif m.conversation == "@file":
        conversation = ("@file", path.name)
    elif m.conversation == "@sequence":
        conversation = None  # numbered by _number_sequence
    elif m.conversation == "@text":
        conversation = ("@text",)  # found by the question's text (imported.matching)
    elif m.conversation.startswith("="):
        conversation = m.conversation[1:]  # --conversation: the file's one conversation
    else:
        conversation = _optional(raw, m.conversation, where)
    question = _optional(raw, m.question, where)
    explanation = _optional(raw, m.explanation, where)
    return SourceRecord(file=path.name, position=position, conversation=conversation,
                        question=None if question is None else str(question), index=index,
                        prediction=_optional(raw, m.answer, where), category=category, verdict=verdict,
                        gold=_optional(raw, m.gold, where), explanation=None if explanation is None else str(explanation),
                        f1=_number(_optional(raw, m.f1, where)), bleu=_number(_optional(raw, m.bleu, where)))


def _missing(raw: dict, path: str) -> bool:
    try:
        get_path(raw, path)
        return False
    except KeyError:
        return True


def _number_sequence(records: list[SourceRecord]) -> None:
    if any(r.index is None for r in records):
        raise ImportFormatError("conversation=@sequence needs an index field (a new conversation starts where the "
                                "index falls back)")
    conv, last = 0, -1
    for r in records:
        if r.index <= last:
            conv += 1
        r.conversation, last = conv, r.index


def parse_map_options(items: list[str]) -> dict[str, Any]:
    """``--map key=value`` and ``--category-name label=id`` pairs as a mapping dict."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise ImportFormatError(f"--map {item!r}: expected key=value (e.g. --map answer=prediction)")
        out[key.strip()] = value.strip() if value.strip() not in ("", "none", "None") else None
    return out


def load_mapping(preset: str | None = None, mapping_file: str | Path | None = None,
                 overrides: dict[str, Any] | None = None, category_names: dict[str, int] | None = None) -> Mapping:
    """The mapping of a preset, a mapping file, ``--map`` overrides, or those combined (later wins)."""
    data: dict[str, Any] = {}
    if preset:
        if preset not in PRESETS:
            raise ImportFormatError(f"unknown preset {preset!r}: one of {', '.join(PRESETS)} (or describe the file "
                                    "with --mapping FILE / --map key=value)")
        data = PRESETS[preset].mapping.as_dict()
    if mapping_file:
        path = Path(mapping_file)
        raw = read_json(path)
        if not isinstance(raw, dict):
            raise ImportFormatError(f"{path}: a mapping file is a JSON object (records, question, answer, …)")
        data.update(raw)
    data.update(overrides or {})
    if category_names:
        data["category_names"] = {**(data.get("category_names") or {}), **category_names}
    if not data or set(data) <= {"conversation", "category_names"}:
        raise ImportFormatError("say how to read the file: a preset (--preset " + "|".join(PRESETS) + "), "
                                "--mapping FILE or --map key=value …")
    return Mapping.from_dict(data, "the mapping")


QUESTION_FIELDS = ("question", "query", "q", "prompt")
ANSWER_FIELDS = ("response", "prediction", "predicted", "generated_answer", "pred", "output", "model_answer",
                 "answer")
CONVERSATION_FIELDS = ("conversation", "conversation_id", "sample_id", "conv", "conv_id")


def _fields(records: list) -> list[str]:
    keys: dict[str, None] = {}
    for r in records[:20]:
        if isinstance(r, dict):
            keys.update(dict.fromkeys(r))
    return list(keys)


def _pick(fields: list[str], names: tuple[str, ...]) -> str | None:
    lower = {f.lower(): f for f in fields}
    return next((lower[n] for n in names if n in lower), None)


def _suggestion(fields: list[str], records: str, conversation: str | None) -> str:
    question, answer = _pick(fields, QUESTION_FIELDS), _pick(fields, ANSWER_FIELDS)
    if question is None or answer is None:
        return (f"name the field with each question's text (--map question=FIELD) and the one with the answer "
                f"(--map answer=FIELD){'' if records == '' else f' with --map records={records}'}")
    conv = _pick(fields, CONVERSATION_FIELDS)
    parts = [f"--map records={records}" if records else "--map records=", f"--map question={question}",
             f"--map answer={answer}"]
    if conversation:
        parts.append(f"--map conversation={conversation}")
    elif conv:
        parts.append(f"--map conversation={conv}")
    category = _pick(fields, ("category", "category_id", "type"))
    if category:
        parts.append(f"--map category={category}")
    tail = "" if conversation or conv else (" (no conversation field: add --conversation conv-26 for a file of one "
                                            "conversation, or leave it out to find each record's by its question text)")
    return "would read it: " + " ".join(parts) + tail


def describe_file(path: Path) -> str:
    """What ``path`` holds, in one line (an object with keys …, a list of N records with fields …, not JSON at line
    L), and which mapping would read it."""
    try:
        doc = read_json(path)
    except ImportFormatError as exc:
        return str(exc)
    if isinstance(doc, list):
        fields = _fields(doc)
        found = f"{path.name}: a list of {len(doc)} records" + (f" with fields {', '.join(fields[:12])}" if fields
                                                                 else " (none an object)")
        return found + ("; " + _suggestion(fields, "", None) if fields else "")
    if isinstance(doc, dict):
        keys = list(doc)
        lists = {k: v for k, v in doc.items() if isinstance(v, list) and v and isinstance(v[0], dict)}
        found = f"{path.name}: an object with keys {', '.join(keys[:12])}" + (" …" if len(keys) > 12 else "")
        if lists and len(lists) == len(keys):  # one list per conversation (Mem0's and Zep's shape)
            fields = _fields(next(iter(lists.values())))
            return (f"{found}, each a list of records with fields {', '.join(fields[:12])}; "
                    + _suggestion(fields, "*", "@key") + " (or --preset mem0 / zep if it is theirs)")
        if lists:
            key, items = max(lists.items(), key=lambda kv: len(kv[1]))
            fields = _fields(items)
            return (f"{found}; {key!r} is a list of {len(items)} records with fields {', '.join(fields[:12])}; "
                    + _suggestion(fields, key, None))
        return f"{found}, and no list of per-question records in it: export the harness's per-question results"
    return f"{path.name}: a JSON {type(doc).__name__}, not per-question records"
