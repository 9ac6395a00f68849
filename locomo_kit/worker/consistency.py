"""Read-your-writes: wait until the Worker can find what it was given, before asking questions.

Some Workers index asynchronously (claude-mem with Chroma answers ``memory/save`` before the
vector is stored, and adds about one document per second afterwards, with no API for the pending
count). Questions asked right after ingestion would then meet a half-built index. For a sample of
each project's memories (spread over the project, always including the newest ones), a search
built from the memory's own words must return it among the top ``limit``; the kit polls until
every probe does (or the timeout passes) and records how long that took.
"""

from __future__ import annotations

import re
import time
from typing import Callable, Iterable

from tqdm.auto import tqdm

from locomo_kit.progress import tqdm_disable
from locomo_kit.runs import utc_now
from locomo_kit.worker.client import Observation, WorkerClient

_WORD = re.compile(r"\w+")


def probe_query(o: Observation, words: int = 40) -> str | None:
    """The memory's own words (its last ``words``), as one contiguous phrase: found by phrase
    matching and by semantic search alike; None for a memory too short to be told apart."""
    tokens = _WORD.findall(o.narrative or o.text or o.title or "")  # one field: a phrase cannot span two
    return " ".join(tokens[-words:]) if len(tokens) >= 5 else None


def sample_memories(memories: list[Observation], n: int = 10, newest: int = 3) -> list[Observation]:
    """Up to ``n`` probe-able memories: the ``newest`` (indexed last) and the rest evenly spread."""
    usable = sorted((o for o in memories if probe_query(o)), key=lambda o: o.id)
    if len(usable) <= n:
        return usable
    picked = usable[-newest:]
    rest = usable[:-newest]
    step = len(rest) / (n - newest)
    picked += [rest[int(i * step)] for i in range(n - newest)]
    return sorted({o.id: o for o in picked}.values(), key=lambda o: o.id)


def wait_until_consistent(client: WorkerClient, projects: Iterable[str], sample: int = 10, limit: int = 10,
                          timeout: float = 1200.0, poll_interval: float = 2.0, progress: bool | None = None,
                          sleep: Callable[[float], None] = time.sleep) -> dict:
    """Poll until each sampled memory is found by a search of its own words; the result for the manifest."""
    probes: list[tuple[str, Observation, str]] = []
    for project in projects:
        for o in sample_memories(client.list_observations(project), sample):
            probes.append((project, o, probe_query(o) or ""))
    start = time.monotonic()
    pending = list(probes)
    rounds = 0
    bar = tqdm(total=len(probes), desc="read-your-writes", unit="probe",
               disable=tqdm_disable(progress))
    while pending:
        rounds += 1
        still = []
        for project, o, query in pending:
            if o.id not in {r.id for r in client.search(query, project, limit=limit).observations}:
                still.append((project, o, query))
        bar.update(len(pending) - len(still))
        pending = still
        if not pending or time.monotonic() - start > timeout:
            break
        sleep(poll_interval)
    bar.close()
    seconds = round(time.monotonic() - start, 2)
    return {"consistent": not pending, "seconds": seconds, "probes": len(probes),
            "found": len(probes) - len(pending), "rounds": rounds, "timeout_s": timeout, "search_limit": limit,
            "not_found": [{"project": p, "id": o.id, "query": q} for p, o, q in pending][:10],
            "checked_at": utc_now()}


def describe(result: dict) -> str:
    if not result.get("probes"):
        return "read-your-writes: nothing to check (no memories)"
    if result["consistent"]:
        return (f"read-your-writes: the Worker found all {result['probes']} sampled memories by their own words "
                f"after {result['seconds']:.1f} s")
    return (f"WARNING: read-your-writes: only {result['found']} of {result['probes']} sampled memories were found "
            f"by their own words after {result['seconds']:.0f} s (timeout): the Worker's index is still incomplete, "
            f"retrieval figures measure a half-built index")
