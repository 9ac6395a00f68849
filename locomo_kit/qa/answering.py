"""The QA stage: for each question, search the Worker, build the context, answer, record.

Records go to ``answers.jsonl`` (one per question, appended as soon as it is answered); a rerun
skips questions already answered ``ok`` under the same configuration key, and retries failed ones.
"""

from __future__ import annotations

import hashlib
import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

from tqdm.auto import tqdm

from locomo_kit.dataset import Conversation, Question, questions
from locomo_kit.llm import LLM, LLMError
from locomo_kit.llm.base import LLMRequest
from locomo_kit.llm.execute import CallSettings, execute
from locomo_kit.llm.pool import CallOutcome
from locomo_kit.progress import tqdm_disable
from locomo_kit.qa.context import approx_tokens, fit_budget, format_context
from locomo_kit.qa.extractive import ExtractiveAnswerer
from locomo_kit.qa.oracle import evidence_memories
from locomo_kit.qa.prompts import (
    ANSWER_PROMPT_VERSION,
    ANSWER_SYSTEM,
    FULL_CONTEXT_PROMPT_VERSION,
    FULL_CONTEXT_SYSTEM,
    answer_user_prompt,
)
from locomo_kit.qa.retrieval import retrieve as retrieve_memories
from locomo_kit.qa.system_search import SystemSearch
from locomo_kit.runs import RunFolder, utc_now
from locomo_kit.runs.records import ANSWERS_FILE
from locomo_kit.systems.base import MemorySystem, MemorySystemError
from locomo_kit.systems.runner import observation
from locomo_kit.worker import transcript
from locomo_kit.worker.client import Observation, WorkerError

SOURCES = ("memory", "full-context", "oracle")
ANSWER_MAX_TOKENS = 64
ANSWER_OUTPUT_TOKENS = 16  # typical answer length, for the cost plan


@dataclass(frozen=True)
class AnswerConfig:
    source: str = "memory"
    answer_model: str = "extractive"  # resolved: extractive, anthropic/<m>, openai/<m>, fake/<m>
    top_k: int = 8
    include_adversarial: bool = False
    context_budget: int | None = None  # tokens of memories per question; then top_k only caps the count
    query_strategy: str = "question"  # question | keywords (the kit's fusion: see qa/retrieval.py)
    limit: int | None = None  # the first N questions of each sample (the run folder is named for it, not the key)

    @property
    def prompt_version(self) -> str:
        if self.answer_model == "extractive":
            return "extractive-v1"
        return FULL_CONTEXT_PROMPT_VERSION if self.source == "full-context" else ANSWER_PROMPT_VERSION

    def key(self) -> str:
        parts: list = [self.source, self.answer_model, self.top_k if self.source == "memory" else None,
                       self.prompt_version]
        if self.context_budget is not None and self.source == "memory":
            parts.append({"context_budget": self.context_budget})
        if self.source == "memory" and self.query_strategy != "question":
            parts.append(self.query_strategy)
        blob = json.dumps(parts)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass
class AnswerRecord:
    sample_id: str
    question_index: int
    question: str
    category: int
    category_name: str
    gold: str | None
    adversarial_answer: str | None
    evidence: list[str]
    prediction: str | None
    status: str  # ok | failed
    source: str
    answerer: str
    answerer_label: str
    prompt_version: str
    config_key: str
    top_k: int | None
    context_budget: int | None = None
    retrieved: list[dict] = field(default_factory=list)  # id, content, source_turns, score
    query_strategy: str | None = None  # how memories were retrieved (None: full context)
    memories_used: int = 0
    search_latency_ms: float | None = None
    answer_latency_ms: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    context_tokens: int = 0
    cached: bool = False
    error: str | None = None
    created_at: str = field(default_factory=utc_now)


@dataclass
class AnswerSummary:
    answered: int
    failed: int
    skipped: int  # already answered by an earlier run
    records: list[AnswerRecord]

    def line(self) -> str:
        return f"questions answered: {self.answered}, failed: {self.failed}, already done: {self.skipped}"


def answer_request(config: AnswerConfig, q: Question, context: str) -> LLMRequest:
    """The LLM call that answers ``q`` from ``context`` under ``config`` (its prompt, version and max tokens)."""
    system = FULL_CONTEXT_SYSTEM if config.source == "full-context" else ANSWER_SYSTEM
    return LLMRequest([{"role": "user", "content": answer_user_prompt(q.question, context)}], system=system,
                      max_tokens=ANSWER_MAX_TOKENS, prompt_version=config.prompt_version)


