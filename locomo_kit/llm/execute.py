"""Plan, then spend: execute a stage's LLM requests through the cache, a preflight, and either the
shared call pool or Message Batches.

``execute(llm, requests, ...)``:
1. serves every request already in the cache (identical requests are made once);
2. prints the plan for the rest (:class:`~locomo_kit.costs.Plan`): calls still needed, tokens
   estimated from the actual prompts, prices from ``prices.json``; refuses a plan above
   ``max_cost`` and asks ``confirm`` when given and the calls are paid (Anthropic, or a model with a
   price in ``prices.json``; the CLI asks on a terminal unless ``--yes``);
3. sends one preflight call per model and server, which stops on 401/403/400/404 before any work;
4. runs the calls on the shared pool (``--concurrency``, RPM/TPM) or as Message Batches (``--batch``).
Every outcome reaches ``on_result``; a failed call carries its error and is never a result.

A local server (:func:`is_local`: an OpenAI-compatible server that is not a known hosted API)
costs nothing per token, and the pool paces itself to it (see :mod:`locomo_kit.llm.pool`).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from locomo_kit.costs import plan as make_plan
from locomo_kit.costs import prompt_tokens
from locomo_kit.llm import servers
from locomo_kit.llm.base import LLM, Completion, LLMConfigError, LLMError, LLMRequest, RequestRejected, with_retries
from locomo_kit.llm.batches import run_batches
from locomo_kit.llm.cache import CachedLLM, request_key
from locomo_kit.llm.pool import CallOutcome, PoolSettings, run_pool

DEFAULT_CONCURRENCY = 16


class SpendRefused(LLMError):
    """A plan was above ``--max-cost`` or not confirmed: nothing was spent."""


class PreflightError(LLMConfigError):
    """The first, tiny call to a model was refused: the key, the model name or the request is wrong."""


@dataclass
class CallSettings:
    """How a stage's calls are made and what they may cost (the CLI's call options)."""

    concurrency: int = DEFAULT_CONCURRENCY
    rpm: float | None = None
    tpm: float | None = None
    retries: int = 6
    base_delay: float = 1.0  # back-off base when the server gives no retry-after
    batch: bool = False
    poll_interval: float = 30.0
    max_cost: float | None = None
    confirm: Callable[[str], bool] | None = None  # None: no question asked (library use)
    preflight: bool = True
    progress: bool | None = None  # progress bars: True/False force them on/off; None: on a terminal, else lines
    log: Callable[[str], None] = print  # where a stage's console lines go
    # processes at once: a leaderboard's systems, and a system's conversations where each has a store of its own
    # (systems.base.MemorySystem.conversations_apart; None: the cores, capped by memory)
    jobs: int | None = 1

    def pool(self) -> PoolSettings:
        return PoolSettings(concurrency=self.concurrency, rpm=self.rpm, tpm=self.tpm, retries=self.retries,
                            base_delay=self.base_delay)


@dataclass
class ExecutionSummary:
    stage: str
    requested: int = 0
    cached: int = 0
    made: int = 0
    failed: int = 0
    input_tokens: int = 0  # of calls made now
    output_tokens: int = 0
    batch_ids: list[str] = field(default_factory=list)
    plan_line: str | None = None

    def line(self) -> str:
        return (f"{self.stage}: {self.requested} calls, {self.cached} from the cache, {self.made} made, "
                f"{self.failed} failed")


_preflighted: set[tuple] = set()
_preflight_lock = threading.Lock()


def is_local(llm: LLM) -> bool:
    """An OpenAI-compatible server that is not a known hosted API (loopback, private, unknown)."""
    base, _ = unwrap(llm)
    return base.provider == "openai" and not servers.is_hosted(getattr(base, "base_url", None))


def idle_waiter(base_url: str, max_wait: float, poll: float = 2.0, clock=time.monotonic, sleep=time.sleep):
    """``wait(stopped)``: return once the server computes nothing (as far as it says, see
    :func:`~locomo_kit.llm.servers.server_busy`), after ``max_wait`` s, or when ``stopped()``."""
    def wait(stopped) -> None:
        deadline = clock() + max_wait
        while not stopped() and clock() < deadline:
            if servers.server_busy(base_url) is not True:
                return
            sleep(poll)
    return wait


def pool_settings(llm: LLM, settings: CallSettings) -> PoolSettings:
    """The pool's settings for ``llm``'s server: a local one is paced (one call at first, its slots
    when it reports them) and a timed-out call waits for it to be idle before it is resent."""
    pool = settings.pool()
    if is_local(llm):
        base, _ = unwrap(llm)
        url = base.base_url
        pool.local = True
        pool.slots = servers.reported_slots(url)
        # the server may need longer than the call was given (that is why it timed out): wait long for it
        pool.wait_idle = idle_waiter(url, max_wait=max(4 * float(getattr(base, "timeout", 0) or 0), servers.LOCAL_TIMEOUT))
    return pool


def unwrap(llm: LLM) -> tuple[LLM, object | None]:
    """(the provider, its CompletionCache or None)."""
    return (llm.llm, llm.cache) if isinstance(llm, CachedLLM) else (llm, None)


def preflight(llm: LLM, like: LLMRequest | None = None) -> None:
    """One tiny call (max_tokens 1) shaped like the stage's requests; raises :class:`PreflightError`
    on 401/403 (key), 400/404 (model name, parameters) or an unreachable server. Once per process
    per model, server and API version."""
    base, _ = unwrap(llm)
    if base.provider == "fake":
        return
    sent_temperature = like.temperature if like and getattr(base, "sends_temperature", True) else None
    ident = (base.provider, base.model, getattr(base, "base_url", None), getattr(base, "api_version", None),
             sent_temperature)
    with _preflight_lock:
        if ident in _preflighted:
            return
    probe = LLMRequest([{"role": "user", "content": "Reply with the word OK."}], system=like.system if like else "",
                       max_tokens=1, temperature=like.temperature if like else None)
    where = f"{base.provider}/{base.model} at {getattr(base, 'base_url', None) or 'the default server'}"
    try:
        with_retries(lambda: base.attempt(probe), retries=3)
    except LLMConfigError as exc:
        raise PreflightError(f"preflight call to {where} refused, nothing was done: {exc}") from exc
    except RequestRejected as exc:
        raise PreflightError(f"preflight call to {where} rejected ({exc.status}), nothing was done: {exc}") from exc
    except LLMError as exc:
        raise PreflightError(f"preflight call to {where} failed, nothing was done: {exc}") from exc
    with _preflight_lock:
        _preflighted.add(ident)


def execute(llm: LLM, requests: list[LLMRequest], on_result: Callable[[CallOutcome], None], *, stage: str,
            settings: CallSettings | None = None, output_per_call: int = 50, run=None,
            already_done: int = 0, log: Callable[[str], None] = print, progress: bool | None = None) -> ExecutionSummary:
    """Make ``requests`` (see the module docstring); ``on_result`` gets one outcome per request."""
    settings = settings or CallSettings()
    base, cache = unwrap(llm)
    summary = ExecutionSummary(stage, requested=len(requests))
    by_key: dict[str, list[LLMRequest]] = {}
    for r in requests:
        by_key.setdefault(request_key(base, r), []).append(r)
    pending: dict[str, LLMRequest] = {}
    for key, same in by_key.items():
        hit = cache.get(key) if cache is not None else None
        if hit is None:
            pending[key] = same[0]
            continue
        for r in same:
            summary.cached += 1
            on_result(CallOutcome(r, hit, None, 0))
    if not pending:
        if requests:
            log(f"{stage}: all {len(requests):,} calls already made (cache); nothing to spend")
        return summary
    model = f"{base.provider}/{base.model}"
    p = make_plan(stage, model, list(pending.values()), already_done + summary.cached, output_per_call, settings.batch,
                  local=is_local(llm))
    summary.plan_line = p.line()
    log(p.line())
    pool = None if settings.batch else pool_settings(llm, settings)
    if pool is not None and pool.local:
        slots = f"it reports {pool.slots} slot(s)" if pool.slots else "it reports no slots"
        log(f"{stage}: {base.base_url} is a local server ({slots}): {pool.slots or 1} call(s) in flight at first, "
            f"then as many as it serves without queueing (at most {min(settings.concurrency, pool.slots or 10**9)}); "
            f"{getattr(base, 'timeout', 0):.0f} s per call at most")
    if settings.max_cost is not None and (p.max_usd is None or p.max_usd > settings.max_cost):
        limit = "unknown" if p.max_usd is None else f"${p.max_usd:,.2f}"
        raise SpendRefused(f"{stage}: the plan may cost up to {limit}, above --max-cost ${settings.max_cost:,.2f}; "
                           "nothing was spent")
    priced = not p.local and (base.provider == "anthropic" or p.usd is not None)  # a local server costs nothing
    if settings.confirm is not None and priced and not settings.confirm(p.line()):
        raise SpendRefused(f"{stage}: not confirmed; nothing was spent")
    if settings.preflight:
        preflight(llm, next(iter(pending.values())))

    def deliver(key: str, completion: Completion | None, error: str | None, attempts: int) -> None:
        if completion is not None:
            summary.made += 1
            summary.input_tokens += completion.input_tokens
            summary.output_tokens += completion.output_tokens
        else:
            summary.failed += len(by_key[key])
        for r in by_key[key]:
            on_result(CallOutcome(r, completion, error, attempts))

    def store(key: str, completion: Completion) -> None:
        if cache is not None:
            cache.put(key, completion)

    if settings.batch:
        if run is None:
            raise ValueError("--batch needs a run folder to record the batch ids in")
        summary.batch_ids = run_batches(base, pending, run, stage, store, deliver, settings.poll_interval,
                                        log=log, progress=progress)
        return summary

    keys = {id(r): k for k, r in pending.items()}

    def attempt(request: LLMRequest) -> Completion:
        completion = base.attempt(request)
        store(keys[id(request)], completion)
        return completion

    run_pool(attempt, pending.values(), pool,
             lambda o: deliver(keys[id(o.request)], o.completion, o.error, o.attempts),
             tokens_of=lambda r: prompt_tokens(r.system, r.messages), desc=stage, progress=progress)
    return summary

