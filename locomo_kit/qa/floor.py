"""An LLM answerer's no-memory floor: each question of a run asked of its answerer with the same prompt and an
empty context (no memory at all), scored with the official F1, measured by the answer stage.

The calls take the run's own call path (:func:`locomo_kit.llm.execute.execute`: the LLM cache, a plan with its
cost estimate, ``--max-cost``, the confirmation, the pool's concurrency, rate limits and retries) as a stage of
their own, ``no-memory floor``, with its own plan line. What they answered is kept twice: in the run folder
(``floor.jsonl``, which its report reads) and under ``outputs/floors/``, one file per conversation, named by
the answerer and keyed by everything its answers depend on (provider, model, server, API version, the
prompt's system text, version and max tokens, the questions and their gold answers). A later run with the same
answerer on the same questions, whatever its memory system or budget, takes its floor from there and makes no
call; runs of one answerer measured at once (a leaderboard's parallel jobs) take turns, so the first measures
and the others find it cached. A conversation is cached only once every question of it was answered; a failed call is recorded as
failed, the run says so (its answer outcome, exit status and report) and the next run retries exactly those.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from locomo_kit.dataset import Conversation, Question, questions
from locomo_kit.llm import LLM
from locomo_kit.llm.base import LLMRequest
from locomo_kit.llm.cache import request_key
from locomo_kit.llm.execute import CallSettings, execute, unwrap
from locomo_kit.llm.pool import CallOutcome
from locomo_kit.paths import outputs_dir, write_atomic
from locomo_kit.qa.answering import ANSWER_OUTPUT_TOKENS, AnswerConfig, answer_request
from locomo_kit.qa.context import format_context
from locomo_kit.runs import FLOOR_FILE, RunFolder, load_floor, slug, utc_now
from locomo_kit.scoring.locomo_f1 import locomo_f1

FLOOR_STAGE = "no-memory floor"
LLM_FLOOR_VERSION = "llm-floor-v1"  # bump when what a floor file holds or how it is scored changes


def empty_context(config: AnswerConfig) -> str:
    """A floor call's context: the memory block as an empty retrieval shows it (no memory found), or, for the
    full-context source, no conversation at all."""
    return "" if config.source == "full-context" else format_context([])


def floor_gold(q: Question) -> str:
    """The gold the floor is scored against, as the extractive floor scores it (adversarial: none)."""
    return (q.answer or "") if q.category != 5 else ""


@dataclass
class ConversationFloor:
    """One conversation's floor calls and the key of its cache file."""

    conv: Conversation
    questions: list[Question]
    requests: list[LLMRequest]
    key: str
    answerer: str

    @property
    def path(self) -> Path:
        return outputs_dir() / "floors" / f"llm-{slug(self.answerer)}-{self.conv.sample_id}-{self.key}.json"

    def cached(self) -> dict[int, dict] | None:
        """Per question index: the cached answer and its F1 (None when this floor was never measured whole)."""
        if not self.path.is_file():
            return None
        return {int(k): v for k, v in json.loads(self.path.read_text(encoding="utf-8"))["questions"].items()}


def conversation_floor(conv: Conversation, *, llm: LLM, config: AnswerConfig) -> ConversationFloor:
    """The floor calls of ``conv``'s questions under ``config`` (its adversarial and limit choices)."""
    base, _ = unwrap(llm)
    qs = questions(conv, config.include_adversarial)[:config.limit]
    requests = [answer_request(config, q, empty_context(config)) for q in qs]
    blob = json.dumps([LLM_FLOOR_VERSION, conv.sample_id,
                       [[request_key(base, r), q.index, q.category, floor_gold(q)] for q, r in zip(qs, requests)]])
    return ConversationFloor(conv, qs, requests, hashlib.sha256(blob.encode()).hexdigest()[:16],
                             f"{base.provider}/{base.model}")


@dataclass
class FloorSummary:
    """What the floor stage did: questions answered now, taken from a cache, or failed."""

    answerer: str
    prompt_version: str
    keys: dict[str, str]  # sample id -> the conversation's floor key
    questions: int = 0
    answered: int = 0  # answered by a call now (or the LLM cache)
    already: int = 0  # already in this run's floor.jsonl
    reused: int = 0  # taken from outputs/floors (another run measured it): no call
    failed: int = 0
    reasons: list[str] = field(default_factory=list)
    input_tokens: int = 0  # of calls made now
    output_tokens: int = 0

    def line(self) -> str:
        status = "ok" if not self.failed else "INCOMPLETE"
        text = (f"{FLOOR_STAGE} {status}: {self.questions} question(s) of {self.answerer} with an empty context: "
                f"{self.answered} answered now, {self.already} already in this run, {self.reused} from the floor "
                f"cache, {self.failed} failed")
        return text + (f"; first error: {self.reasons[0]}" if self.reasons else "")

    @property
    def problem(self) -> str | None:
        """Why the run is not complete (None when every floor question was answered)."""
        if not self.failed:
            return None
        return (f"{FLOOR_STAGE}: {self.failed} of {self.questions} empty-context call(s) failed (first error: "
                f"{self.reasons[0]}); the report's floor leaves those questions out; rerun the same command to "
                "retry exactly those")

    def as_record(self) -> dict[str, Any]:
        return {"answerer": self.answerer, "prompt_version": self.prompt_version, "keys": self.keys,
                "questions": self.questions, "answered": self.answered, "already": self.already,
                "reused": self.reused, "failed": self.failed,
                "reasons": self.reasons[:5], "usage_this_call": {"input_tokens": self.input_tokens,
                                                                 "output_tokens": self.output_tokens},
                "measured_at": utc_now()}