def done_questions(run: RunFolder, config_key: str) -> set[tuple[str, int]]:
    return {(r["sample_id"], int(r["question_index"])) for r in run.records(ANSWERS_FILE)
            if r.get("config_key") == config_key and r.get("status") == "ok"}


def _retrieved(o: Observation) -> dict[str, Any]:
    out = {"id": o.id, "content": o.content, "source_turns": o.source_turns,
           "score": o.metadata.get("score"), "session": o.metadata.get("session"),
           "event_date": o.metadata.get("event_date")}
    if o.metadata.get("placed_by"):  # turn ids the adapter found by text, not ids the system returned
        out["placed_by"] = o.metadata["placed_by"]
    return out


def failure_text(exc: Exception) -> str:
    """A failed question's error as its record says it: a Worker's own error where a system wrapped one."""
    origin = exc.__cause__ if isinstance(exc, MemorySystemError) and isinstance(exc.__cause__, WorkerError) else exc
    return f"{type(origin).__name__}: {origin}"


def full_context(conv: Conversation) -> str:
    return "\n\n".join(transcript.render_transcript(conv, s) for s in conv.sessions)


class QARunner:
    def __init__(self, config: AnswerConfig, system: MemorySystem | None = None, llm: LLM | None = None,
                 answerer_label: str | None = None) -> None:
        if config.source not in SOURCES:
            raise ValueError(f"source must be one of {SOURCES}")
        if config.source == "memory" and system is None:
            raise ValueError("the memory source needs a memory system")
        if system is not None and config.query_strategy != "question" and not system.keyword_fusion:
            raise ValueError(f"--query-strategy {config.query_strategy} is meaningless for {system.name}: it is searched "
                             "with the question")
        if config.answer_model != "extractive" and llm is None:
            raise ValueError(f"{config.answer_model} needs an LLM")
        if config.answer_model == "extractive" and config.source == "full-context":
            raise ValueError("full-context answering needs an LLM answerer (--answer-model anthropic/… or openai/…)")
        self.config, self.llm, self.system = config, llm, system
        self.extractive = ExtractiveAnswerer() if config.answer_model == "extractive" else None
        self.label = answerer_label or (self.extractive.label if self.extractive else config.answer_model)
        self._full: dict[str, str] = {}

    def _record(self, q: Question, **kw: Any) -> AnswerRecord:
        c = self.config
        return AnswerRecord(sample_id=q.sample_id, question_index=q.index, question=q.question, category=q.category,
                            category_name=q.category_name, gold=q.answer, adversarial_answer=q.adversarial_answer,
                            evidence=list(q.evidence), source=c.source, answerer=c.answer_model,
                            answerer_label=self.label, prompt_version=c.prompt_version, config_key=c.key(),
                            top_k=c.top_k if c.source == "memory" else None,
                            context_budget=c.context_budget if c.source == "memory" else None,
                            query_strategy=c.query_strategy if c.source == "memory" else None, **kw)

    def _retrieve(self, conv: Conversation, q: Question) -> tuple[list[Observation], float | None, str]:
        if self.config.source == "oracle":
            memories = evidence_memories(conv, q)
            return memories, None, format_context(memories)
        if self.config.source == "memory":
            assert self.system is not None
            budget = self.config.context_budget
            if self.config.query_strategy != "question":  # the kit's fusion over the system's own search
                fused = retrieve_memories(SystemSearch(self.system), q.question, conv.sample_id, self.config.top_k,
                                          self.config.query_strategy, context_budget=budget)
                memories = fit_budget(fused.observations, budget)
                return memories, round(fused.latency_ms, 3), format_context(memories)
            found = self.system.search(conv.sample_id, q.question, self.config.top_k, budget)
            memories = fit_budget([observation(m) for m in found.memories], budget)
            return memories, round(found.latency_ms, 3), format_context(memories)
        return [], None, self._full.setdefault(conv.sample_id, full_context(conv))

    def request(self, q: Question, context: str) -> LLMRequest:
        return answer_request(self.config, q, context)

    def answer_one(self, conv: Conversation, q: Question) -> AnswerRecord:
        """Retrieve and answer one question now (the extractive floor, or one LLM call)."""
        memories: list[Observation] = []
        search_ms = None
        try:
            memories, search_ms, context = self._retrieve(conv, q)
            start = time.perf_counter()
            if self.extractive:
                prediction, tokens_in, tokens_out, cached = self.extractive.answer(q.question, memories), 0, 0, False
            else:
                assert self.llm is not None
                r = self.request(q, context)
                kwargs = {"prompt_version": r.prompt_version} if hasattr(self.llm, "cache") else {}
                completion = self.llm.complete(r.messages, system=r.system, max_tokens=r.max_tokens, **kwargs)
                prediction = completion.text.strip()
                tokens_in, tokens_out, cached = completion.input_tokens, completion.output_tokens, completion.cached
            answer_ms = round((time.perf_counter() - start) * 1000, 3)
        except (WorkerError, MemorySystemError, LLMError) as exc:
            return self._record(q, prediction=None, status="failed", error=failure_text(exc),
                                retrieved=[_retrieved(o) for o in memories], search_latency_ms=search_ms)
        return self._record(q, prediction=prediction, status="ok", retrieved=[_retrieved(o) for o in memories],
                            memories_used=len(memories), search_latency_ms=search_ms, answer_latency_ms=answer_ms,
                            input_tokens=tokens_in, output_tokens=tokens_out, context_tokens=approx_tokens(context),
                            cached=cached)

    def run(self, run: RunFolder, conversations: Iterable[Conversation], concurrency: int = 4,
            progress: bool | None = None, settings: CallSettings | None = None, log=print) -> AnswerSummary:
        """Answer the questions not yet answered ``ok``: retrieve for all of them (``concurrency``
        searches at a time), then make all LLM calls through one shared pool or Message Batch."""
        done = done_questions(run, self.config.key())
        todo = [(conv, q) for conv in conversations
                for q in questions(conv, self.config.include_adversarial)[:self.config.limit]]
        skipped = sum((conv.sample_id, q.index) in done for conv, q in todo)
        todo = [(conv, q) for conv, q in todo if (conv.sample_id, q.index) not in done]
        records: list[AnswerRecord] = []

        def keep(rec: AnswerRecord) -> None:
            run.append(ANSWERS_FILE, asdict(rec))
            records.append(rec)

        disable = tqdm_disable(progress)
        if self.extractive:
            for conv, q in tqdm(todo, desc="answer", unit="q", disable=disable):
                keep(self.answer_one(conv, q))
        else:
            self._answer_with_llm(run, todo, concurrency, disable, settings, keep, log, progress, skipped)
        failed = sum(r.status == "failed" for r in records)
        return AnswerSummary(answered=len(records) - failed, failed=failed, skipped=skipped, records=records)

    def _answer_with_llm(self, run: RunFolder, todo: list, concurrency: int, disable, settings, keep, log, progress,
                         skipped: int) -> None:
        assert self.llm is not None
        settings = settings or CallSettings(concurrency=concurrency)

        def retrieve(item):
            conv, q = item
            try:
                return q, *self._retrieve(conv, q), None
            except (WorkerError, MemorySystemError) as exc:
                return q, [], None, "", failure_text(exc)

        with ThreadPoolExecutor(max_workers=max(1, min(concurrency, 8))) as pool:
            found = list(tqdm(pool.map(retrieve, todo), total=len(todo), desc="retrieve", unit="q", disable=disable))
        requests, owner = [], {}
        for q, memories, search_ms, context, error in found:
            if error:
                keep(self._record(q, prediction=None, status="failed", error=error, search_latency_ms=search_ms))
                continue
            req = self.request(q, context)
            owner[id(req)] = (q, memories, search_ms, context)
            requests.append(req)

        def on_result(outcome: CallOutcome) -> None:
            q, memories, search_ms, context = owner[id(outcome.request)]
            retrieved = [_retrieved(o) for o in memories]
            c = outcome.completion
            if c is None:
                keep(self._record(q, prediction=None, status="failed", error=outcome.error, retrieved=retrieved,
                                  search_latency_ms=search_ms))
                return
            keep(self._record(q, prediction=c.text.strip(), status="ok", retrieved=retrieved,
                              memories_used=len(memories), search_latency_ms=search_ms,
                              answer_latency_ms=round(c.latency_ms, 3), input_tokens=c.input_tokens,
                              output_tokens=c.output_tokens, context_tokens=approx_tokens(context), cached=c.cached))

        execute(self.llm, requests, on_result, stage="answering", settings=settings,
                output_per_call=ANSWER_OUTPUT_TOKENS, run=run, already_done=skipped, log=log, progress=progress)
