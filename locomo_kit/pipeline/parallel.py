"""Independent jobs (one memory system's leaderboard runs each) in separate processes, ``jobs`` at a time.

Each job is a module-level function called with its keyword arguments in a process of its own (started
with ``spawn``: nothing is shared but the files the job writes, its run folders). Its log lines come back
to this process, which keeps one line per job on a terminal (redrawn in place) and prefixes each line
with the job's name elsewhere (a log, CI). What the function returns comes back pickled, with the peak
memory of the job's process and of its largest child process (a peer system's host).

Ctrl-C (SIGINT to the whole process group, as a terminal sends it, or to this process alone) stops every
job: each job's process gets SIGINT, so its stages stop where any interrupted run stops (every record
already on disk: rerunning the same command resumes); a job still alive after a grace period is
terminated. Then :class:`KeyboardInterrupt` is raised here.

:func:`start_order` orders them (the console keeps the given order). :func:`default_jobs` picks how many run at once: the machine's cores, capped by its available memory
over the peaks of the jobs to run (:data:`PEAK_MIB`), and by the number of jobs.
"""

from __future__ import annotations

import multiprocessing
import os
import queue as queue_module
import resource
import signal
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Collection, Sequence, TextIO

from locomo_kit.reports.numbers import num

# Peak resident memory (MiB) of one system's leaderboard job: its process plus its largest child process (its
# Worker, or the host in its own environment), measured with --jobs 2 on all ten conversations (docs/leaderboard.md,
# "Running systems in parallel"; larger than one conversation's) and rounded up. ASSUMED_MIB stands for any system
# not listed (an MCP server, claude-mem's client, a plugin): not measured.
# A job that splits its conversations over N processes (each opens a host of its own) counts N times its peak: MemPalace
# in one process 1,742 MiB, split over two 2,993 MiB for the whole job.
PEAK_MIB = {"memworker": 900, "bm25": 600, "dense": 1100, "mempalace": 1800, "mem0": 1900}
ASSUMED_MIB = 1500
# Seconds of one system's leaderboard job on all ten conversations, one process each (the same measurement), for
# the order jobs start in (start_order). ASSUMED_S stands for any system not listed.
JOB_SECONDS = {"memworker": 137, "bm25": 15, "dense": 156, "mempalace": 624, "mem0": 248}
ASSUMED_S = 600
MEMORY_HEADROOM = 0.8  # the share of the available memory the jobs may take together
GRACE_S = 30.0  # how long an interrupted job may take to stop before it is terminated


class ParallelError(ValueError):
    """Jobs that cannot be run in parallel as asked (a bad ``jobs`` count)."""


@dataclass(frozen=True)
class Job:
    """One job: ``call(**kwargs, log=...)`` in a process of its own; ``name`` labels its console line."""

    name: str
    call: Callable[..., Any]  # a module-level function (it is pickled by reference)
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass
class JobResult:
    name: str
    value: Any = None  # what ``call`` returned
    error: str | None = None  # an exception that escaped ``call`` (type: message), or how its process ended
    seconds: float = 0.0
    peak_rss_mib: float | None = None  # the job's own process
    peak_child_rss_mib: float | None = None  # its largest child process (a peer system's host), if any
    cpu_s: float | None = None  # CPU seconds (user + system) of the job's process and the children it waited for

    @property
    def peak_mib(self) -> float | None:
        """The job's process and its largest child together: what it needs at most (an upper bound)."""
        if self.peak_rss_mib is None:
            return None
        return self.peak_rss_mib + (self.peak_child_rss_mib or 0.0)


