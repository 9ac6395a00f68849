"""The cost of durable acknowledgements: memworker's acknowledging commit with synchronous=FULL
(memworker's setting: one fsync of the write-ahead log per commit) and with NORMAL (no fsync; a
power loss may lose acknowledged observations).

Enqueues ``--n`` observations (a LoCoMo-sized payload) through ``memworker.store.Store.enqueue``,
the transaction the observations route commits before it answers ``queued``, in rounds that
alternate the two settings; prints milliseconds per acknowledgement (p50/p95) and, where strace
is installed, the fsync and fdatasync calls per acknowledgement counted by ``strace -f -y``.
Writes outputs/bench/fsync.json.

    .venv/bin/python benchmarks/fsync_bench.py [--n 200] [--rounds 3] [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from locomo_kit.paths import outputs_dir
from memworker.store import Store

PAYLOAD = {"tool_name": "Read", "tool_response": "[D1:1] Caroline: I went to a support group yesterday. " * 60}


def acknowledge(db: Path, synchronous: str, n: int, tag: str) -> list[float]:
    store = Store(db)
    try:
        store.conn.execute(f"PRAGMA synchronous={synchronous}")
        session, _ = store.init_session("bench", f"s-{tag}", "p", None)
        times = []
        for k in range(n):
            t0 = time.perf_counter()
            store.enqueue(session["id"], "observation", PAYLOAD, f"{tag}-{k}")
            times.append((time.perf_counter() - t0) * 1000)
        return times
    finally:
        store.close()


def count_syncs(db: Path, synchronous: str, n: int) -> dict[str, float] | None:
    """fsync/fdatasync calls per acknowledgement, by file kind (strace attached to this process)."""
    if not shutil.which("strace"):
        return None
    log = db.with_suffix(".strace")
    proc = subprocess.Popen(["strace", "-f", "-y", "-qq", "-e", "trace=fsync,fdatasync", "-o", str(log),
                             "-p", str(os.getpid())], stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # attached
    acknowledge(db, synchronous, n, f"strace-{synchronous}")
    time.sleep(0.5)
    proc.terminate()
    proc.wait()
    files = [m.group(1) for m in re.finditer(r"(?:fsync|fdatasync)\(\d+<([^>]*)>", log.read_text())]
    kinds = {"wal": sum(f.endswith("-wal") for f in files), "database": sum(f == str(db) for f in files),
             "other": sum(not f.endswith("-wal") and f != str(db) for f in files)}
    return {k: round(v / n, 2) for k, v in kinds.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", default=None, help="folder for the test databases (its disk is what is measured)")
    ap.add_argument("--out", default=str(outputs_dir() / "bench" / "fsync.json"))
    args = ap.parse_args()
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        times: dict[str, list[float]] = {"FULL": [], "NORMAL": []}
        for r in range(args.rounds):
            for mode in times:
                times[mode] += acknowledge(Path(tmp) / f"{mode}-{r}.db", mode, args.n, f"{mode}-{r}")
        syncs = {mode: count_syncs(Path(tmp) / f"count-{mode}.db", mode, args.n) for mode in times}
        fs = subprocess.run(["df", "-T", tmp], capture_output=True, text=True).stdout.splitlines()[-1].split()[1]
    load.append(os.getloadavg()[0])
    results = {mode: {"ack_ms_p50": round(float(np.percentile(t, 50)), 3), "ack_ms_p95": round(float(np.percentile(t, 95)), 3),
                      "syncs_per_ack": syncs[mode]} for mode, t in times.items()}
    print(f"{args.n} acknowledgements × {args.rounds} rounds per setting on {fs} ({args.dir or tempfile.gettempdir()}); "
          f"load average {load[0]:.1f} → {load[1]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'synchronous':<12} {'ack p50 ms':>10} {'ack p95 ms':>10}  fsyncs per ack (WAL / database / other)")
    for mode, r in results.items():
        s = r["syncs_per_ack"]
        counted = f"{s['wal']} / {s['database']} / {s['other']}" if s else "strace not installed"
        print(f"{mode:<12} {r['ack_ms_p50']:>10} {r['ack_ms_p95']:>10}  {counted}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"n": args.n, "rounds": args.rounds, "filesystem": fs, "load_average": load,
                               "results": results}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
