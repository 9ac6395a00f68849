"""Load benchmark: N clients mix observations and searches against one memworker for a fixed time.

For each client count (default 8, 32, 64) a fresh memworker process (loopback only) serves one
database. Each client owns a project and, for ``--seconds``, either queues the next real LoCoMo
session transcript (as the kit does: init + observation with a tool_use_id) or asks one of that
conversation's questions, at random (``--search-share``). Afterwards the queue is drained
(bounded) and the database is read to check every acknowledged observation.

Prints, per client count: throughput (operations/s, by kind), latency p50/p95/p99 (ms, by kind),
errors, lost (acknowledged but absent from the database or failed), still queued when the drain
limit ended (durable, not yet processed), duplicated (a turn stored twice), and the ingestion
lag (acknowledgement to stored: p50/p95/max, and how many were stored within the window).
With ``--large-kb N`` (default 250) one more client sends a single observation of about N KB (real
LoCoMo turns, renumbered) at the start, and its lag is reported apart: one large item must not
stall the queue for everyone else. Writes outputs/bench/load.json.

    .venv/bin/python benchmarks/load_bench.py [--clients 8,32,64] [--seconds 60] [--embedder minilm] [--large-kb 250]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import numpy as np

from locomo_kit.dataset import questions
from locomo_kit.paths import outputs_dir
from locomo_kit.pipeline.stages import load
from locomo_kit.worker import transcript
from locomo_kit.worker.embedded import EmbeddedWorker


def _pct(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), 1) if values else None


class Client(threading.Thread):
    def __init__(self, n: int, url: str, conv, deadline: float, search_share: float) -> None:
        super().__init__(daemon=True)
        self.n, self.url, self.conv, self.deadline = n, url, conv, deadline
        self.search_share = search_share
        self.project = f"load-{n}-{conv.sample_id}"
        self.rng = random.Random(n)
        self.ops: list[tuple[str, float, bool]] = []  # (kind, ms, ok)
        self.acked: list[dict] = []  # {tool_use_id, queue_id, at}
        self.errors: Counter = Counter()

    def run(self) -> None:
        sessions = list(self.conv.sessions)
        qs = [q.question for q in questions(self.conv)]
        next_session = 0
        with httpx.Client(base_url=self.url, timeout=120) as c:
            while time.monotonic() < self.deadline:
                search = next_session >= len(sessions) or self.rng.random() < self.search_share
                t0 = time.perf_counter()
                kind = "search" if search else "observation"
                try:
                    if search:
                        r = c.get("/api/search", params={"query": self.rng.choice(qs), "project": self.project,
                                                         "limit": 8, "format": "json"})
                        ok = r.status_code == 200
                    else:
                        s = sessions[next_session]
                        csid = f"{self.project}-s{s.number}"
                        r = c.post("/api/sessions/init", json={"contentSessionId": csid, "project": self.project})
                        call = transcript.read_tool_call(self.conv, s)
                        r = c.post("/api/sessions/observations", json={"contentSessionId": csid, **call})
                        ok = r.status_code == 200 and r.json().get("status") == "queued"
                        if ok:
                            self.acked.append({"tool_use_id": call["tool_use_id"], "queue_id": r.json()["queueId"],
                                               "at": time.time()})
                            next_session += 1
                    if not ok:
                        self.errors[f"{kind} HTTP {r.status_code}"] += 1
                except httpx.HTTPError as exc:
                    ok = False
                    self.errors[f"{kind} {type(exc).__name__}"] += 1
                self.ops.append((kind, (time.perf_counter() - t0) * 1000, ok))


def large_transcript(conversations, kb: int) -> str:
    """About ``kb`` KB of real LoCoMo turns, renumbered so that every turn id is unique."""
    lines = ["[Session 1 — 1:56 pm on 8 May, 2023]", "[Conversation between Caroline and Melanie]"]
    size, s = 0, 0
    for conv in conversations:
        for session in conv.sessions:
            s += 1
            for k, turn in enumerate(session.turns, 1):
                lines.append(f"[D{s}:{k}] {turn.speaker}: {turn.text}")
                size += len(lines[-1]) + 1
                if size >= kb * 1024:
                    return "\n".join(lines) + "\n"
    return "\n".join(lines) + "\n"


def send_large(url: str, transcript: str, out: dict) -> None:
    with httpx.Client(base_url=url, timeout=120) as c:
        c.post("/api/sessions/init", json={"contentSessionId": "large-s1", "project": "load-large"})
        t0 = time.perf_counter()
        r = c.post("/api/sessions/observations", json={"contentSessionId": "large-s1", "tool_name": "Read",
                                                       "tool_response": transcript, "tool_use_id": "large-1"})
        out.update(status=r.status_code, queue_id=r.json().get("queueId"), ack_ms=(time.perf_counter() - t0) * 1000,
                   bytes=len(transcript.encode()))


def measure(n_clients: int, seconds: float, embedder: str, search_share: float, conversations, drain_limit: float,
            large_kb: int = 0) -> dict:
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "mw.db"
        with EmbeddedWorker(db, embedder=embedder) as url:
            deadline = time.monotonic() + seconds
            clients = [Client(n, url, conversations[n % len(conversations)], deadline, search_share)
                       for n in range(n_clients)]
            start = time.time()
            large: dict = {}
            if large_kb:
                threading.Thread(target=send_large, args=(url, large_transcript(conversations, large_kb), large),
                                 daemon=True).start()
            for c in clients:
                c.start()
            for c in clients:
                c.join()
            window_end = time.time()
            drain_start = time.monotonic()
            with httpx.Client(base_url=url, timeout=30) as h:
                while time.monotonic() - drain_start < drain_limit:
                    status = h.get("/api/processing-status").json()
                    if status["queueDepth"] == 0 and not status["isProcessing"]:
                        break
                    time.sleep(0.5)
                final = h.get("/api/processing-status").json()
            drain_s = time.monotonic() - drain_start
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            queue = {r[0]: r for r in con.execute("SELECT id, status, created_at_epoch, processed_at_epoch FROM queue")}
            turns = Counter((p, t) for p, m in con.execute("SELECT project, metadata FROM observations")
                            for t in json.loads(m).get("source_turns", []))
            con.close()
    ops = [o for c in clients for o in c.ops]
    acked = [a for c in clients for a in c.acked]
    lost = [a for a in acked if a["queue_id"] not in queue or queue[a["queue_id"]][1] == "failed"]
    unprocessed = [a for a in acked if a["queue_id"] in queue and queue[a["queue_id"]][1] == "pending"]
    lags = [(queue[a["queue_id"]][3] - queue[a["queue_id"]][2]) / 1000 for a in acked
            if a["queue_id"] in queue and queue[a["queue_id"]][3]]
    within = sum(1 for a in acked if a["queue_id"] in queue and queue[a["queue_id"]][3]
                 and queue[a["queue_id"]][3] / 1000 <= window_end)
    errors = sum((c.errors for c in clients), Counter())
    if large.get("queue_id") in queue:
        q = queue[large["queue_id"]]
        large.update(stored=q[1] == "done", lag_s=round((q[3] - q[2]) / 1000, 1) if q[3] else None)
    by_kind = {}
    for kind in ("observation", "search"):
        ms = [m for k, m, ok in ops if k == kind and ok]
        by_kind[kind] = {"ok": len(ms), "per_s": round(len(ms) / seconds, 2), "p50_ms": _pct(ms, 50),
                         "p95_ms": _pct(ms, 95), "p99_ms": _pct(ms, 99)}
    return {
        "clients": n_clients, "seconds": seconds, "operations": len(ops),
        "throughput_per_s": round(sum(1 for o in ops if o[2]) / seconds, 2), "by_kind": by_kind,
        "errors": sum(errors.values()), "error_kinds": dict(errors),
        "acknowledged": len(acked), "lost": len(lost), "still_queued_at_drain_limit": len(unprocessed),
        "duplicated": sum(1 for v in turns.values() if v > 1),
        "stored_within_window": within,
        "ingestion_lag_s": {"p50": _pct(lags, 50), "p95": _pct(lags, 95), "max": round(max(lags), 1) if lags else None},
        "drain_s": round(drain_s, 1), "final_status": final, "started_at": start, "large_item": large,
        "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", default="8,32,64")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--search-share", type=float, default=0.5, help="share of operations that are searches (0.5)")
    ap.add_argument("--drain-limit", type=float, default=600.0, help="longest wait for the queue afterwards (s)")
    ap.add_argument("--large-kb", type=int, default=250, help="size of one large observation sent at the start (0: none)")
    ap.add_argument("--out", default=str(outputs_dir() / "bench" / "load.json"))
    args = ap.parse_args()
    conversations, sha = load("all")
    results = [measure(int(n), args.seconds, args.embedder, args.search_share, conversations, args.drain_limit,
                       args.large_kb) for n in args.clients.split(",")]
    print(f"{'clients':>7} {'ops/s':>7} {'obs/s':>6} {'obs p50/p95/p99 ms':>22} {'search/s':>8} "
          f"{'search p50/p95/p99 ms':>24} {'errors':>6} {'acked':>5} {'lost':>4} {'queued':>6} {'dup':>3} "
          f"{'in window':>9} {'lag p50/p95/max s':>18} {'drain s':>7}")
    for r in results:
        o, s, lag = r["by_kind"]["observation"], r["by_kind"]["search"], r["ingestion_lag_s"]
        obs_lat = "/".join(str(o[k]) for k in ("p50_ms", "p95_ms", "p99_ms"))
        search_lat = "/".join(str(s[k]) for k in ("p50_ms", "p95_ms", "p99_ms"))
        lags = "/".join(str(lag[k]) for k in ("p50", "p95", "max"))
        print(f"{r['clients']:>7} {r['throughput_per_s']:>7} {o['per_s']:>6} {obs_lat:>22} {s['per_s']:>8} "
              f"{search_lat:>24} {r['errors']:>6} {r['acknowledged']:>5} {r['lost']:>4} "
              f"{r['still_queued_at_drain_limit']:>6} {r['duplicated']:>3} "
              f"{r['stored_within_window']:>9} {lags:>18} {r['drain_s']:>7}")
        print(f"{'':>7} load average {r['load_average'][0]} → {r['load_average'][1]} on {os.cpu_count()} CPUs")
        if r["large_item"]:
            big = r["large_item"]
            print(f"{'':>7} one {big.get('bytes', 0) // 1024} KB observation: acknowledged in "
                  f"{big.get('ack_ms', 0):.0f} ms, stored {big.get('stored')} after {big.get('lag_s')} s")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"embedder": args.embedder, "seconds": args.seconds, "search_share": args.search_share,
                               "large_kb": args.large_kb,
                               "dataset_sha256": sha, "results": results}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
