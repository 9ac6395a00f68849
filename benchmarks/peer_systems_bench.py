"""MemPalace and Mem0: recall within 1,000 tokens through the kit against the same system's own API.

For each system: the kit ingests the conversations through the adapter (``locomo_kit.systems``: the
system's own cached environment, its host), and asks every question of categories 1-4 that has
evidence through ``MemorySystem.search`` (top_k 100, the kit's default with a budget). The adapter is
then closed and ``benchmarks/peer_own_api.py`` asks the same questions of the same stored memories
directly through the system's own Python API (``searcher.search_memories`` / ``Memory.search``), in the
system's environment, with the same number of results. Both result lists are scored alike: results best
first, packed to 1,000 tokens (characters / 4, the kit's ``fit_budget`` rule), evidence recall = share of
the question's evidence turns among the results' source turns (MemPalace: found by text; Mem0: its
metadata). The two recalls must agree within 0.03.

Prints a table and writes outputs/bench/peer_systems.json (figures, identities, timings, load average).

    .venv/bin/python benchmarks/peer_systems_bench.py [--systems mempalace,mem0] [--sample conv-26]
        [--sample-mempalace all] [--budget 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from locomo_kit.dataset import Conversation, load_dataset, select
from locomo_kit.paths import outputs_dir
from locomo_kit.qa.context import approx_tokens
from locomo_kit.systems import create
from locomo_kit.systems.environments import ensure_environment, env_python
from locomo_kit.systems.peer_host import host_env
from locomo_kit.systems.specs import MEM0_ENV, MEMPALACE_ENV, minilm_folder
from locomo_kit.systems.turn_text import TurnLocator

TOLERANCE = 0.03
TOP_K = 100
SPECS = {"mempalace": MEMPALACE_ENV, "mem0": MEM0_ENV}
OWN_API = Path(__file__).resolve().parent / "peer_own_api.py"


def pack(texts: list[str], budget: int) -> list[int]:
    """Indices of the results, best first, that fit in ``budget`` tokens (a result that does not fit is
    skipped and later, smaller ones may still fit: the kit's ``fit_budget``)."""
    out, used = [], 0
    for i, text in enumerate(texts):
        cost = approx_tokens(text)
        if used + cost <= budget:
            out.append(i)
            used += cost
    return out


def recall(evidence: tuple[str, ...], turn_lists: list[list[str]]) -> float:
    seen = {t for turns in turn_lists for t in turns}
    return sum(e in seen for e in evidence) / len(evidence)


def questions(conv: Conversation):
    return [q for q in conv.questions if q.category in (1, 2, 3, 4) and q.evidence]


def pct(values: list[float]) -> dict[str, float]:
    s = sorted(values)
    return {"p50": round(statistics.median(s), 1), "p95": round(s[min(len(s) - 1, int(0.95 * len(s)))], 1),
            "n": len(s)}


def bench_system(system: str, convs: list[Conversation], budget: int, work: Path) -> dict:
    store = work / system
    locators = {c.sample_id: TurnLocator.of(c) for c in convs}
    asked = [(c, q) for c in convs for q in questions(c)]
    print(f"{system}: {len(convs)} conversation(s), {len(asked)} questions (categories 1-4 with evidence)",
          flush=True)
    kit_rows, kit_latency = [], []
    start = time.monotonic()
    with create(system, store) as s:
        identity = s.identity()
        opened_s = time.monotonic() - start
        ingest_start = time.monotonic()
        stored = 0
        for c in convs:
            for session in c.sessions:
                stored += s.ingest_session(c, session).stored
        ingest_s = time.monotonic() - ingest_start
        print(f"  ingested {stored} memories in {ingest_s:.1f} s (environment + host start {opened_s:.1f} s)",
              flush=True)
        for c, q in asked:
            result = s.search(c.sample_id, q.question, TOP_K)
            kit_latency.append(result.latency_ms)
            keep = pack([m.text for m in result.memories], budget)
            kit_rows.append([result.memories[i].source_turns for i in keep])
    # the same memories through the system's own API, in its own environment
    env = ensure_environment(SPECS[system])
    request = {"system": system, "root": str(store / "data"), "n_results": TOP_K,
               "queries": [{"conversation": c.sample_id, "query": q.question} for c, q in asked]}
    if system == "mem0":
        request["embedder_path"] = str(minilm_folder(env))
    req, res = work / f"{system}-request.json", work / f"{system}-result.json"
    req.write_text(json.dumps(request))
    extra = {"OPENAI_API_KEY": "sk-dummy", "MEM0_DIR": str(store / "home" / ".mem0")}
    own_start = time.monotonic()
    proc = subprocess.run([str(env_python(env)), str(OWN_API), str(req), str(res)], env=host_env(store / "home", extra),
                          cwd=store / "home", capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{system}: its own API failed:\n{proc.stderr[-3000:]}")
    own = json.loads(res.read_text())
    own_rows = []
    for (c, _), hits in zip(asked, own["hits"]):
        keep = pack([h["text"] for h in hits], budget)
        if system == "mem0":
            own_rows.append([[hits[i]["metadata"]["dia_id"]] for i in keep])
        else:
            own_rows.append([locators[c.sample_id].turns_of(hits[i]["text"]) for i in keep])
    kit_recall = statistics.fmean(recall(q.evidence, row) for (_, q), row in zip(asked, kit_rows))
    own_recall = statistics.fmean(recall(q.evidence, row) for (_, q), row in zip(asked, own_rows))
    same_lists = sum(a == b for a, b in zip(kit_rows, own_rows))
    out = {
        "system": identity.as_dict(), "label": identity.settings.get("label", identity.label),
        "conversations": [c.sample_id for c in convs], "questions": len(asked), "budget_tokens": budget,
        "top_k": TOP_K, "memories_stored": stored,
        "recall_through_kit": round(kit_recall, 4), "recall_own_api": round(own_recall, 4),
        "difference": round(kit_recall - own_recall, 4), "within_tolerance": abs(kit_recall - own_recall) <= TOLERANCE,
        "identical_result_turns": same_lists,
        "ingest_s": round(ingest_s, 1), "open_s": round(opened_s, 1),
        "search_ms_through_kit": pct(kit_latency), "search_ms_own_api": pct(own["latency_ms"]),
        "own_api_wall_s": round(time.monotonic() - own_start, 1),
    }
    print(f"  recall within {budget} tokens: through the kit {kit_recall:.3f}, own API {own_recall:.3f} "
          f"(difference {kit_recall - own_recall:+.3f}; identical turn lists {same_lists}/{len(asked)}); "
          f"search p50 {out['search_ms_through_kit']['p50']} ms via kit, {out['search_ms_own_api']['p50']} ms own",
          flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--systems", default="mempalace,mem0")
    ap.add_argument("--sample", default="conv-26", help="conversations for every system (default conv-26)")
    ap.add_argument("--sample-mempalace", default=None, help="conversations for MemPalace only (e.g. all)")
    ap.add_argument("--budget", type=int, default=1000)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    dataset = load_dataset()
    started = datetime.now(timezone.utc)
    load_before = os.getloadavg()
    results = {}
    with tempfile.TemporaryDirectory(prefix="peer-bench-") as tmp:
        for system in args.systems.split(","):
            sample = args.sample_mempalace if system == "mempalace" and args.sample_mempalace else args.sample
            results[system] = bench_system(system, select(dataset, sample), args.budget, Path(tmp))
    report = {"command": " ".join([Path(sys.executable).name, *sys.argv]), "started": started.isoformat(timespec="seconds"),
              "wall_s": round((datetime.now(timezone.utc) - started).total_seconds(), 1),
              "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                          "load_average_before": [round(x, 2) for x in load_before],
                          "load_average_after": [round(x, 2) for x in os.getloadavg()]},
              "tolerance": TOLERANCE, "systems": results}
    path = Path(args.out) if args.out else outputs_dir() / "bench" / "peer_systems.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1))
    print(f"\n{'system':<42} {'convs':>5} {'qs':>5} {'kit':>6} {'own':>6} {'diff':>7}")
    for name, r in results.items():
        print(f"{r['label'] if name == 'mem0' else r['system']['name'] + ' ' + r['system']['version']:<42} "
              f"{len(r['conversations']):>5} {r['questions']:>5} {r['recall_through_kit']:>6.3f} "
              f"{r['recall_own_api']:>6.3f} {r['difference']:>+7.3f}")
    print(f"wrote {path}")
    return 0 if all(r["within_tolerance"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
