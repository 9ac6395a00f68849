"""A slow local server: a one-slot OpenAI-compatible server whose calls take 15 s each (the stand-in
tests/support/llm_standins.py SlowServer, which behaves as llama-cpp-python's server), and

    locomo-kit run --sample conv-26 --answer-model openai/standin --answer-base-url URL --limit 10

with the default concurrency and timeout; then a Ctrl-C (SIGINT) while a call computes.

    python benchmarks/slow_server_bench.py [--delay 15] [--limit 10]

Prints the figures (exit status, answers, calls computed, abandoned, sent twice, seconds to the
first progress line, wall time, seconds from SIGINT to exit) and writes outputs/bench/slow_server.json.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.claude_mem_standin import serve  # noqa: E402
from support.llm_standins import SlowServer  # noqa: E402


def env_for(tmp: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "CI"}
    env.update(LOCOMO_OUTPUTS_DIR=str(tmp), LOCOMO_EMBEDDER="hashing", PYTHONUNBUFFERED="1")
    return env


def default_sigint() -> None:
    """A benchmark started in the background inherits SIGINT ignored: give the kit the default."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def timed_lines(proc: subprocess.Popen, start: float, lines: list) -> threading.Thread:
    def read() -> None:
        for line in proc.stdout:
            lines.append((round(time.monotonic() - start, 1), line.rstrip()))
    t = threading.Thread(target=read, daemon=True)
    t.start()
    return t


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--delay", type=float, default=15.0)
    p.add_argument("--limit", type=int, default=10)
    p.add_argument("--ctrl-c-only", action="store_true", help="measure only the Ctrl-C")
    args = p.parse_args()
    out: dict = {"delay_s": args.delay, "limit": args.limit, "load": os.getloadavg()}
    server = SlowServer(delay=args.delay, preflight_share=0.2)
    with serve(server.app()) as url, tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "locomo_kit", "run", "--sample", "conv-26", "--answer-model", "openai/standin",
               "--answer-base-url", f"{url}/v1", "--limit", str(args.limit)]
        start = time.monotonic()
        if args.ctrl_c_only:
            cmd = [sys.executable, "-c", "pass"]
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env_for(Path(tmp)), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, preexec_fn=default_sigint)
        lines: list = []
        reader = timed_lines(proc, start, lines)
        proc.wait()
        reader.join(5)
        first_call = next((t for t, e, k in server.events if e == "start" and not k.startswith("preflight:")), None)
        progress = [(t, line) for t, line in lines if line.startswith("answering: ") and "/" in line.split()[1]]
        out["run"] = {"exit": proc.returncode, "wall_s": round(time.monotonic() - start, 1),
                      "answers_computed": len(server.answers()), "distinct": len(set(server.answers())),
                      "abandoned_while_computed": len(server.abandoned), "refused_after_leaving_queue": len(server.refused),
                      "most_computed_at_once": server.max_busy,
                      "first_answer_call_started_s": None if first_call is None else round(first_call - server.events[0][0], 1),
                      "progress_lines": [f"{t} s: {line}" for t, line in progress]}
        if args.ctrl_c_only:
            out.pop("run")
        # Ctrl-C while a call computes
        cmd2 = [sys.executable, "-m", "locomo_kit", "answer", "--sample", "conv-26", "--answer-model", "openai/standin2",
                "--answer-base-url", f"{url}/v1", "--limit", "3", "--source", "full-context"]
        proc = subprocess.Popen(cmd2, cwd=ROOT, env=env_for(Path(tmp)), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, preexec_fn=default_sigint)
        n = len(server.events)
        while not any(e == "start" and not k.startswith("preflight:") for _, e, k in server.events[n:]):
            time.sleep(0.05)
        time.sleep(1.0)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        proc.wait()
        out["ctrl_c"] = {"exit": proc.returncode, "seconds_to_exit": round(time.monotonic() - sent, 2),
                         "call_still_computing_s": round(args.delay - 1.0, 1)}
    from locomo_kit.paths import outputs_dir

    path = outputs_dir() / "bench" / "slow_server.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2))
    print(json.dumps(out, indent=2))
    print(f"written: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
