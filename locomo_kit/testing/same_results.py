"""What two runs of one configuration must share, for a test or a benchmark to compare (``leaderboard --jobs 1``
against ``--jobs N``): every run's answers and scores, each ingestion's latest record per session, and the
leaderboard's rows, without what differs between any two runs (times, the random generation of an ingestion,
the ids a system gives its memories)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# fields that differ between two runs of the same configuration
TIMING = frozenset({"created_at", "search_latency_ms", "answer_latency_ms", "seconds", "finished_at", "worker_url",
                    "at", "generation", "ingest_s", "search_p50_ms", "search_p95_ms", "written_at"})
MEMORY_ID = "id"  # a retrieved memory's id, random in some systems (Mem0's UUIDs, MemPalace's drawer ids)


def without_timing(value: Any, *, drop: frozenset[str] = TIMING) -> Any:
    """``value`` (records, rows) with the fields ``drop`` left out, at every depth."""
    if isinstance(value, dict):
        return {k: without_timing(v, drop=drop) for k, v in value.items() if k not in drop}
    if isinstance(value, list):
        return [without_timing(v, drop=drop) for v in value]
    return value


def _lines(path: Path, drop: frozenset[str]) -> list[Any]:
    return [without_timing(json.loads(x), drop=drop) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def results(outputs: Path, *, memory_ids: bool = True, in_order: bool = True) -> dict[str, Any]:
    """Every run's answers and scores under ``outputs``, each ingestion's latest record per session, and the
    leaderboard's rows, without the times. ``memory_ids`` False: without the retrieved memories' ids too;
    ``in_order`` False: the lines of each file as a sorted list (processes that append to one file at once)."""
    drop = TIMING if memory_ids else TIMING | {MEMORY_ID}
    out: dict[str, Any] = {}
    for run in sorted((outputs / "runs").iterdir()):
        for name in ("answers.jsonl", "scores.jsonl"):
            if (run / name).exists():
                lines = _lines(run / name, drop)
                out[f"{run.name}/{name}"] = lines if in_order else sorted(lines, key=lambda r: json.dumps(r, sort_keys=True))
        if (run / "ingest.jsonl").exists():
            latest = {(r["sample_id"], r["session"]): r for r in _lines(run / "ingest.jsonl", drop)
                      if r.get("kind", "session") == "session"}
            out[f"{run.name}/ingest.jsonl"] = sorted(latest.items())
    boards = sorted((outputs / "leaderboards").glob("*/leaderboard.json")) if (outputs / "leaderboards").is_dir() else []
    out["rows"] = [without_timing(json.loads(b.read_text(encoding="utf-8"))["rows"], drop=drop) for b in boards]
    return out
