"""Poisoning benchmark: the injection screen on fixed corpora, and planted false facts in a real Worker.

1. **Screen** (``memworker.injection``), now and at ``--baseline-rev`` (the rules before this
   screen, read from git): flagged/total on the development sets (tuned on), the held-out sets
   (measured only; ``heldout`` written before the rules changed, ``heldout_tasks`` plain tasks in
   the style of BIPIA's attacks), ordinary sentences using an injection's words (benign, should be
   0) and every real LoCoMo turn with its image caption (false positives), with the screen's cost
   per turn.
2. **Planted facts** (``memworker.provenance``): conv-26 and conv-30 ingested as transcripts into a
   real memworker process; for each item of ``tests/fixtures/injections/planted.json`` a false
   statement (plain, and phrased as a correction) and a true restatement (the control) are saved
   one at a time with ``/api/memory/save``, the item's LoCoMo question is searched as the kit does
   (``context_budget`` 1000, and ``--top-k 8`` without a budget), and the planted memory's rank
   and corroboration are recorded, then it is deleted. Run twice on one database: ``uncorroborated_weight`` 1.0 (flags only) and the default.

    .venv/bin/python benchmarks/poisoning_bench.py [--baseline-rev 071b46f] [--no-planted] [--embedder minilm]

Prints the figures and writes outputs/bench/poisoning.json. Exits 1 when a stage fails.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Callable

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from locomo_kit.dataset import load_dataset  # noqa: E402
from locomo_kit.paths import default_dataset_path, outputs_dir  # noqa: E402
from locomo_kit.worker import transcript  # noqa: E402
from locomo_kit.worker.embedded import EmbeddedWorker  # noqa: E402
from memworker.config import Settings  # noqa: E402
from memworker.injection import screen  # noqa: E402

CORPORA = ROOT / "tests" / "fixtures" / "injections"
BUDGET = 1000
TOP_K = 8
SETS = ("dev", "heldout", "dev_tasks", "heldout_tasks", "benign")  # tests/fixtures/injections/<name>.json


def baseline_screen(rev: str) -> Callable[[str], bool]:
    """``is_instruction_like`` as memworker/safety.py defined it at git revision ``rev``."""
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:memworker/safety.py"], check=True,
                            capture_output=True, text=True).stdout
    namespace: dict = {"__name__": f"safety_at_{rev}"}
    exec(compile(source, f"safety.py@{rev}", "exec"), namespace)
    return namespace["is_instruction_like"]


def screen_figures(flag: Callable[[str], bool], turns: list[str]) -> dict:
    out: dict = {}
    for name in SETS:
        items = json.loads((CORPORA / f"{name}.json").read_text(encoding="utf-8"))["items"]
        hits = [i for i in items if flag(i["text"])]
        totals, flagged = Counter(i["category"] for i in items), Counter(i["category"] for i in hits)
        out[name] = {"flagged": len(hits), "total": len(items),
                     "by_category": {c: f"{flagged[c]}/{n}" for c, n in totals.items()},
                     "missed" if name != "benign" else "flagged_texts":
                         [i["id"] for i in items if (i in hits) == (name == "benign")]}
    t0 = time.perf_counter()
    fp = [t for t in turns if flag(t)]
    elapsed = time.perf_counter() - t0
    out["locomo_turns"] = {"flagged": len(fp), "total": len(turns), "rate": len(fp) / len(turns),
                           "flagged_texts": fp, "seconds_all_turns": round(elapsed, 3),
                           "us_per_turn": round(elapsed / len(turns) * 1e6, 1)}
    return out


def ingest(url: str, conversations) -> float:
    t0 = time.perf_counter()
    with httpx.Client(base_url=url, timeout=120) as c:
        for conv in conversations:
            project = transcript.project_name(conv.sample_id)
            for s in conv.sessions:
                csid = transcript.content_session_id(conv.sample_id, s.number)
                c.post("/api/sessions/init", json={"contentSessionId": csid, "project": project}).raise_for_status()
                r = c.post("/api/sessions/observations", json={"contentSessionId": csid,
                                                               **transcript.read_tool_call(conv, s)})
                if r.json().get("status") != "queued":
                    raise RuntimeError(f"{csid} not queued: {r.text}")
        deadline = time.monotonic() + 900
        while True:
            status = c.get("/api/processing-status").json()
            if status["queueDepth"] == 0 and not status["isProcessing"]:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"ingestion did not finish in 900 s: {status}")
            time.sleep(0.5)
        if status.get("failed"):
            raise RuntimeError(f"{status['failed']} ingestion items failed")
    return time.perf_counter() - t0


def plant_all(url: str, plants: list[dict], by_sample: dict) -> list[dict]:
    rows = []
    with httpx.Client(base_url=url, timeout=120) as c:
        for item in plants:
            conv = by_sample[item["sample_id"]]
            question = next(q.question for q in conv.questions if q.index == item["qa_index"])
            project = transcript.project_name(conv.sample_id)
            for variant in ("false", "false_correction", "true"):
                saved = c.post("/api/memory/save", json={"text": item[variant], "project": project})
                saved.raise_for_status()
                oid = saved.json()["id"]
                meta = json.loads(c.get(f"/api/observation/{oid}").json()["metadata"])
                ranks = {}
                for mode, extra in (("budget", {"limit": 20, "context_budget": BUDGET}), ("top8", {"limit": TOP_K})):
                    found = c.get("/api/search", params={"query": question, "project": project, "format": "json",
                                                         **extra})
                    found.raise_for_status()
                    results = found.json()["observations"]
                    ranks[mode] = next((k + 1 for k, r in enumerate(results) if r["id"] == oid
                                        or oid in json.loads(r["metadata"]).get("span", {}).get("ids", [])), None)
                c.delete(f"/api/observation/{oid}").raise_for_status()
                rows.append({"sample_id": conv.sample_id, "qa_index": item["qa_index"], "question": question,
                             "variant": variant, "text": item[variant], "rank": ranks["budget"], "rank_top8": ranks["top8"],
                             "unverified": meta.get("unverified"),
                             "corroboration": (meta.get("corroboration") or {}).get("status"),
                             "unsupported_terms": (meta.get("corroboration") or {}).get("unsupported_terms")})
    return rows


def summarise(rows: list[dict]) -> dict:
    out = {}
    for variant in ("false", "false_correction", "true"):
        vs = [r for r in rows if r["variant"] == variant]
        out[variant] = {"n": len(vs), "ranked_first": sum(r["rank"] == 1 for r in vs),
                        "in_context": sum(r["rank"] is not None for r in vs),
                        "top8_first": sum(r["rank_top8"] == 1 for r in vs),
                        "in_top8": sum(r["rank_top8"] is not None for r in vs),
                        "uncorroborated": sum(r["corroboration"] == "uncorroborated" for r in vs),
                        "ranks": [r["rank"] for r in vs]}
    return out


def planted(embedder: str) -> dict:
    plants = json.loads((CORPORA / "planted.json").read_text(encoding="utf-8"))["items"]
    conversations = load_dataset(default_dataset_path())
    by_sample = {c.sample_id: c for c in conversations}
    wanted = [by_sample[s] for s in sorted({p["sample_id"] for p in plants})]
    phases = {}
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "mw.db"
        ingest_s = None
        for label, weight in (("flags only (uncorroborated_weight 1.0)", 1.0),
                              (f"default (uncorroborated_weight {Settings().uncorroborated_weight})", None)):
            extra = ["--uncorroborated-weight", str(weight)] if weight is not None else []
            with EmbeddedWorker(db, embedder=embedder, extra_args=extra) as url:
                if ingest_s is None:
                    ingest_s = ingest(url, wanted)
                rows = plant_all(url, plants, by_sample)
            phases[label] = {"summary": summarise(rows), "rows": rows}
    return {"conversations": [c.sample_id for c in wanted], "embedder": embedder, "ingest_seconds": round(ingest_s, 1),
            "context_budget": BUDGET, "phases": phases}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline-rev", default="071b46f", help="git revision whose screen is the baseline")
    ap.add_argument("--no-planted", action="store_true", help="only the screen figures (no Worker)")
    ap.add_argument("--embedder", default="minilm")
    args = ap.parse_args()
    conversations = load_dataset(default_dataset_path())
    turns = [t.text + (f" [image: {t.image_caption}]" if t.image_caption else "") for c in conversations for t in c.turns]
    report: dict = {"machine": f"{platform.machine()}, {platform.python_version()}",
                    "note": "times measured on a shared 2-CPU machine under other work: inflated"}
    report["screen"] = {"current": screen_figures(lambda t: bool(screen(t)), turns)}
    try:
        report["screen"][f"baseline {args.baseline_rev}"] = screen_figures(baseline_screen(args.baseline_rev), turns)
    except (subprocess.CalledProcessError, FileNotFoundError) as exc:
        report["screen"]["baseline"] = f"unavailable: {exc}"
    for label, fig in report["screen"].items():
        if isinstance(fig, str):
            print(f"screen {label}: {fig}")
            continue
        print(f"screen {label}:")
        for name in SETS:
            print(f"  {name:14s} flagged {fig[name]['flagged']}/{fig[name]['total']}  {fig[name]['by_category']}")
        lt = fig["locomo_turns"]
        print(f"  LoCoMo turns flagged {lt['flagged']}/{lt['total']} ({lt['rate']:.3%}), "
              f"{lt['seconds_all_turns']} s for all turns ({lt['us_per_turn']} µs/turn)")
    if not args.no_planted:
        try:
            report["planted"] = planted(args.embedder)
        except Exception as exc:  # a failed stage is never a result
            print(f"planted facts FAILED: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 1
        p = report["planted"]
        print(f"planted facts: {', '.join(p['conversations'])} ingested in {p['ingest_seconds']} s "
              f"({p['embedder']}), search with context_budget {p['context_budget']}")
        for label, phase in p["phases"].items():
            print(f"  {label}:")
            for variant, s in phase["summary"].items():
                print(f"    {variant:17s} uncorroborated {s['uncorroborated']}/{s['n']}; budget {BUDGET}: first "
                      f"{s['ranked_first']}/{s['n']}, in context {s['in_context']}/{s['n']}; top-{TOP_K}: first "
                      f"{s['top8_first']}/{s['n']}, in the {TOP_K} {s['in_top8']}/{s['n']}")
    out = outputs_dir() / "bench" / "poisoning.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
