"""LoCoMo as it really is on disk (scoring.md §1), read into typed, validated objects.

The whole file is validated before anything is returned: a file that is not LoCoMo, or a sample
that breaks the schema, raises :class:`DatasetError` naming the sample, the key and what was
expected, instead of yielding a half-loaded dataset.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable

from locomo_kit.paths import default_dataset_path

CATEGORY_NAMES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
ADVERSARIAL = 5
SESSION_DATE_FORMAT = "%I:%M %p on %d %B, %Y"

_SESSION_KEY = re.compile(r"session_(\d+)")
_DIA_ID = re.compile(r"D:?(\d+):(\d+)")


class DatasetError(ValueError):
    """The dataset file is missing, not JSON, or not LoCoMo."""

    def _render_traceback_(self) -> list[str]:
        """What IPython (a notebook, papermill) shows instead of the traceback: the message says what to do."""
        return [f"{type(self).__name__}: {self}"]


class UnknownSample(DatasetError, KeyError):
    """A sample id the dataset does not have (a KeyError too, as before); the message lists the known ones."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class Turn:
    speaker: str
    dia_id: str
    text: str
    image_caption: str | None = None
    image_urls: tuple[str, ...] = ()

    @property
    def session(self) -> int:
        return int(self.dia_id[1:].split(":")[0])


@dataclass(frozen=True)
class Session:
    number: int
    date_time: str
    date: datetime
    turns: tuple[Turn, ...]
    observation: dict[str, Any] | None = None  # dataset authors' generated facts, not for ingestion
    summary: str | None = None
    events: dict[str, Any] | None = None


@dataclass(frozen=True)
class Question:
    sample_id: str
    index: int  # position in the sample's qa list: the stable key of a question
    question: str
    answer: str | None  # str() of the gold answer; None for most adversarial items
    category: int
    evidence: tuple[str, ...]
    adversarial_answer: str | None = None

    @property
    def category_name(self) -> str:
        return CATEGORY_NAMES[self.category]


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...] = field(repr=False)
    # set by :func:`first_sessions`: the conversation's whole size, (sessions, questions)
    whole: tuple[int, int] | None = None

    @property
    def partial(self) -> bool:
        """Only the first sessions of the conversation (``conv-26@s2``), and the questions about them."""
        return self.whole is not None

    @property
    def turns(self) -> list[Turn]:
        return [t for s in self.sessions for t in s.turns]

    def turn_index(self) -> dict[str, Turn]:
        return {t.dia_id: t for t in self.turns}


def normalize_evidence(raw: Iterable[str]) -> tuple[str, ...]:
    """Split and repair evidence ids: ``"D8:6; D9:17"`` → two ids, ``"D:11:26"`` → ``"D11:26"``.

    Strings that hold no dia_id at all (the data has one bare ``"D"``) are dropped.
    """
    out: list[str] = []
    for item in raw:
        for m in _DIA_ID.finditer(str(item)):
            dia = f"D{int(m.group(1))}:{int(m.group(2))}"
            if dia not in out:
                out.append(dia)
    return tuple(out)


