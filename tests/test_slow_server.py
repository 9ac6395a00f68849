"""The kit at ease with a slow local server: a one-slot OpenAI-compatible stand-in whose calls take
seconds (tests/support/llm_standins.py ``SlowServer``, which behaves as llama-cpp-python's server)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from locomo_kit.costs import plan
from locomo_kit.dataset import questions
from locomo_kit.llm.base import LLMRequest
from locomo_kit.llm.execute import CallSettings, execute
from locomo_kit.llm.openai_llm import OpenAICompatibleLLM
from locomo_kit.llm.pool import Throttle
from locomo_kit.llm.servers import default_timeout, is_hosted, reported_slots, server_busy
from locomo_kit.progress import LineProgress

from support.claude_mem_standin import serve
from support.llm_standins import SlowServer

ROOT = Path(__file__).resolve().parents[1]


def cli_env(tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "CI"}
    env.update(LOCOMO_OUTPUTS_DIR=str(tmp_path), LOCOMO_EMBEDDER="hashing", PYTHONUNBUFFERED="1")
    return env


def kit(*args: str) -> list[str]:
    return [sys.executable, "-m", "locomo_kit", *args]


def test_a_one_slot_server_gets_every_answer_once_none_abandoned_with_progress_from_the_first_call(tmp_path,
                                                                                                  dataset):
    """`run --limit 10` with the default concurrency (16): against a one-slot server whose calls take 1 s,
    under a timeout (8 s) shorter than 16 calls queued behind each other would need, as 120 s was for
    15 s calls. Exit 0, 10 answers (and their 10 no-memory floor calls), each prompt computed once, none left by
    the kit while computed."""
    server = SlowServer(delay=1.0)
    with serve(server.app()) as url:
        proc = subprocess.run(kit("run", "--sample", "conv-26", "--answer-model", "openai/standin", "--answer-base-url",
                                  f"{url}/v1", "--limit", "10", "--timeout", "8"),
                              env=cli_env(tmp_path), cwd=ROOT, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    # 10 answers and the answerer's no-memory floor on the same 10 questions, each prompt computed once
    assert len(server.answers()) == 20 and len(set(server.answers())) == 20, server.received
    assert server.abandoned == [] and server.refused == []
    assert server.max_busy == 1
    assert "no cost (a local server)" in out and "prices.json" not in out
    assert "is a local server (it reports no slots): 1 call(s) in flight at first" in out
    first = [line for line in out.splitlines() if line.startswith("answering: 1/10 calls")]
    assert first and "s/call" in first[0] and "ETA" in first[0], out[-2000:]
    runs = [p for p in (tmp_path / "runs").iterdir() if (p / "answers.jsonl").exists()]
    (run,) = runs
    assert "-q10-" in run.name
    answers = [json.loads(line) for line in (run / "answers.jsonl").read_text().splitlines()]
    assert len(answers) == 10 and all(a["status"] == "ok" for a in answers)
    conv26 = next(c for c in dataset if c.sample_id == "conv-26")
    assert sorted(a["question_index"] for a in answers) == [q.index for q in questions(conv26)[:10]]
    report = (run / "report.md").read_text()
    assert "first 10 questions of each sample" in report.split("## Run facts")[0]


def test_ctrl_c_stops_a_run_while_a_slow_call_is_in_flight(tmp_path):
    """SIGINT while the server computes a 30 s call: the kit exits 130 long before the reply would come
    (measured: benchmarks/slow_server_bench.py prints the seconds)."""
    server = SlowServer(delay=30.0, preflight_share=0.01)
    with serve(server.app()) as url:
        proc = subprocess.Popen(kit("answer", "--sample", "conv-26", "--answer-model", "openai/standin",
                                    "--answer-base-url", f"{url}/v1", "--limit", "3", "--source", "full-context"),
                                env=cli_env(tmp_path), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.monotonic() + 120
        while not any(e == "start" and not k.startswith("preflight:") for _, e, k in server.events):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read() if proc.stdout else ""
            time.sleep(0.1)
        time.sleep(0.5)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=25)
        stopped = time.monotonic() - sent
        out = proc.stdout.read() if proc.stdout else ""
    assert proc.returncode == 130, out[-2000:]
    assert "interrupted; rerun the same command to resume" in out
    assert stopped < 10, f"{stopped:.1f} s after SIGINT"  # the call in flight had 29 s to go


def test_a_local_throttle_starts_with_one_call_and_holds_at_what_the_server_serves():
    t = Throttle(16, local=True)
    assert t.limit == 1
    t.release(t.acquire(), latency=10.0, sent_with=1)  # the first call's latency sets the pace
    assert t.limit == 2 and t.base_latency == 10.0
    a, b = t.acquire(), t.acquire()
    t.release(a, latency=10.0, sent_with=1)
    assert t.limit == 3
    t.release(b, latency=20.0, sent_with=2)  # it waited behind the first: one slot
    assert t.limit == 1 and t.queued == 1
    for _ in range(7):
        t.release(t.acquire(), latency=10.5, sent_with=1)
    assert t.limit == 1  # after a cut it grows slowly (one per 8 uncontended calls)
    t.release(t.acquire(), latency=10.5, sent_with=1)
    assert t.limit == 2
    hosted = Throttle(16)
    assert hosted.limit == 4 and not hosted.local


def test_a_parallel_local_server_is_given_more_calls():
    t = Throttle(16, local=True)
    t.release(t.acquire(), latency=2.0, sent_with=1)
    for _ in range(20):
        tickets = [t.acquire() for _ in range(t.limit)]
        for ticket in tickets:
            t.release(ticket, latency=2.2, sent_with=len(tickets))  # batched: barely slower
    assert t.limit == 16


def test_reported_slots_set_the_calls_in_flight(tmp_path):
    server = SlowServer(delay=0.5, slots=2, report_slots=True)
    with serve(server.app()) as url:
        assert reported_slots(f"{url}/v1") == 2
        llm = OpenAICompatibleLLM("standin", base_url=f"{url}/v1")
        requests = [LLMRequest([{"role": "user", "content": f"q{i}"}], max_tokens=8) for i in range(8)]
        outcomes: list = []
        execute(llm, requests, outcomes.append, stage="t", settings=CallSettings(preflight=False), log=lambda _: None,
                progress=False)
    assert all(o.ok for o in outcomes) and len(server.computed) == 8
    assert server.max_busy == 2 and server.refused == [] and server.abandoned == []


def test_a_timed_out_call_is_resent_only_after_the_server_finished_it(tmp_path):
    """A 1.5 s timeout against 4 s calls: the retry goes out only once the server is idle again
    (llama-cpp-python's /v1/models waits while it computes; llama.cpp's /slots says so)."""
    for report_slots in (False, True):
        server = SlowServer(delay=4.0, report_slots=report_slots)
        with serve(server.app()) as url:
            llm = OpenAICompatibleLLM("standin", base_url=f"{url}/v1", timeout=1.5)
            outcomes: list = []
            execute(llm, [LLMRequest([{"role": "user", "content": "q"}], max_tokens=8)], outcomes.append, stage="t",
                    settings=CallSettings(preflight=False, retries=1), log=lambda _: None, progress=False)
        (o,) = outcomes
        received = [t for t, e, _ in server.events if e == "received"]
        done = [t for t, e, _ in server.events if e == "done"]
        assert len(received) == 2 and received[1] >= done[0], (report_slots, server.events)
        assert not o.ok and "timed out" in o.error  # the resent call timed out too (retries=1)


def test_server_busy_reads_the_model_lock_and_the_slots():
    for report_slots in (False, True):
        server = SlowServer(delay=2.0, report_slots=report_slots)
        with serve(server.app()) as url:
            assert server_busy(f"{url}/v1", timeout=1.0) is False
            import threading

            import httpx

            call = threading.Thread(target=lambda: httpx.post(f"{url}/v1/chat/completions", timeout=10,
                                                              json={"messages": [{"role": "user", "content": "x"}]}))
            call.start()
            time.sleep(0.5)
            assert server_busy(f"{url}/v1", timeout=1.0) is True
            call.join()
            assert server_busy(f"{url}/v1", timeout=1.0) is False


def test_hosted_and_local_servers():
    assert is_hosted(None) and is_hosted("https://api.openai.com/v1") and is_hosted("https://openrouter.ai/api/v1")
    assert not is_hosted("http://127.0.0.1:8080/v1") and not is_hosted("http://gpu-box:8000/v1")
    assert default_timeout("http://127.0.0.1:8080/v1") == 900 and default_timeout("https://api.openai.com/v1") == 120
    line = plan("answering", "openai/qwen", [LLMRequest([{"role": "user", "content": "x" * 40}])], 0, 16,
                local=True).line()
    assert line.endswith("no cost (a local server)")
    assert "no cost (no price for it in prices.json)" in plan("a", "openai/unknown-model", [], 0, 16).line()
    assert "add the model to prices.json" in plan("a", "anthropic/claude-unknown", [], 0, 16).line()


def test_progress_lines_say_count_rate_and_time_left(capsys):
    now = [0.0]
    bar = LineProgress(10, "answering", "call", clock=lambda: now[0], interval=10)
    now[0] = 15.0
    bar.update()
    now[0] = 20.0
    bar.update()  # within the interval: no line
    now[0] = 31.0
    bar.update()
    err = capsys.readouterr().err.splitlines()
    assert err == ["answering: 1/10 calls (10%) in 15s, 15.0 s/call, ETA 2m15s",
                   "answering: 3/10 calls (30%) in 31s, 10.3 s/call, ETA 1m12s"]
