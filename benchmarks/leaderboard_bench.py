"""Time the leaderboard: every offline system through the whole pipeline, from nothing, on all 10 conversations.

Runs ``locomo-kit leaderboard --systems S --sample SAMPLE --context-budget B`` once per system, in an
empty outputs folder (so every ingestion is timed cold), then once more over all systems together
(every run reused: only the table is written). For each system it reports the wall time of its
command, the ingestion time (the sum of the sessions' recorded times), the search latency p50/p95 and
the number of searches, evidence recall within the budget and official F1 (extractive floor).
Prints a table and writes ``outputs/bench/leaderboard.json``; the leaderboard itself stays in the
bench's outputs folder (``outputs/bench/leaderboard-runs/leaderboards/…``).

    .venv/bin/python benchmarks/leaderboard_bench.py [--systems memworker,mempalace,mem0,bm25,dense] [--sample all]
        [--context-budget 1000] [--keep]

``--keep`` reuses the bench's outputs folder instead of emptying it (times then exclude what was reused).
The issue's target: the five offline systems on all 10 conversations in at most 30 minutes here.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

from locomo_kit.paths import outputs_dir

SYSTEMS = "memworker,mempalace,mem0,bm25,dense"
TARGET_S = 30 * 60


def _git_commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True, cwd=Path(__file__).resolve().parent.parent).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def _load() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _write(real_outputs: Path, result: dict) -> Path:
    """outputs/bench/leaderboard.json (rewritten after each system, so a stopped bench keeps what it measured)."""
    out = real_outputs / "bench" / "leaderboard.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--systems", default=SYSTEMS)
    ap.add_argument("--sample", default="all")
    ap.add_argument("--context-budget", default="1000")
    ap.add_argument("--keep", action="store_true", help="reuse the bench's outputs folder (default: start empty)")
    args = ap.parse_args(argv)

    real_outputs = outputs_dir()
    bench_outputs = real_outputs / "bench" / "leaderboard-runs"
    if bench_outputs.exists() and not args.keep:
        shutil.rmtree(bench_outputs)
    bench_outputs.mkdir(parents=True, exist_ok=True)
    os.environ["LOCOMO_OUTPUTS_DIR"] = str(bench_outputs)  # every run, ingestion and cache of the bench lives here

    from locomo_kit.cli import main as cli
    from locomo_kit.pipeline.leaderboard import parse_systems

    entries = parse_systems(args.systems)
    per_system = []
    started = time.monotonic()
    load_before = _load()
    for entry in entries:
        t0 = time.monotonic()
        code = cli(["leaderboard", "--systems", entry.spec, "--sample", args.sample,
                    "--context-budget", args.context_budget])
        wall = time.monotonic() - t0
        board = max((bench_outputs / "leaderboards").glob(f"*-{entry.name}/leaderboard.json"),
                    key=lambda p: p.stat().st_mtime, default=None)
        rows = json.loads(board.read_text())["rows"] if board else []
        per_system.append({"system": entry.spec, "exit": code, "wall_s": round(wall, 1),
                           "label": rows[0]["system"] if rows else None,
                           "ingest_s": rows[0]["ingest_s"] if rows else None,
                           "search_p50_ms": rows[0]["search_p50_ms"] if rows else None,
                           "search_p95_ms": rows[0]["search_p95_ms"] if rows else None,
                           "questions": rows[0]["questions"] if rows else None,
                           "evidence_recall": rows[0]["evidence_recall"] if rows else None,
                           "locomo_f1": rows[0]["locomo_f1"] if rows else None,
                           "load_after": _load()})
        print(f"{entry.spec}: exit {code}, {wall:.0f} s", flush=True)
        _write(real_outputs, {"systems": per_system, "complete": False, "sample": args.sample,
                              "elapsed_s": round(time.monotonic() - started, 1), "git_commit": _git_commit()})
    total = time.monotonic() - started
    t0 = time.monotonic()
    code = cli(["leaderboard", "--systems", args.systems, "--sample", args.sample, "--context-budget", args.context_budget])
    table_s = time.monotonic() - t0

    result = {"systems": per_system, "complete": True, "total_s": round(total, 1), "target_s": TARGET_S,
              "within_target": total <= TARGET_S, "all_systems_exit": code, "table_s": round(table_s, 1),
              "sample": args.sample, "context_budget": args.context_budget, "cold": not args.keep,
              "leaderboard": str(max((bench_outputs / "leaderboards").glob("*/leaderboard.md"),
                                     key=lambda p: p.stat().st_mtime, default="")),
              "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": sys.version.split()[0],
                          "load_before": load_before, "load_after": _load()},
              "git_commit": _git_commit(), "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    header = f"{'system':<22} {'exit':>4} {'wall s':>8} {'ingest s':>9} {'search p50 ms':>14} {'p95 ms':>8} {'recall %':>9} {'F1 %':>6}"
    print(header)
    fmt = lambda v, d=1: "–" if v is None else f"{v:.{d}f}"
    for s in per_system:
        print(f"{s['system']:<22} {s['exit']:>4} {s['wall_s']:>8.1f} {fmt(s['ingest_s']):>9} "
              f"{fmt(s['search_p50_ms'], 2):>14} {fmt(s['search_p95_ms'], 2):>8} {fmt(s['evidence_recall']):>9} "
              f"{fmt(s['locomo_f1']):>6}")
    print(f"total {total:.0f} s for {len(per_system)} systems (target {TARGET_S} s: "
          f"{'met' if result['within_target'] else 'NOT met'}); the table over all of them: {table_s:.1f} s, exit {code}")
    out = _write(real_outputs, result)
    print(f"wrote {out}; leaderboard: {result['leaderboard']}")
    return 0 if code == 0 and all(s["exit"] == 0 for s in per_system) else 1


if __name__ == "__main__":
    raise SystemExit(main())
