"""Benchmark memworker the way the kit uses it: ingest LoCoMo over HTTP, then ask every question.

After ingestion, one untimed search per conversation builds its search index (timed on its own).
Then for each question (all 1,986; recall over categories 1-4 with evidence), four timed requests, one
after another so that they share the machine's load at that moment:

- ``budget``: search with ``context_budget`` 1,000 (the kit's default): spans of whole turns;
- ``budget500``: the same with 500 tokens;
- ``items``: search with ``limit`` 20 and no budget: single memories, for recall@5/10/20;
- ``bare_bm25``: a bare SQLite FTS5 BM25 query (OR of the question's words, top 20) on the same
  database file, in this process: the floor a lexical search costs here, now.

Prints a table and writes outputs/bench/memworker.json: ingestion wall time; evidence recall@5/10/20
(items) and within 500/1,000 tokens, on all conversations and on held-out conversations 5-9 (the
retrieval defaults were chosen on conversations 0-4 with benchmarks/memworker_tune.py); context
tokens per question; p50/p95/p99 of each request kind over HTTP; p95 of the budgeted search over
p95 of the bare BM25 query; the load average while it ran.

    .venv/bin/python benchmarks/memworker_bench.py [--sample all] [--embedder minilm] [--extra-args "..."]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from locomo_kit.dataset import all_questions, load_dataset
from locomo_kit.ingestion import ingest_conversations
from locomo_kit.paths import default_dataset_path, outputs_dir
from locomo_kit.pipeline.stages import load
from locomo_kit.qa.context import approx_tokens
from locomo_kit.runs import RunFolder
from locomo_kit.systems.workers import WorkerSystem
from locomo_kit.worker import transcript
from locomo_kit.worker.client import Observation, WorkerClient
from locomo_kit.worker.embedded import EmbeddedWorker
from memworker.ranking import fts_query

KS = (5, 10, 20)
BUDGETS = (500, 1000)
HELD_OUT = range(5, 10)  # dataset positions of the conversations no parameter was tuned on


def evidence_recall(evidence: tuple[str, ...], observations: list[Observation]) -> float:
    seen = {t for o in observations for t in o.source_turns}
    return sum(e in seen for e in evidence) / len(evidence)


def percentiles(values: list[float]) -> dict[str, float]:
    a = np.array(values)
    return {f"p{p}": round(float(np.percentile(a, p)), 3) for p in (50, 95, 99)} | {"n": len(values)}


def mean(values: list[float]) -> float | None:
    return round(statistics.mean(values), 4) if values else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", default="all")
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--extra-args", default="", help="extra memworker options, e.g. '--ranking seed'")
    ap.add_argument("--out", default=str(outputs_dir() / "bench" / "memworker.json"))
    args = ap.parse_args()

    conversations, sha = load(args.sample)
    position = {c.sample_id: i for i, c in enumerate(load_dataset(default_dataset_path()))}
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "mw.db"
        worker = EmbeddedWorker(db, embedder=args.embedder, extra_args=shlex.split(args.extra_args))
        t0 = time.perf_counter()
        with worker as url, WorkerClient(url, token="") as client:
            startup_s = time.perf_counter() - t0
            settings = client.health().get("settings", {})
            run = RunFolder("bench", root=Path(tmp))
            t0 = time.perf_counter()
            summary = ingest_conversations(WorkerSystem.around(client, poll_interval=0.5), conversations, run)
            ingest_s = time.perf_counter() - t0
            # one untimed search per conversation builds its index (else the first timed searches would
            # share the CPU with the Worker building them after ingestion): reported on its own
            t0 = time.perf_counter()
            for conv in conversations:
                client.search(all_questions(conv)[0].question, transcript.project_name(conv.sample_id), limit=1)
            warmup_s = time.perf_counter() - t0
            bare = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            lat: dict[str, list[float]] = {"budget": [], "budget500": [], "items": [], "bare_bm25": []}
            recall: dict[str, dict[str, list[float]]] = {"all": {}, "held_out": {}}
            tokens: dict[str, list[float]] = {f"budget{b}": [] for b in BUDGETS} | {"items@10": []}
            spans_per_q: list[int] = []
            for conv in conversations:
                project = transcript.project_name(conv.sample_id)
                held = position[conv.sample_id] in HELD_OUT
                for q in all_questions(conv):
                    r1000 = client.search(q.question, project, limit=100, context_budget=1000)
                    r500 = client.search(q.question, project, limit=100, context_budget=500)
                    items = client.search(q.question, project, limit=max(KS))
                    start = time.perf_counter()
                    bare.execute("SELECT o.id FROM obs_fts JOIN observations o ON o.id = obs_fts.rowid WHERE obs_fts "
                                 "MATCH ? AND o.project = ? ORDER BY bm25(obs_fts) LIMIT 20",
                                 (fts_query(q.question) or '""', project)).fetchall()
                    lat["bare_bm25"].append((time.perf_counter() - start) * 1000)
                    lat["budget"].append(r1000.latency_ms)
                    lat["budget500"].append(r500.latency_ms)
                    lat["items"].append(items.latency_ms)
                    tokens["budget1000"].append(sum(approx_tokens(o.content) for o in r1000.observations))
                    tokens["budget500"].append(sum(approx_tokens(o.content) for o in r500.observations))
                    tokens["items@10"].append(sum(approx_tokens(o.content) for o in items.observations[:10]))
                    spans_per_q.append(len(r1000.observations))
                    if q.category == 5 or not q.evidence:
                        continue
                    figures = {f"@{k}": evidence_recall(q.evidence, items.observations[:k]) for k in KS}
                    figures["within500"] = evidence_recall(q.evidence, r500.observations)
                    figures["within1000"] = evidence_recall(q.evidence, r1000.observations)
                    for split in ("all", "held_out") if held else ("all",):
                        for name, value in figures.items():
                            recall[split].setdefault(name, []).append(value)
                        recall[split].setdefault(f"cat{q.category}_within1000", []).append(figures["within1000"])
            bare.close()
            observations = sum(r.observations for r in summary.ingested)
    load_after = os.getloadavg()
    p95 = {k: float(np.percentile(v, 95)) for k, v in lat.items()}
    result = {
        "sample": args.sample, "dataset_sha256": sha, "embedder": args.embedder, "extra_args": args.extra_args,
        "worker_settings": settings, "cpus": os.cpu_count(),
        "load_average_1m": {"before": round(load_before[0], 2), "after": round(load_after[0], 2)},
        "startup_seconds": round(startup_s, 2),
        "sessions": len(summary.results), "failed_sessions": len(summary.failed), "observations": observations,
        "ingest_seconds": round(ingest_s, 2), "index_warmup_seconds": round(warmup_s, 2),
        "questions": len(lat["budget"]),
        "recall_questions": {s: len(v.get("@5", [])) for s, v in recall.items()},
        "evidence_recall": {s: {k: mean(v) for k, v in sorted(d.items())} for s, d in recall.items()},
        "context_tokens_mean": {k: round(statistics.mean(v), 1) for k, v in tokens.items()},
        "results_per_question_budget1000": round(statistics.mean(spans_per_q), 2),
        "latency_ms": {k: percentiles(v) for k, v in lat.items()},
        "p95_ratio_budget_to_bare_bm25": round(p95["budget"] / p95["bare_bm25"], 2),
        "method": {"tokens": "characters / 4, rounded up, of each result's text as the kit reads it",
                   "recall": "share of a question's evidence turns among the results' source turns (categories 1-4)",
                   "held_out": f"dataset conversations {HELD_OUT.start}-{HELD_OUT.stop - 1}"},
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print_table(result, out)


def print_table(r: dict, out: Path) -> None:
    print(f"memworker benchmark ({r['sample']}, embedder {r['embedder']} {r['extra_args']}), {r['cpus']} CPUs, "
          f"load average {r['load_average_1m']['before']} → {r['load_average_1m']['after']}")
    print(f"  ingestion    {r['sessions']} sessions, {r['observations']} memories in {r['ingest_seconds']} s "
          f"(failed {r['failed_sessions']}); Worker start {r['startup_seconds']} s; search indexes then built "
          f"in {r['index_warmup_seconds']} s (one untimed search per conversation)")
    names = ["@5", "@10", "@20", "within500", "within1000"]
    print("  recall       " + "  ".join(f"{n:>10}" for n in names) + "   questions")
    for split in ("all", "held_out"):
        rec = r["evidence_recall"].get(split, {})
        if rec:
            print(f"  {split:<12} " + "  ".join(f"{rec.get(n, 0):>10.3f}" for n in names)
                  + f"   {r['recall_questions'][split]}")
    cats = r["evidence_recall"]["all"]
    print("  within 1,000 by category: " + ", ".join(f"{k[3]} {v:.3f}" for k, v in cats.items() if k.startswith("cat")))
    t = r["context_tokens_mean"]
    print(f"  context      {t['budget1000']} tokens at budget 1,000 ({r['results_per_question_budget1000']} results), "
          f"{t['budget500']} at 500, {t['items@10']} for 10 items")
    for kind, v in r["latency_ms"].items():
        print(f"  {kind:<12} p50 {v['p50']:.2f} ms, p95 {v['p95']:.2f} ms, p99 {v['p99']:.2f} ms  ({v['n']} requests)")
    print(f"  p95 budgeted search / p95 bare BM25: {r['p95_ratio_budget_to_bare_bm25']}")
    print(f"  written to {out}")


if __name__ == "__main__":
    main()