def available_mib() -> float | None:
    """Memory available to new processes (MemAvailable), in MiB; None where /proc/meminfo is not there."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def default_jobs(names: Sequence[str], *, apart: Collection[str] = (), cpu: int | None = None,
                 memory_mib: float | None = None) -> int:
    """How many of the jobs ``names`` (system names) to run at once: the cores, capped by their number and by the
    available memory (its :data:`MEMORY_HEADROOM` share) over what N jobs need at most (:data:`PEAK_MIB`, else
    :data:`ASSUMED_MIB`): N times the largest peak, or, where a system in ``apart`` may split its conversations
    over N processes (the last job to start), N - 1 of the largest beside N of that system's. With a system in
    ``apart``, N is not capped by the number of systems."""
    cpu = cpu or cores()
    memory_mib = available_mib() if memory_mib is None else memory_mib
    if not names:
        return 1
    largest = max(PEAK_MIB.get(n, ASSUMED_MIB) for n in names)
    split = max((PEAK_MIB.get(n, ASSUMED_MIB) for n in names if n in apart), default=0)

    def need(n: int) -> float:
        return (n - 1) * largest + (n * split if split and n > 1 else largest)

    cap = cpu if split else min(cpu, len(names))
    if memory_mib is None:
        return max(1, cap)
    fitting = [n for n in range(1, cap + 1) if need(n) <= memory_mib * MEMORY_HEADROOM]
    return max(fitting, default=1)


def start_order(names: Sequence[str], *, apart: Collection[str] = ()) -> list[str]:
    """``names`` (system names) in the order their jobs start: those that run in one process the longest first
    (:data:`JOB_SECONDS`), then those in ``apart`` (whose conversations can run in several processes) the
    shortest first, so that the last job (the one that splits) keeps every core busy to the end; ties in the
    given order."""
    one = sorted((n for n in names if n not in apart), key=lambda n: -JOB_SECONDS.get(n, ASSUMED_S))
    return one + sorted((n for n in names if n in apart), key=lambda n: JOB_SECONDS.get(n, ASSUMED_S))


def check_jobs(jobs: int | None) -> None:
    if jobs is not None and (not isinstance(jobs, int) or jobs < 1):
        raise ParallelError(f"--jobs must be a whole number of processes, 1 or more (got {jobs!r})")


def _peak_mib(who: int) -> float:
    return resource.getrusage(who).ru_maxrss / 1024  # kilobytes on Linux


def _cpu_s() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def done_line(result: JobResult) -> str:
    """A finished job's line: ``done in 418 s, 690 CPU-s, peak 1,610 MiB`` (or what failed)."""
    if result.error:
        return f"FAILED: {result.error}"
    cpu = f", {num(result.cpu_s, 0)} CPU-s" if result.cpu_s is not None else ""
    peak = f", peak {num(result.peak_mib, 0)} MiB" if result.peak_mib else ""
    return f"done in {num(result.seconds, 0)} s{cpu}{peak}"


def _work(job: Job, messages: Any) -> None:
    """A job's process: run it, send its log lines and then its result (or that it was interrupted)."""
    start = time.monotonic()
    os.setpgrp()  # a terminal's Ctrl-C reaches the parent alone, which stops each job once (:func:`stop`)

    def log(line: str) -> None:
        messages.put(("log", job.name, str(line)))

    result = JobResult(job.name)
    code = 0
    try:
        result.value = job.call(**job.kwargs, log=log)
    except KeyboardInterrupt:
        result.error, code = "interrupted", 130
    except Exception as exc:  # the job's own failure, reported in its line; the other jobs go on
        result.error, code = f"{type(exc).__name__}: {exc}", 1
    result.seconds = round(time.monotonic() - start, 1)
    result.peak_rss_mib = round(_peak_mib(resource.RUSAGE_SELF), 1)
    result.peak_child_rss_mib = round(_peak_mib(resource.RUSAGE_CHILDREN), 1) or None
    result.cpu_s = round(_cpu_s(), 1)
    try:
        messages.put(("done", job.name, result))
    except Exception as exc:  # a value that does not pickle: say so rather than hang the parent
        messages.put(("done", job.name, JobResult(job.name, error=f"its result could not be sent back: {exc}",
                                                  seconds=result.seconds)))
    messages.close()
    messages.join_thread()
    sys.exit(code)