def _require(obj: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise DatasetError(f"{where}: missing key '{key}'")
    value = obj[key]
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise DatasetError(f"{where}: key '{key}' should be {names}, got {type(value).__name__}")
    return value


def _parse_turn(raw: Any, where: str) -> Turn:
    if not isinstance(raw, dict):
        raise DatasetError(f"{where}: a turn should be an object, got {type(raw).__name__}")
    dia_id = _require(raw, "dia_id", str, where)
    if not re.fullmatch(r"D\d+:\d+", dia_id):
        raise DatasetError(f"{where}: dia_id {dia_id!r} is not of the form 'D<session>:<turn>'")
    urls = raw.get("img_url") or []
    return Turn(
        speaker=_require(raw, "speaker", str, where),
        dia_id=dia_id,
        text=_require(raw, "text", str, where),
        image_caption=raw.get("blip_caption") or None,
        image_urls=tuple(urls) if isinstance(urls, list) else (str(urls),),
    )


def _parse_sessions(sample: dict[str, Any], where: str) -> tuple[Session, ...]:
    conv = _require(sample, "conversation", dict, where)
    obs = sample.get("observation") or {}
    summaries = sample.get("session_summary") or {}
    events = sample.get("event_summary") or {}
    numbers = sorted(int(m.group(1)) for k in conv if (m := _SESSION_KEY.fullmatch(k)))
    if not numbers:
        raise DatasetError(f"{where}: 'conversation' has no session_N lists")
    sessions = []
    for n in numbers:
        key = f"session_{n}"
        turns_raw = _require(conv, key, list, f"{where}.conversation")
        date_str = _require(conv, f"{key}_date_time", str, f"{where}.conversation")
        try:
            date = datetime.strptime(date_str, SESSION_DATE_FORMAT)
        except ValueError:
            raise DatasetError(
                f"{where}.conversation: '{key}_date_time' = {date_str!r}, expected a date like "
                "'1:56 pm on 8 May, 2023'"
            ) from None
        turns = tuple(_parse_turn(t, f"{where}.conversation.{key}[{i}]") for i, t in enumerate(turns_raw))
        sessions.append(
            Session(
                number=n,
                date_time=date_str,
                date=date,
                turns=turns,
                observation=obs.get(f"{key}_observation"),
                summary=summaries.get(f"{key}_summary"),
                events=events.get(f"events_{key}"),
            )
        )
    return tuple(sessions)


def _parse_question(sample_id: str, index: int, raw: Any, where: str) -> Question:
    category = _require(raw, "category", int, where)
    if category not in CATEGORY_NAMES:
        raise DatasetError(f"{where}: category {category} is not one of 1-5")
    answer = raw.get("answer")
    if answer is None and category != ADVERSARIAL:
        raise DatasetError(f"{where}: missing key 'answer' (required for category {category})")
    adv = raw.get("adversarial_answer")
    return Question(
        sample_id=sample_id,
        index=index,
        question=_require(raw, "question", str, where),
        answer=None if answer is None else str(answer),
        category=category,
        evidence=normalize_evidence(_require(raw, "evidence", list, where)),
        adversarial_answer=None if adv is None else str(adv),
    )


def parse_sample(sample: Any, position: int = 0) -> Conversation:
    """Validate one raw sample and return it as a :class:`Conversation`."""
    where = f"sample #{position}"
    if not isinstance(sample, dict):
        raise DatasetError(f"{where}: expected an object, got {type(sample).__name__}")
    sample_id = _require(sample, "sample_id", str, where)
    where = f"sample {sample_id!r}"
    conv = _require(sample, "conversation", dict, where)
    qa = _require(sample, "qa", list, where)
    return Conversation(
        sample_id=sample_id,
        speaker_a=_require(conv, "speaker_a", str, f"{where}.conversation"),
        speaker_b=_require(conv, "speaker_b", str, f"{where}.conversation"),
        sessions=_parse_sessions(sample, where),
        questions=tuple(_parse_question(sample_id, i, q, f"{where}.qa[{i}]") for i, q in enumerate(qa)),
    )


def _refetch_hint(path: Path) -> str:
    """How to replace a damaged copy, for the project's own copy (another file is the user's own)."""
    if path.resolve() != default_dataset_path().resolve():
        return ""
    return ". Replace it with the pinned release: `locomo-kit data fetch --force` (with LOCOMO_SOURCE=… offline)"


# Datasets parsed in this process, by (path, size, modification time, inode): every stage of a run, a report and a
# leaderboard's page read the same file again (its conversations are frozen, so they are shared)
_PARSED: dict[tuple[str, int, int, int], tuple[Conversation, ...]] = {}
PARSED_DATASETS = 4


def load_dataset(path: str | Path | None = None) -> list[Conversation]:
    """Read and validate the whole LoCoMo file (default ``data/locomo10.json``)."""
    path = Path(path) if path else default_dataset_path()
    if not path.is_file():
        raise DatasetError(
            f"No dataset at {path}. Fetch it with `locomo-kit data fetch` "
            "(or LOCOMO_SOURCE=/path/to/locomo10.json locomo-kit data fetch)."
        )
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ino)
    if key not in _PARSED:
        if len(_PARSED) >= PARSED_DATASETS:
            _PARSED.pop(next(iter(_PARSED)))
        _PARSED[key] = tuple(_parse_dataset(path))
    return list(_PARSED[key])


def _parse_dataset(path: Path) -> list[Conversation]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path} is not valid JSON ({exc.msg}, line {exc.lineno}, column {exc.colno})"
                           f"{_refetch_hint(path)}") from None
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path} is not UTF-8 text: {exc}{_refetch_hint(path)}") from None
    if not isinstance(raw, list) or not raw:
        raise DatasetError(f"{path} is not LoCoMo: expected a non-empty list of samples at the top level")
    conversations = [parse_sample(s, i) for i, s in enumerate(raw)]
    ids = Counter(c.sample_id for c in conversations)
    dupes = [k for k, v in ids.items() if v > 1]
    if dupes:
        raise DatasetError(f"{path}: duplicate sample_id {dupes}")
    return conversations


def get_conversation(dataset: list[Conversation], sample_id: str) -> Conversation:
    for conv in dataset:
        if conv.sample_id == sample_id:
            return conv
    known = ", ".join(c.sample_id for c in dataset)
    raise UnknownSample(f"Unknown sample {sample_id!r}. Known samples: {known}")


