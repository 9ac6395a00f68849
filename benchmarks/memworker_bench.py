"""Benchmark memworker the way the kit uses it: ingest all of LoCoMo over HTTP, then ask every question.

Prints a table and writes outputs/bench/memworker.json with: ingestion wall time and sessions/s;
search latency p50/p95/p99 over all questions; evidence recall@5/10/20 on categories 1-4 (share
of a question's evidence turns among the retrieved memories' source turns); context tokens per
query at top_k (approximated as characters / 4).

    .venv/bin/python benchmarks/memworker_bench.py [--sample all] [--embedder minilm] [--extra-args "..."]
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from locomo_kit import adapter
from locomo_kit.dataset import all_questions
from locomo_kit.embedded import EmbeddedWorker
from locomo_kit.ingest import ingest
from locomo_kit.paths import outputs_dir
from locomo_kit.pipeline import load
from locomo_kit.runs import RunFolder
from locomo_kit.worker_client import WorkerClient

KS = (5, 10, 20)


def evidence_recall(evidence: tuple[str, ...], retrieved_turns: list[list[str]], k: int) -> float:
    seen = {t for turns in retrieved_turns[:k] for t in turns}
    return sum(e in seen for e in evidence) / len(evidence)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", default="all")
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--top-k", type=int, default=8, help="top_k for the context-token figure (8)")
    ap.add_argument("--extra-args", default="", help="extra memworker options, e.g. '--floor 0 --w-recency 0'")
    ap.add_argument("--out", default=str(outputs_dir() / "bench" / "memworker.json"))
    args = ap.parse_args()

    conversations, sha = load(args.sample)
    with tempfile.TemporaryDirectory() as tmp:
        worker = EmbeddedWorker(Path(tmp) / "mw.db", embedder=args.embedder, extra_args=shlex.split(args.extra_args))
        with worker as url, WorkerClient(url, token="") as client:
            run = RunFolder("bench", root=Path(tmp))
            t0 = time.perf_counter()
            summary = ingest(client, conversations, run, mode="transcript", poll_interval=0.5)
            ingest_s = time.perf_counter() - t0
            latencies, tokens, recalls = [], [], {k: [] for k in KS}
            by_cat: dict[int, dict[int, list[float]]] = {}
            for conv in conversations:
                project = adapter.project_name(conv.sample_id)
                for q in all_questions(conv):
                    res = client.search(q.question, project, limit=max(KS))
                    latencies.append(res.latency_ms)
                    tokens.append(sum(len(o.content) for o in res.observations[: args.top_k]) / 4)
                    if q.category == 5 or not q.evidence:
                        continue
                    turns = [o.source_turns for o in res.observations]
                    for k in KS:
                        r = evidence_recall(q.evidence, turns, k)
                        recalls[k].append(r)
                        by_cat.setdefault(q.category, {kk: [] for kk in KS})[k].append(r)
            observations = sum(r.observations for r in summary.ingested)
    lat = np.array(latencies)
    result = {
        "sample": args.sample, "dataset_sha256": sha, "embedder": args.embedder, "extra_args": args.extra_args,
        "sessions": len(summary.results), "failed_sessions": len(summary.failed), "observations": observations,
        "ingest_seconds": round(ingest_s, 2), "sessions_per_second": round(len(summary.results) / ingest_s, 2),
        "questions": len(latencies),
        "search_ms": {"p50": round(float(np.percentile(lat, 50)), 2), "p95": round(float(np.percentile(lat, 95)), 2),
                      "p99": round(float(np.percentile(lat, 99)), 2)},
        "evidence_recall": {f"@{k}": round(statistics.mean(recalls[k]), 4) for k in KS},
        "evidence_recall_by_category": {c: {f"@{k}": round(statistics.mean(v[k]), 4) for k in KS}
                                        for c, v in sorted(by_cat.items())},
        "recall_questions": len(recalls[KS[0]]),
        "context_tokens_per_query": {"top_k": args.top_k, "mean": round(statistics.mean(tokens), 1),
                                     "method": "characters / 4"},
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(f"memworker benchmark ({args.sample}, embedder {args.embedder} {args.extra_args})")
    print(f"  ingestion      {result['sessions']} sessions, {observations} observations in {ingest_s:.1f} s "
          f"({result['sessions_per_second']} sessions/s), failed {result['failed_sessions']}")
    print(f"  search         p50 {result['search_ms']['p50']} ms, p95 {result['search_ms']['p95']} ms, "
          f"p99 {result['search_ms']['p99']} ms over {len(latencies)} questions")
    print("  recall (1-4)   " + ", ".join(f"@{k} {result['evidence_recall'][f'@{k}']:.3f}" for k in KS)
          + f" over {result['recall_questions']} questions")
    for c, v in result["evidence_recall_by_category"].items():
        print(f"    category {c}   " + ", ".join(f"{k} {x:.3f}" for k, x in v.items()))
    print(f"  context        {result['context_tokens_per_query']['mean']} tokens per query at top_k {args.top_k}")
    print(f"  written to {out}")


if __name__ == "__main__":
    main()
