"""Judging throughput through the shared call pool, against a Messages API stand-in with fixed latency.

Starts tests/support/anthropic_standin.py as its own process on a free loopback port (latency 1 s per
call by default), writes conv-26's category 1-4 questions as saved answers into a temporary run
folder, judges them with the playbook protocol (10 runs each) through the real Anthropic SDK and
``judge_answers`` with ``--concurrency 32``, and compares the wall time with the ideal
(calls × latency / concurrency). The full benchmark (1,540 questions × 10 runs) is extrapolated
from the measured calls per second. Prints a table and writes ``outputs/bench/judge_pool.json``.

With ``--outage-after N`` the stand-in answers 529 to every call after the first N (an outage
during judging; calls get one quick retry), then recovers; the same judging is run again, and the
figures say how many calls failed, how many the rerun made, and how many questions end with all
their judge runs valid.

    .venv/bin/python benchmarks/judge_bench.py [--latency 1] [--concurrency 32] [--sample conv-26] [--outage-after 700]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
FULL_QUESTIONS = 1540


def control(url: str, body: dict) -> dict:
    return httpx.post(f"{url}/_standin/outage", json=body, timeout=10).json()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--latency", type=float, default=1.0)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--sample", default="conv-26")
    p.add_argument("--outage-after", type=int, help="start a 529 outage after this many answered calls")
    p.add_argument("--out", default=str(ROOT / "outputs" / "bench" / "judge_pool.json"))
    a = p.parse_args()
    warnings.simplefilter("ignore", UserWarning)  # the temperature note and the outage's pending-call summary

    from locomo_kit.dataset import load_dataset, questions, select
    from locomo_kit.llm import CachedLLM, CompletionCache
    from locomo_kit.llm.anthropic_llm import AnthropicLLM
    from locomo_kit.llm.execute import CallSettings
    from locomo_kit.paths import default_dataset_path
    from locomo_kit.runs import RunFolder
    from locomo_kit.runs.records import load_judgements
    from locomo_kit.scoring.judge import Judge, judge_answers
    from locomo_kit.worker.embedded import free_port

    port = free_port()
    server = subprocess.Popen([sys.executable, str(ROOT / "tests" / "support" / "anthropic_standin.py"), "--port", str(port),
                               "--latency", str(a.latency)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{url}/v1/messages/batches/none", timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise SystemExit("stand-in did not start")
                time.sleep(0.1)
        conv = select(load_dataset(default_dataset_path()), a.sample)
        answers = [{"sample_id": q.sample_id, "question_index": q.index, "question": q.question, "gold": q.answer,
                    "prediction": str(q.answer), "category": q.category, "category_name": q.category_name,
                    "config_key": "bench", "answerer": "bench"} for c in conv for q in questions(c)]
        outage: dict = {}
        with tempfile.TemporaryDirectory() as tmp:
            llm = CachedLLM(AnthropicLLM("claude-sonnet-4-6", api_key="sk-bench", base_url=url),
                            CompletionCache(Path(tmp) / "llm.sqlite"))
            judge = Judge(llm, "playbook", runs=a.runs)
            run = RunFolder("bench", root=Path(tmp))
            settings = CallSettings(concurrency=a.concurrency)
            if a.outage_after:
                control(url, {"status": 529, "after": a.outage_after})
                first = judge_answers(run, judge, answers, settings=CallSettings(concurrency=a.concurrency, retries=1,
                                                                                 base_delay=0.05),
                                      log=lambda line: None, progress=False)
                answered = control(url, {"status": None})["answered"]
                outage = {"after_calls": a.outage_after, "failed_calls": sum(len(j.failed_runs) for j in first),
                          "questions_incomplete": sum(1 for j in first if j.failed_runs)}
            start = time.perf_counter()
            made = judge_answers(run, judge, answers, settings=settings, log=lambda line: None, progress=False)
            wall = time.perf_counter() - start
            if a.outage_after:
                outage["rerun_calls"] = control(url, {"status": None})["answered"] - answered
                final = load_judgements(run)
                outage["questions_with_all_runs_valid"] = sum(1 for j in final if j["n_ok"] == a.runs)
                outage["questions"] = len(final)
    finally:
        server.terminate()
        server.wait(timeout=10)
    if a.outage_after:
        result = {"sample": a.sample, "questions": len(answers), "judge_runs": a.runs, "outage": outage,
                  "rerun_made_exactly_the_failed_calls": outage["rerun_calls"] == outage["failed_calls"]}
        print(f"outage after {a.outage_after} calls: {outage['failed_calls']} calls failed "
              f"({outage['questions_incomplete']} questions incomplete, none scored)")
        print(f"  rerun made {outage['rerun_calls']} calls; {outage['questions_with_all_runs_valid']} of "
              f"{outage['questions']} questions now have all {a.runs} judge runs valid")
        a.out = a.out.replace(".json", "_outage.json")
    else:
        calls = sum(len(j.runs) + len(j.failed_runs) for j in made)
        failed = sum(len(j.failed_runs) for j in made)
        ideal = calls * a.latency / a.concurrency
        full_calls = FULL_QUESTIONS * a.runs
        result = {
            "sample": a.sample, "questions": len(answers), "judge_runs": a.runs, "calls": calls, "failed_calls": failed,
            "latency_s": a.latency, "concurrency": a.concurrency, "wall_s": round(wall, 2), "ideal_s": round(ideal, 2),
            "ratio_to_ideal": round(wall / ideal, 3), "calls_per_s": round(calls / wall, 2),
            "full_benchmark_calls": full_calls, "full_benchmark_extrapolated_s": round(full_calls / (calls / wall), 1),
            "full_benchmark_ideal_s": round(full_calls * a.latency / a.concurrency, 1),
            "machine": {"cpus": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2)},
            "note": "plus one preflight call; the stand-in runs in its own process on the same machine",
        }
        print(f"judged {len(answers)} questions x {a.runs} runs = {calls} calls ({failed} failed) at {a.latency:g} s "
              f"latency, concurrency {a.concurrency}")
        print(f"  wall {wall:.1f} s, ideal {ideal:.1f} s, ratio {wall / ideal:.2f}x, {calls / wall:.1f} calls/s")
        print(f"  full benchmark ({FULL_QUESTIONS} questions x {a.runs} runs = {full_calls} calls): "
              f"~{result['full_benchmark_extrapolated_s'] / 60:.1f} min extrapolated (ideal "
              f"{result['full_benchmark_ideal_s'] / 60:.1f} min)")
        print(f"  load average (1 min) {result['machine']['load_avg_1m']} on {os.cpu_count()} CPUs")
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(result, indent=2))
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
