"""Time the leaderboard's cost curve: the offline systems from nothing, at --jobs 1 and --jobs N, on 1, 3 and 10 conversations.

For each number of conversations C (the first C of the dataset; 10 is ``--sample all``) and each jobs count
(1, then N), it runs ``locomo-kit leaderboard --systems S --sample <those C> --context-budget B --jobs J`` as a
process of its own in an empty outputs folder (so every ingestion is cold), and records its wall time, the CPU
seconds of the command and everything it started, each system's time (``--jobs 1``: from its ``== system ==``
line to the next; ``--jobs N``: the ``done in`` of its line), CPU seconds and peak memory (``--jobs N``: its job's
process and what it started; the peak: its process and largest child), and evidence recall and official F1 per
system. Then it checks that ``--jobs N`` made the same runs and records as ``--jobs 1`` (answers, scores and the
table, times left aside).

Prints a table and writes ``outputs/bench/leaderboard.json`` (rewritten after each command, so a stopped bench
keeps what it measured); the runs stay in ``outputs/bench/leaderboard-runs/c<C>-j<J>/``.

    .venv/bin/python benchmarks/leaderboard_bench.py [--systems memworker,mempalace,mem0,bm25,dense]
        [--conversations 1,3,10] [--jobs N] [--context-budget 1000] [--limit Q]

``--jobs N``: the parallel count compared with 1 (default: what ``--jobs`` defaults to on this machine);
``--limit Q``: only the first Q questions of each conversation (a quick look; not the figures the docs quote).
The goal it checks: the five offline systems on all 10 conversations within 10 minutes on a 2-core machine,
with records equal to those of ``--jobs 1``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from locomo_kit.dataset import load_dataset
from locomo_kit.paths import default_dataset_path, outputs_dir
from locomo_kit.pipeline.leaderboard import apart_systems, parse_systems
from locomo_kit.pipeline.parallel import default_jobs
from locomo_kit.runs import git_commit
from locomo_kit.testing.same_results import results

SYSTEMS = "memworker,mempalace,mem0,bm25,dense"
TARGET_S = 10 * 60
DONE = re.compile(r"^(?P<name>\S+)\s+\| done in (?P<s>[\d,.]+) s(?:, (?P<cpu>[\d,.]+) CPU-s)?"
                  r"(?:, peak (?P<mib>[\d,.]+) MiB)?")


def _load() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def leaderboard_rows(folder: Path) -> list[dict]:
    boards = sorted((folder / "leaderboards").glob("*/leaderboard.json"))
    return json.loads(boards[0].read_text())["rows"] if boards else []


def run_command(argv: list[str], outputs: Path, names: list[str]) -> dict:
    """One leaderboard command in ``outputs`` (emptied first): wall and CPU seconds, per-system times and peaks."""
    if outputs.exists():
        shutil.rmtree(outputs)
    outputs.mkdir(parents=True)
    env = dict(os.environ, LOCOMO_OUTPUTS_DIR=str(outputs))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "locomo_kit", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)
    systems: dict[str, dict] = {n: {} for n in names}
    current, since = None, t0
    log = []
    for line in proc.stdout:
        log.append(line)
        now = time.monotonic()
        header = re.match(r"^== (\S+) ==$", line.strip())
        if header:  # --jobs 1: each system's time runs from its header to the next one (or the end)
            if current in systems:
                systems[current]["seconds"] = round(now - since, 1)
            current, since = header.group(1), now
        done = DONE.match(line)
        if done and done.group("name") in systems:
            systems[done.group("name")]["seconds"] = float(done.group("s").replace(",", ""))
            if done.group("cpu"):
                systems[done.group("name")]["cpu_s"] = float(done.group("cpu").replace(",", ""))
            if done.group("mib"):
                systems[done.group("name")]["peak_mib"] = float(done.group("mib").replace(",", ""))
    code = proc.wait()
    wall = time.monotonic() - t0
    if current in systems and "seconds" not in systems[current]:
        systems[current]["seconds"] = round(wall - (since - t0), 1)  # the last one, with the table's writing
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    (outputs / "command.log").write_text("".join(log))
    for row in leaderboard_rows(outputs):
        name = row["system"].split()[0]
        if name in systems:
            systems[name].update(evidence_recall=row["evidence_recall"], locomo_f1=row["locomo_f1"],
                                 questions=row["questions"])
    return {"argv": argv, "exit": code, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "systems": systems,
            "load_after": _load()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--systems", default=SYSTEMS)
    ap.add_argument("--conversations", default="1,3,10", help="how many conversations, comma-separated (1,3,10)")
    ap.add_argument("--jobs", type=int, default=None, help="the parallel count (default: --jobs's default here)")
    ap.add_argument("--context-budget", default="1000")
    ap.add_argument("--limit", type=int, default=None, help="only the first Q questions of each conversation")
    args = ap.parse_args(argv)

    entries = parse_systems(args.systems)
    names = [e.spec for e in entries]
    counts = [int(c) for c in args.conversations.split(",") if c.strip()]
    samples = [c.sample_id for c in load_dataset(default_dataset_path())]
    if not counts or any(not 1 <= c <= len(samples) for c in counts):
        ap.error(f"--conversations takes counts from 1 to {len(samples)}, e.g. 1,3,10")
    jobs = args.jobs or default_jobs([e.name for e in entries], apart=apart_systems(entries, sample="all"))
    real_outputs = outputs_dir()
    root = real_outputs / "bench" / "leaderboard-runs"
    result: dict = {"systems": names, "context_budget": args.context_budget, "limit": args.limit, "jobs": jobs,
                    "points": [], "target_s": TARGET_S, "git_commit": git_commit(),
                    "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                                "python": sys.version.split()[0], "load_before": _load()},
                    "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "complete": False}
    out = real_outputs / "bench" / "leaderboard.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    ok = True
    for count in counts:
        sample = "all" if count == len(samples) else ",".join(samples[:count])
        point: dict = {"conversations": count, "sample": sample, "by_jobs": {}}
        result["points"].append(point)
        for j in dict.fromkeys([1, jobs]):
            cmd = ["leaderboard", "--systems", args.systems, "--sample", sample, "--context-budget",
                   args.context_budget, "--jobs", str(j)] + (["--limit", str(args.limit)] if args.limit else [])
            print(f"{count} conversation(s), --jobs {j}: {' '.join(cmd)}", flush=True)
            point["by_jobs"][str(j)] = measured = run_command(cmd, root / f"c{count}-j{j}", names)
            ok = ok and measured["exit"] == 0
            print(f"  exit {measured['exit']}, {measured['wall_s']:.0f} s wall, {measured['cpu_s']:.0f} CPU-s", flush=True)
            out.write_text(json.dumps(result, indent=2), encoding="utf-8")
        if jobs != 1:
            # processes of one system's conversations append to its files at once: the lines compared sorted, and
            # without the ids Mem0 and MemPalace give their memories at random
            same = (results(root / f"c{count}-j1", memory_ids=False, in_order=False)
                    == results(root / f"c{count}-j{jobs}", memory_ids=False, in_order=False))
            point["records_equal"] = same
            ok = ok and same
            print(f"  --jobs {jobs} made the records of --jobs 1: {'yes' if same else 'NO'}", flush=True)
    result.update(complete=True, written_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    result["machine"]["load_after"] = _load()
    out.write_text(json.dumps(result, indent=2), encoding="utf-8")

    fmt = lambda v, d=1: "–" if v is None else f"{v:,.{d}f}"
    print(f"\n{'conversations':>13} {'jobs':>4} {'wall s':>8} {'CPU s':>7}  " + "  ".join(f"{n:>12}" for n in names))
    for p in result["points"]:
        for j, m in p["by_jobs"].items():
            cells = "  ".join(f"{fmt(m['systems'][n].get('seconds')):>8} s{'':>2}" for n in names)
            print(f"{p['conversations']:>13} {j:>4} {m['wall_s']:>8.1f} {m['cpu_s']:>7.1f}  {cells}")
    print(f"wrote {out}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
