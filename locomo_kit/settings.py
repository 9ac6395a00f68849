"""What a run is made of, as four frozen settings objects: the memory system (:class:`SystemSpec`), how
memories are retrieved (:class:`Retrieval`), who answers (:class:`Answerer`) and who judges (:class:`Judge`).

The command line, the notebooks and the library build their configuration through these objects, so the
same options name the same run everywhere::

    import locomo_kit as lk
    lk.run_all("conv-26", system=lk.SystemSpec("bm25"), retrieval=lk.Retrieval(context_budget=500),
               answerer=lk.Answerer("openai/qwen", base_url="http://127.0.0.1:8000/v1"),
               judge=lk.Judge("openai/judge", base_url="http://127.0.0.1:8001/v1"))

Each object checks its values when it is made (a clear ``ValueError``); a default is the offline path
(no model is called unless one is named).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DEFAULT_CONTEXT_BUDGET = 1000
TOP_K_RANGE = (1, 100)
BUDGET_LIMIT = TOP_K_RANGE[1]  # the most results one search returns (memworker's cap)
JUDGE_RUNS_RANGE = (1, 50)
QUERY_STRATEGIES = ("question", "keywords")
SOURCES = ("memory", "full-context", "oracle")
JUDGE_PROTOCOLS = ("playbook", "mem0", "strict")
EMBEDDED = "embedded"  # the Worker the kit starts itself (memworker on a free loopback port)


def check_range(name: str, value: int, *, bounds: tuple[int, int]) -> None:
    """Raise ``ValueError`` unless ``value`` is an integer within ``bounds`` (inclusive)."""
    lo, hi = bounds
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(f"{name} must be an integer from {lo} to {hi}, got {value!r}")


def _check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, got {value!r}")


@dataclass(frozen=True)
class Retrieval:
    """How memories are retrieved for each question: a context budget (the default, 1,000 tokens) or top-k.

    Read as the command line reads ``--context-budget`` and ``--top-k``: neither given is a budget of
    1,000 tokens of at most 100 memories; ``top_k`` alone is top-k without a budget; both are a budget of
    at most ``top_k`` memories. The values are stored resolved (``Retrieval() == Retrieval(context_budget=1000,
    top_k=100)``)."""

    context_budget: int | None = None
    """Tokens of memories per question (characters/4), cut best first; None: 1,000 unless ``top_k`` alone is
    given."""

    top_k: int | None = None
    """Memories per question, 1-100: alone, top-k with no budget; with a budget, at most this many (default 100)."""

    query_strategy: str = "question"
    """``question``: the question is the query, as an agent sends it; ``keywords``: one search per content word
    fused by the kit (labelled as the kit's fusion, not the system's retrieval)."""

    def __post_init__(self) -> None:
        budget, top_k = self.context_budget, self.top_k
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
            raise ValueError(f"the context budget must be a positive number of tokens, got {budget!r}")
        if top_k is not None:
            check_range("top_k", top_k, bounds=TOP_K_RANGE)
        _check_choice("query strategy", self.query_strategy, QUERY_STRATEGIES)
        if budget is None and top_k is not None:
            return  # top-k, no budget
        object.__setattr__(self, "top_k", min(top_k or BUDGET_LIMIT, BUDGET_LIMIT))
        object.__setattr__(self, "context_budget", budget or DEFAULT_CONTEXT_BUDGET)


@dataclass(frozen=True)
class Answerer:
    """Who answers the questions, on which server, from what, and which questions."""

    model: str = "extractive"
    """``extractive`` (offline rules, free), ``anthropic/<model>``, ``openai/<model>`` (with ``base_url``), or
    ``auto`` (Anthropic when ANTHROPIC_API_KEY is set, else extractive)."""

    base_url: str | None = None
    """The answerer's own server: an OpenAI-compatible base URL (``http://127.0.0.1:8000/v1``) or an Anthropic
    API address (default ``$ANTHROPIC_BASE_URL``); never the judge's."""

    source: str = "memory"
    """``memory``: answer from the retrieved memories; ``full-context``: from the whole conversation (needs an
    LLM); ``oracle``: from each question's gold evidence turns only (no memory system)."""

    include_adversarial: bool = False
    """Also answer category 5 (adversarial questions, outside J)."""

    limit: int | None = None
    """Only the first N questions of each sample, in the dataset's order (a run of its own, named ``…-qN``)."""

    timeout: float | None = None
    """Seconds per call (default 120 on a hosted API, 900 on a local server)."""

    llm: Any = field(default=None, compare=False, repr=False)
    """An LLM object used instead of ``model`` (tests, a client of one's own); the run is named by its
    ``provider/model``."""

    def __post_init__(self) -> None:
        _check_choice("source", self.source, SOURCES)
        if self.limit is not None:
            check_range("limit", self.limit, bounds=(1, 100_000))

    @property
    def spec(self) -> str:
        """The model as the run names it: ``llm``'s ``provider/model`` when one is given, else ``model``."""
        return self.model if self.llm is None else f"{self.llm.provider}/{self.llm.model}"