def _record(part: ConversationFloor, q: Question, *, summary: FloorSummary, **kw: Any) -> dict[str, Any]:
    return {"sample_id": q.sample_id, "question_index": q.index, "category": q.category, "question": q.question,
            "gold": floor_gold(q), "answerer": summary.answerer, "prompt_version": summary.prompt_version,
            "floor_key": part.key, "created_at": utc_now(), **kw}


def measure_llm_floor(run: RunFolder, *, llm: LLM, answer: AnswerConfig, conversations: list[Conversation],
                      calls: CallSettings) -> FloorSummary:
    """Ask ``llm`` every question ``answer`` selects of ``conversations`` with an empty context (see module doc),
    recording each answer and its official F1 in ``run``'s ``floor.jsonl``; only what neither the run nor
    ``outputs/floors/`` holds is asked. Returns what was done (its ``problem`` says when calls failed)."""
    parts = [conversation_floor(c, llm=llm, config=answer) for c in conversations]
    base, _ = unwrap(llm)
    summary = FloorSummary(answerer=f"{base.provider}/{base.model}", prompt_version=answer.prompt_version,
                           keys={p.conv.sample_id: p.key for p in parts},
                           questions=sum(len(p.questions) for p in parts))
    run.update_manifest(answer={"floor": summary.as_record()})  # the keys, before any record names them
    with answerer_lock(summary.answerer):  # runs of one answerer at once (a leaderboard's jobs) measure it once
        _measure(run, parts=parts, llm=llm, summary=summary, calls=calls)
    run.update_manifest(answer={"floor": summary.as_record()})
    calls.log(summary.line())
    return summary


@contextmanager
def answerer_lock(answerer: str) -> Iterator[None]:
    """Held while one process measures ``answerer``'s floor: another that needs it waits, then finds it cached."""
    folder = outputs_dir() / "floors"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"llm-{slug(answerer)}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _measure(run: RunFolder, *, parts: list[ConversationFloor], llm: LLM, summary: FloorSummary,
             calls: CallSettings) -> None:
    base, _ = unwrap(llm)
    have = load_floor(run, summary.keys)
    todo: list[LLMRequest] = []
    owner: dict[int, tuple[ConversationFloor, Question]] = {}
    for part in parts:
        missing = [(q, r) for q, r in zip(part.questions, part.requests)
                   if have.get((q.sample_id, q.index), {}).get("status") != "ok"]
        summary.already += len(part.questions) - len(missing)
        cached = part.cached() if missing else None
        if cached is not None:
            for q, _ in missing:
                hit = cached[q.index]
                run.append(FLOOR_FILE, _record(part, q, summary=summary, prediction=hit["prediction"], f1=hit["f1"],
                                               status="ok", source="floor cache", error=None))
            summary.reused += len(missing)
            continue
        for q, r in missing:
            owner[id(r)] = (part, q)
            todo.append(r)
    lock = threading.Lock()

    def on_result(outcome: CallOutcome) -> None:
        part, q = owner[id(outcome.request)]
        c = outcome.completion
        with lock:
            if c is None:
                summary.failed += 1
                if len(summary.reasons) < 5:
                    summary.reasons.append(f"{q.sample_id} q{q.index}: {outcome.error}")
            else:
                summary.answered += 1
                if not c.cached:
                    summary.input_tokens += c.input_tokens
                    summary.output_tokens += c.output_tokens
        if c is None:
            run.append(FLOOR_FILE, _record(part, q, summary=summary, prediction=None, f1=None, status="failed",
                                           source="call", error=outcome.error))
            return
        prediction = c.text.strip()
        run.append(FLOOR_FILE, _record(part, q, summary=summary, prediction=prediction, status="ok",
                                       f1=locomo_f1(prediction, floor_gold(q), q.category), error=None,
                                       source="llm cache" if c.cached else "call", input_tokens=c.input_tokens,
                                       output_tokens=c.output_tokens))

    if todo:
        calls.log(f"{FLOOR_STAGE}: {len(todo):,} question(s) asked of {summary.answerer} with the answer prompt and an "
                  "empty context (no memory), so that the report shows what this answerer scores without memory; "
                  "once per answerer and question set (cached under outputs/floors/)")
        execute(llm, todo, on_result, stage=FLOOR_STAGE, settings=calls, output_per_call=ANSWER_OUTPUT_TOKENS,
                run=run, already_done=summary.already + summary.reused, log=calls.log, progress=calls.progress)
    have = load_floor(run, summary.keys)
    for part in parts:
        recs = [have.get((q.sample_id, q.index)) for q in part.questions]
        if part.questions and all(r and r["status"] == "ok" for r in recs) and not part.path.is_file():
            write_atomic(part.path, json.dumps({
                "version": LLM_FLOOR_VERSION, "answerer": summary.answerer, "server": getattr(base, "base_url", None),
                "prompt_version": summary.prompt_version, "sample_id": part.conv.sample_id,
                "questions": {str(r["question_index"]): {"category": r["category"], "prediction": r["prediction"],
                                                         "f1": r["f1"]} for r in recs if r}}, indent=1))