class Lines:
    """One line per job: redrawn in place on a terminal, else each new line printed with the job's name (or given
    to ``log``, a library caller's own)."""

    def __init__(self, names: Sequence[str], out: TextIO | None = None, live: bool | None = None,
                 log: Callable[[str], None] | None = None) -> None:
        self.names = list(names)
        self.out = out or sys.stdout
        self.log = log
        self.live = False if log is not None else self.out.isatty() if live is None else live
        self.state = {n: "waiting" for n in self.names}
        self.width = max(len(n) for n in self.names) if self.names else 0
        self.drawn = False

    def set(self, name: str, text: str) -> None:
        self.state[name] = text
        if self.live:
            self.draw()
        elif self.log is not None:
            self.log(f"{name:<{self.width}} | {text}")
        else:
            print(f"{name:<{self.width}} | {text}", file=self.out, flush=True)

    def draw(self) -> None:
        try:
            columns = os.get_terminal_size(self.out.fileno()).columns
        except (OSError, ValueError):
            columns = 120
        if self.drawn:
            self.out.write(f"\x1b[{len(self.names)}F")  # back to the first line of the block
        for n in self.names:
            self.out.write("\x1b[2K" + f"{n:<{self.width}} | {self.state[n]}"[: columns - 1] + "\n")
        self.out.flush()
        self.drawn = True


def run_jobs(jobs: Sequence[Job], *, workers: int, lines: Lines | None = None,
             grace_s: float = GRACE_S) -> list[JobResult]:
    """Run ``jobs``, ``workers`` at a time, each in its own process; one :class:`JobResult` per job, in order."""
    check_jobs(workers)
    names = [j.name for j in jobs]
    if len(set(names)) != len(names):
        raise ParallelError(f"two jobs share a name: {names}")
    lines = lines or Lines(names)
    ctx = multiprocessing.get_context("spawn")
    messages = ctx.Queue()
    pending = list(jobs)
    running: dict[str, Any] = {}
    started: dict[str, float] = {}
    results: dict[str, JobResult] = {}
    try:
        while pending or running:
            while pending and len(running) < workers:
                job = pending.pop(0)
                proc = ctx.Process(target=_work, args=(job, messages), name=f"locomo-kit {job.name}")
                proc.start()
                running[job.name], started[job.name] = proc, time.monotonic()
                lines.set(job.name, "started")
            try:
                kind, name, payload = messages.get(timeout=0.5)
            except queue_module.Empty:
                for name, proc in list(running.items()):  # a process that died without a word (killed, OOM)
                    if not proc.is_alive() and name not in results:
                        proc.join()
                        results[name] = JobResult(name, error=f"its process ended with exit code {proc.exitcode} "
                                                  "before reporting (killed, or out of memory?)",
                                                  seconds=round(time.monotonic() - started[name], 1))
                        lines.set(name, f"FAILED: {results[name].error}")
                        del running[name]
                continue
            if kind == "log":
                lines.set(name, payload)
            elif kind == "done":
                results[name] = payload
                running.pop(name).join()
                lines.set(name, done_line(payload))
    except KeyboardInterrupt:
        stop(list(running.values()), grace_s=grace_s)
        raise
    return [results[n] for n in names]


def stop(procs: Sequence[Any], *, grace_s: float = GRACE_S) -> None:
    """Stop the job processes as Ctrl-C stops a run (SIGINT: records on disk, resumable), then terminate
    any still alive after ``grace_s`` seconds."""
    for proc in procs:
        if proc.is_alive() and proc.pid:
            try:
                os.kill(proc.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + grace_s
    for proc in procs:
        proc.join(max(0.0, deadline - time.monotonic()))
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
            proc.join(5)


@dataclass(frozen=True)
class PlanAnswer:
    """A stage's ``confirm`` in a job's process, which has no terminal to ask on: ``yes`` (``--yes``) spends as
    planned; otherwise a plan that costs money stops with what to do."""

    yes: bool = False

    def __call__(self, plan_line: str) -> bool:
        if self.yes:
            return True
        raise ParallelError(f"{plan_line}: systems running in parallel cannot ask to confirm spending: pass --yes "
                            "(and --max-cost USD to cap it), or --jobs 1 to be asked")


def job_calls(calls: Any) -> Any:
    """``calls`` (:class:`~locomo_kit.llm.execute.CallSettings` or None) as a job's process can take it: a
    confirmation asked on the terminal becomes :class:`PlanAnswer` (refusing to spend unasked)."""
    if calls is None or calls.confirm is None or isinstance(calls.confirm, PlanAnswer):
        return calls
    return replace(calls, confirm=PlanAnswer(False))
