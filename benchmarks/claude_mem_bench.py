"""Measure the real claude-mem 13.25.3 Worker on LoCoMo with the kit, with and without Chroma.

Each configuration gets a fresh Worker (``scripts/claude-mem-peer``, its own HOME and port) whose
compressor is the offline stand-in (``tests/support/claude_mem_compressor.py``: one observation per
transcript line; it measures the pipeline, not claude-mem's compression), then runs
``locomo-kit run`` (extractive answerer, no LLM) and reads the run's records: ingestion time,
read-your-writes wait, evidence coverage@5/@8 over categories 1-4, and search latency.

    python benchmarks/claude_mem_bench.py                      # no Chroma: keywords and question strategies
    python benchmarks/claude_mem_bench.py --chroma             # also with Chroma (setup once: ~675 MB)

Prints a table and writes ``outputs/bench/claude_mem.json`` (runs under ``outputs/bench/claude-mem-runs``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from locomo_kit.paths import outputs_dir  # noqa: E402

from support.claude_mem_compressor import CompressorStandin  # noqa: E402
from support.claude_mem_peer import peer, real_worker  # noqa: E402

CONFIGS = {  # name: (chroma, mode, query strategy)
    "fts-transcript-keywords": (False, "transcript", "keywords"),
    "fts-transcript-question": (False, "transcript", "question"),
    "chroma-transcript-question": (True, "transcript", "question"),
    "chroma-turns-question": (True, "turns", "question"),
}


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def measure(name: str, sample: str, runs_dir: Path) -> dict:
    from locomo_kit.cli import main

    chroma, mode, strategy = CONFIGS[name]
    os.environ["LOCOMO_OUTPUTS_DIR"] = str(runs_dir)
    os.environ["CI"] = "1"
    with tempfile.TemporaryDirectory(prefix="claude-mem-bench-") as home, CompressorStandin() as comp:
        start = time.monotonic()
        with real_worker(Path(home), comp.base_url, chroma=chroma) as w:
            started = time.monotonic() - start
            t0 = time.monotonic()
            code = main(["run", "--sample", sample, "--worker-url", w["url"], "--mode", mode,
                         "--query-strategy", strategy, "--top-k", "8", "--run-id", name])
            wall = time.monotonic() - t0
    return {**summarize(name, sample, runs_dir / "runs" / name), "exit_code": code, "worker_start_s": round(started, 1),
            "run_wall_s": round(wall, 1), "compressor_calls": comp.kinds()}


def summarize(name: str, sample: str, run: Path) -> dict:
    """The figures of one configuration's run folder."""
    chroma, mode, strategy = CONFIGS[name]
    manifest = json.loads((run / "manifest.json").read_text())
    sessions = [r for r in _records(run / "ingest.jsonl") if r.get("kind") == "session"]
    answers = _records(run / "answers.jsonl")
    scores = [s for s in _records(run / "scores.jsonl") if s["category"] in (1, 2, 3, 4)]

    def cov(k: str) -> float | None:
        vals = [s["evidence_coverage"][k] for s in scores if s["evidence_coverage"].get(k) is not None]
        return round(sum(vals) / len(vals), 3) if vals else None

    lat = sorted(a["search_latency_ms"] for a in answers if a.get("search_latency_ms") is not None)
    cons = manifest.get("consistency", {})
    return {
        "config": name, "chroma": chroma, "mode": mode, "query_strategy": strategy, "sample": sample,
        "top_k": manifest.get("answer", {}).get("top_k"), "context_budget": manifest.get("answer", {}).get("context_budget"),
        "sessions_ok": sum(r["status"] == "ok" for r in sessions), "sessions": len(sessions),
        "ingest_s": round(sum(r["seconds"] for r in sessions), 1),
        "memories": sum(r["observations"] for r in sessions),
        "consistency_wait_s": cons.get("seconds"), "consistent": cons.get("consistent"),
        "coverage@5": cov("@5"), "coverage@8": cov("@8"),
        "coverage_method": scores[0]["coverage_method"] if scores else None,
        "empty_retrievals": sum(1 for a in answers if not a.get("retrieved")), "questions": len(answers),
        "search_ms_p50": round(statistics.median(lat), 1) if lat else None,
        "search_ms_p95": round(lat[int(0.95 * (len(lat) - 1))], 1) if lat else None,
        "semantic_search": manifest.get("worker", {}).get("semantic_search"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", default="conv-26")
    parser.add_argument("--chroma", action="store_true", help="also measure with Chroma (its setup runs once)")
    parser.add_argument("--only", nargs="*", choices=sorted(CONFIGS), help="configurations to run")
    parser.add_argument("--from-runs", action="store_true",
                        help="only summarise the run folders an earlier invocation left (no Worker started)")
    args = parser.parse_args()
    names = args.only or [n for n, (chroma, _, _) in CONFIGS.items() if args.chroma or not chroma]
    bench = outputs_dir() / "bench"
    runs_dir = bench / "claude-mem-runs"
    if args.from_runs:
        results = [summarize(n, args.sample, runs_dir / "runs" / n) for n in names
                   if (runs_dir / "runs" / n / "scores.jsonl").exists()]
    else:
        peer("setup", *(["--chroma"] if any(CONFIGS[n][0] for n in names) else []))
        results = [measure(n, args.sample, runs_dir) for n in names]
    print(f"{'config':<28} {'exit':>4} {'sess':>6} {'mem':>5} {'ingest s':>8} {'wait s':>7} {'cov@5':>6} "
          f"{'cov@8':>6} {'empty':>6} {'p50 ms':>7} {'p95 ms':>7}")
    for r in results:
        print(f"{r['config']:<28} {r.get('exit_code', '-'):>4} {r['sessions_ok']:>3}/{r['sessions']:<2} {r['memories']:>5} "
              f"{r['ingest_s']:>8} {str(r['consistency_wait_s']):>7} {str(r['coverage@5']):>6} "
              f"{str(r['coverage@8']):>6} {r['empty_retrievals']:>6} {str(r['search_ms_p50']):>7} "
              f"{str(r['search_ms_p95']):>7}")
    out = bench / "claude_mem.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                               "load_avg_1m_at_end": os.getloadavg()[0], "cpus": os.cpu_count(),
                               "results": results}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