_SESSIONS_SUFFIX = re.compile(r"^(?P<sample>.*)@s(?P<n>[0-9]+)$")


def with_sessions(sample: str, sessions: int | None) -> str:
    """The selector of ``sample`` limited to each conversation's first ``sessions`` sessions
    (``"conv-26"``, 2 → ``"conv-26@s2"``); None leaves it as it is."""
    if sessions is None:
        return sample
    if not isinstance(sessions, int) or sessions < 1:
        raise ValueError(f"the number of sessions must be a positive integer, got {sessions!r}")
    base, already = split_sessions(sample)
    if already is not None and already != sessions:
        raise ValueError(f"{sample!r} already names its first {already} sessions; not also {sessions}")
    return f"{base}@s{sessions}"


def split_sessions(sample: str) -> tuple[str, int | None]:
    """``"conv-26@s2"`` → ``("conv-26", 2)``; ``"conv-26"`` → ``("conv-26", None)``."""
    m = _SESSIONS_SUFFIX.match(sample or "")
    if not m:
        return sample, None
    n = int(m["n"])
    if n < 1:
        raise ValueError(f"{sample!r}: the number of sessions after '@s' must be at least 1")
    return m["sample"], n


def first_sessions(conv: Conversation, n: int) -> Conversation:
    """The conversation's first ``n`` sessions, with only the questions whose evidence lies wholly
    in them (a question without evidence is dropped: nothing says the memory could answer it).
    Questions keep their indexes; ``whole`` records the conversation's full size. ``n`` at or past
    the last session gives the conversation unchanged."""
    if n >= len(conv.sessions):
        return conv
    kept = conv.sessions[:n]
    ids = {t.dia_id for s in kept for t in s.turns}
    asked = tuple(q for q in conv.questions if q.evidence and all(e in ids for e in q.evidence))
    return replace(conv, sessions=kept, questions=asked, whole=(len(conv.sessions), len(conv.questions)))


def partial_note(conv: Conversation) -> str | None:
    """``conv-26: the first 2 of 19 sessions and the 20 of 199 questions about them`` (None for a whole one)."""
    if conv.whole is None:
        return None
    sessions, asked = conv.whole
    return (f"{conv.sample_id}: the first {len(conv.sessions)} of {sessions} sessions, and the {len(conv.questions)} "
            f"of {asked} questions (all five categories) whose evidence lies in them")


def select(dataset: list[Conversation], sample: str = "all") -> list[Conversation]:
    """``"all"``, one sample id, or a comma-separated list of ids; a suffix ``@sN`` (``conv-26@s2``,
    ``all@s3``) keeps each conversation's first N sessions and the questions about them
    (:func:`first_sessions`)."""
    sample, n = split_sessions(sample)
    if sample in ("all", "", None):
        chosen = list(dataset)
    else:
        chosen = [get_conversation(dataset, s.strip()) for s in sample.split(",")]
    return chosen if n is None else [first_sessions(c, n) for c in chosen]


def sessions(conv: Conversation) -> tuple[Session, ...]:
    return conv.sessions


def questions(conv: Conversation, include_adversarial: bool = False) -> list[Question]:
    """The conversation's questions; category 5 only when asked (it has no gold answer)."""
    return [q for q in conv.questions if include_adversarial or q.category != ADVERSARIAL]


def all_questions(conv: Conversation) -> list[Question]:
    return questions(conv, include_adversarial=True)


def dataset_stats(dataset: list[Conversation]) -> dict[str, Any]:
    by_cat = Counter(q.category for c in dataset for q in c.questions)
    turns = [t for c in dataset for t in c.turns]
    return {
        "conversations": len(dataset),
        "sessions": sum(len(c.sessions) for c in dataset),
        "turns": len(turns),
        "image_turns": sum(1 for t in turns if t.image_caption),
        "questions": sum(by_cat.values()),
        "questions_by_category": {k: by_cat.get(k, 0) for k in sorted(CATEGORY_NAMES)},
        "questions_excluding_adversarial": sum(v for k, v in by_cat.items() if k != ADVERSARIAL),
    }


def conversation_table(dataset: list[Conversation]) -> list[dict[str, Any]]:
    """One row per conversation: sessions, turns, questions, date span."""
    rows = []
    for c in dataset:
        rows.append(
            {
                "sample_id": c.sample_id,
                "speakers": f"{c.speaker_a} & {c.speaker_b}",
                "sessions": len(c.sessions),
                "turns": len(c.turns),
                "questions": len(c.questions),
                "first_session": c.sessions[0].date.date().isoformat(),
                "last_session": c.sessions[-1].date.date().isoformat(),
            }
        )
    return rows