@dataclass(frozen=True)
class Judge:
    """Who judges the answers (LLM-as-a-judge): judging costs money, so nothing is judged without a model."""

    model: str | None = None
    """``anthropic/<model>``, ``openai/<model>`` (with ``base_url``) or ``auto``; None: no judge (F1 only)."""

    protocol: str = "playbook"
    """``playbook`` (0-100), ``mem0`` (lenient CORRECT/WRONG, Mem0's) or ``strict`` (CORRECT/WRONG)."""

    runs: int | None = None
    """Judge runs per question, 1-50 (None: the protocol's default, 10 as the Mem0 paper)."""

    base_url: str | None = None
    """The judge's own server (never the answerer's): an OpenAI-compatible base URL or an Anthropic API
    address (default ``$ANTHROPIC_BASE_URL``)."""

    calibration_size: int = 100
    """Questions of the judge calibration set graded in every judged run (0: none)."""

    timeout: float | None = None
    """Seconds per call (default 120 on a hosted API, 900 on a local server)."""

    llm: Any = field(default=None, compare=False, repr=False)
    """An LLM object used instead of ``model`` (tests, a client of one's own)."""

    def __post_init__(self) -> None:
        _check_choice("judge protocol", self.protocol, JUDGE_PROTOCOLS)
        if self.runs is not None:
            check_range("judge runs", self.runs, bounds=JUDGE_RUNS_RANGE)
        check_range("calibration size", self.calibration_size, bounds=(0, 10_000))

    @property
    def active(self) -> bool:
        """Whether anything is judged: a model or an LLM object is named."""
        return bool(self.model) or self.llm is not None


@dataclass(frozen=True)
class SystemSpec:
    """The memory system a run measures, as named (resolved once, with its ingestion folder, by
    :func:`locomo_kit.systems.runner.resolve_system`)."""

    name: str | None = None
    """A system by name (``memworker``, ``claude-mem``, ``bm25``, ``dense``, ``mempalace``, ``mem0``,
    ``mcp:NAME``, an installed plugin, ``package.module:Class``); None: memworker, or claude-mem for a
    ``worker_url`` other than ``embedded``."""

    options: dict[str, Any] | str | None = field(default=None, hash=False)
    """The system's own settings (``locomo-kit systems`` lists them), a dict or ``k1=1.2,b=0.5`` / a JSON
    object as a notebook parameter may arrive; not for the Workers (their URL and mode are theirs)."""

    worker_url: str = EMBEDDED
    """A claude-mem Worker API's base URL (memworker or claude-mem), or ``embedded``: the kit starts memworker."""

    mode: str = "transcript"
    """How a Worker is given a session: ``transcript`` (one Read per session) or ``turns`` (each turn saved)."""

    ingest_id: str | None = None
    """The ingestion's folder under ``outputs/runs`` (None: derived from sample and system, shared by the runs
    that use it)."""

    session_timeout: float = 180.0
    """Seconds to wait for a Worker's queue per session before the ingestion stops."""

    poll_interval: float = 3.0
    """Longest pause between a Worker's queue polls, in seconds."""

    consistency_timeout: float = 1200.0
    """After ingesting, the longest wait (s) until the system finds what it was given (read-your-writes)."""


def as_system(value: SystemSpec | str | None) -> SystemSpec:
    """A :class:`SystemSpec` from itself, a system's name, or None (the default system)."""
    return value if isinstance(value, SystemSpec) else SystemSpec(name=value or None)


def as_answerer(value: Answerer | str | None) -> Answerer:
    """An :class:`Answerer` from itself, a model string, or None (the extractive floor)."""
    return value if isinstance(value, Answerer) else Answerer(model=value or "extractive")


def as_judge(value: Judge | str | None) -> Judge:
    """A :class:`Judge` from itself, a model string, or None (no judge)."""
    return value if isinstance(value, Judge) else Judge(model=value or None)
