"""Figures for docs/local-models.md, measured with the real local server (scripts/llm-server: llama.cpp's own
server from the xllamacpp wheel, SmolLM2-135M-Instruct Q4_1; the figures there were measured with
llama-cpp-python 0.3.36) on conv-26:

    python benchmarks/local_llm_bench.py [--questions 10] [--sessions 2] [--calibration 10] [--parts answer,judge,compress]

- answer: official F1 of the local model against the extractive floor on the same first N questions
  (embedded memworker, context budget 1,000 tokens, `run --limit N`);
- judge: the calibration of the local model as a mem0 judge (false-accept on specific-wrong and
  vague-topical answers, true-accept on gold) over the extractive run's answers;
- compress: claude-mem 13.25.3 (npm) with the local model as its compressor (openrouter provider,
  CLAUDE_MEM_LLM_TIMEOUT_MS 300000, server context 16,384) on conv-26's first K sessions:
  compression fidelity per session (scoring/compression.py).

Writes outputs/bench/local_llm.json and prints it. Slow on a CPU: minutes per part.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.local_llm import MODEL, require_server, running_server  # noqa: E402


def part_answer(url: str, n: int, out: dict) -> None:
    from locomo_kit.llm.execute import CallSettings
    from locomo_kit.pipeline.stages import run_all
    from locomo_kit.settings import Answerer

    os.environ.setdefault("LOCOMO_EMBEDDER", "minilm")
    rows = {}
    for model, base in (("extractive", None), (MODEL, url)):
        start = time.monotonic()
        result = run_all("conv-26", answerer=Answerer(model, base_url=base, limit=n),
                         calls=CallSettings(concurrency=4, log=lambda _: None, progress=False))
        f1 = next(r for r in result.summary["locomo_f1"] if r["category"] == "overall")
        rows[model] = {"run_id": result.run.run_id, "questions": result.summary["questions"],
                       "official_f1": round(f1["mean"], 1), "ci": [round(f1["ci_low"], 1), round(f1["ci_high"], 1)],
                       "seconds": round(time.monotonic() - start, 1), "ok": result.ok}
    out["answer"] = rows


def part_judge(url: str, n: int, calibration: int, out: dict) -> None:
    from locomo_kit.llm.execute import CallSettings
    from locomo_kit.pipeline.stages import run_all, run_judge
    from locomo_kit.reports.summary import summarize_run
    from locomo_kit.settings import Answerer, Judge

    quiet = CallSettings(concurrency=4, log=lambda _: None, progress=False)
    run = run_all("conv-26", answerer=Answerer(limit=n), calls=quiet).run
    start = time.monotonic()
    run_judge(run, judge=Judge(MODEL, protocol="mem0", runs=1, base_url=url, calibration_size=calibration), calls=quiet)
    s = summarize_run(run)
    out["judge"] = {"run_id": run.run_id, "seconds": round(time.monotonic() - start, 1),
                    "j_mem0": next((r for r in s["judge"]["mem0"] if r["category"] == "overall"), None),
                    "calibration": [{k: r[k] for k in ("kind", "rate_name", "items", "rate", "ci_low", "ci_high")}
                                    for r in s["calibration"]]}


def part_compress(url: str, sessions: int, out: dict) -> None:
    from locomo_kit.dataset import first_sessions, get_conversation, load_dataset
    from locomo_kit.ingestion import ingest_conversation
    from locomo_kit.paths import default_dataset_path
    from locomo_kit.runs import RunFolder
    from locomo_kit.scoring.compression import measure, session_records
    from locomo_kit.systems.workers import WorkerSystem
    from locomo_kit.worker.client import WorkerClient

    from support.claude_mem_peer import real_worker, require_release

    require_release()
    conv = get_conversation(load_dataset(default_dataset_path()), "conv-26")
    first = first_sessions(conv, sessions)
    with tempfile.TemporaryDirectory() as tmp:
        folder = RunFolder("compress", root=Path(tmp) / "runs")
        start = time.monotonic()
        with real_worker(Path(tmp) / "home", url, model=MODEL.split("/", 1)[1], llm_timeout_ms=300_000) as w, \
                WorkerClient(w["url"]) as client:
            worker = WorkerSystem.around(client, url=w["url"], session_timeout=900)
            summary = ingest_conversation(worker, first, folder, progress=False)
            record = measure(worker, [first], session_records(folder.records("ingest.jsonl"), "transcript"))
        out["compress"] = {"sessions": sessions, "seconds": round(time.monotonic() - start, 1),
                           "results": [{"session": r.session, "status": r.status, "observations": r.observations,
                                        "fidelity": r.fidelity, "seconds": r.seconds, "error": r.error}
                                       for r in summary.results],
                           "sample": {k: v for k, v in record["samples"]["conv-26"].items() if k != "lost_evidence"}}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--questions", type=int, default=10)
    p.add_argument("--sessions", type=int, default=2)
    p.add_argument("--calibration", type=int, default=10)
    p.add_argument("--parts", default="answer,judge,compress")
    args = p.parse_args()
    out: dict = {"server": require_server(), "machine_load": os.getloadavg()}
    parts = args.parts.split(",")
    with tempfile.TemporaryDirectory() as tmp, running_server(Path(tmp) / "server", n_ctx=16384) as server:
        out["server_run"] = server
        if "answer" in parts:
            part_answer(server["base_url"], args.questions, out)
        if "judge" in parts:
            part_judge(server["base_url"], args.questions, args.calibration, out)
        if "compress" in parts:
            part_compress(server["base_url"], args.sessions, out)
    from locomo_kit.paths import outputs_dir

    path = outputs_dir() / "bench" / "local_llm.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2, default=str))
    print(json.dumps(out, indent=2, default=str))
    print(f"written: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
