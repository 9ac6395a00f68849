"""Recall within a context budget for any registered memory system, through the kit's interface.

For each system (default ``bm25,dense``): ingest the sample (default all 10 conversations) into a
fresh store with the kit's ingestion (timed), then search every question of categories 1-4 that has
evidence with the question as the query, ``top_k`` 100 and a 1,000-token budget, as ``locomo-kit run``
does: results best first, cut by the kit to the budget when the system has no budget of its own
(:func:`locomo_kit.qa.context.fit_budget`). The metric is the kit's evidence recall
(:func:`locomo_kit.scoring.diagnostics.evidence_coverage`): the share of a question's evidence turns
among the source turns of what is kept. Also recall@10 results (and the tokens of those 10) and the
search latency p50/p95 as the caller sees it.

Prints a table and writes ``outputs/bench/systems.json`` (one entry per system, merged into what is
there, so that systems measured by separate invocations end up side by side).

    .venv/bin/python benchmarks/systems_bench.py [--systems bm25,dense] [--sample all] [--budget 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from locomo_kit.dataset import questions
from locomo_kit.ingestion import ingest_conversations
from locomo_kit.paths import outputs_dir
from locomo_kit.pipeline.stages import load
from locomo_kit.qa.context import approx_tokens, fit_budget
from locomo_kit.runs import RunFolder
from locomo_kit.scoring.diagnostics import evidence_coverage
from locomo_kit.systems import create
from locomo_kit.systems.runner import observation


def _retrieved(memories) -> list[dict]:
    return [{"content": o.content, "source_turns": o.source_turns} for o in memories]


def measure(name: str, sample: str, budget: int, top_k: int = 100) -> dict:
    conversations, sha = load(sample)
    turn_text = {t.dia_id: t.text for c in conversations for s in c.sessions for t in s.turns}
    with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as tmp:
        folder = RunFolder("ingestion", root=Path(tmp))
        with create(name, folder.create().path) as system:
            ident = system.identity()
            start = time.perf_counter()
            summary = ingest_conversations(system, conversations, folder, progress=False)
            ingest_s = time.perf_counter() - start
            if not summary.succeeded:
                raise SystemExit(f"{name}: ingestion failed: {summary.lines()}")
            within, at10, tokens10, latency, kept_tokens = [], [], [], [], []
            for conv in conversations:
                system.search(conv.sample_id, "warm-up", 1)  # builds a per-conversation index, untimed
                for q in questions(conv):
                    if not q.evidence:
                        continue
                    found = system.search(conv.sample_id, q.question, top_k, budget)
                    latency.append(found.latency_ms)
                    kept = fit_budget([observation(m) for m in found.memories], budget)
                    within.append(evidence_coverage(q.evidence, _retrieved(kept), turn_text)[0])
                    kept_tokens.append(sum(approx_tokens(o.content) for o in kept))
                    ten = found if not system.own_budget else system.search(conv.sample_id, q.question, 10)
                    top10 = [observation(m) for m in ten.memories[:10]]
                    at10.append(evidence_coverage(q.evidence, _retrieved(top10), turn_text, k=10)[0])
                    tokens10.append(sum(approx_tokens(o.content) for o in top10))
    return {"system": ident.name, "version": ident.version, "settings": ident.settings, "sample": sample,
            "conversations": len(conversations), "questions": len(within), "dataset_sha256": sha,
            "context_budget": budget, "recall_within_budget": round(statistics.mean(within), 4),
            "recall_at_10": round(statistics.mean(at10), 4), "tokens_of_10": round(statistics.mean(tokens10), 1),
            "context_tokens_mean": round(statistics.mean(kept_tokens), 1),
            "search_ms_p50": round(float(np.percentile(latency, 50)), 2),
            "search_ms_p95": round(float(np.percentile(latency, 95)), 2),
            "ingest_seconds": round(ingest_s, 1), "memories": sum(r.observations for r in summary.results),
            "load_average": os.getloadavg(), "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--systems", default="bm25,dense", help="comma-separated registry names (bm25,dense)")
    ap.add_argument("--sample", default="all")
    ap.add_argument("--budget", type=int, default=1000, help="context budget in tokens (1000)")
    ap.add_argument("--out", default=str(outputs_dir() / "bench" / "systems.json"))
    args = ap.parse_args()
    out = Path(args.out)
    results = json.loads(out.read_text()) if out.is_file() else {}
    print(f"{'system':<22} {'recall@' + str(args.budget) + 'tok':>13} {'recall@10':>9} {'tok/10':>7} "
          f"{'p50 ms':>7} {'p95 ms':>7} {'ingest s':>8} {'questions':>9}")
    for name in args.systems.split(","):
        r = measure(name.strip(), args.sample, args.budget)
        results[f"{name.strip()}@{args.sample}@{args.budget}"] = r
        print(f"{r['system'] + ' ' + str(r['version'] or ''):<22} {r['recall_within_budget']:>13.3f} "
              f"{r['recall_at_10']:>9.3f} {r['tokens_of_10']:>7.0f} {r['search_ms_p50']:>7.2f} "
              f"{r['search_ms_p95']:>7.2f} {r['ingest_seconds']:>8.1f} {r['questions']:>9}", flush=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2, default=str))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
