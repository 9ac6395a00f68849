"""Static (per-token) embeddings distilled from the shipped MiniLM, for ~1 ms query embedding.

model2vec-style, no training: a word piece's vector is MiniLM's mean-pooled output for the
sequence ``[CLS] piece [SEP]``. A text's vector is the weighted mean of its pieces' vectors
(weights: an IDF the caller supplies, else 1), L2-normalised.

Vectors are distilled lazily, a batch of the missing pieces at a time (the first time a piece is
seen, at ingestion or in a query), and persisted to a cache file beside the database, so a
restarted Worker never distils a piece twice. Distilling the whole 30,522-piece vocabulary up front
takes about 40 s on 2 busy cores: ``make setup`` does it once (``python -m memworker.static_embed
--install``) into the environment (:func:`installed_table`), which every Worker then loads, so that
no query waits for MiniLM to distil a piece it has not seen. It keeps a copy for the machine
(:func:`machine_table`, under ``$XDG_CACHE_HOME`` or ``~/.cache``, named for the model file's sha256 and
onnxruntime's version), which the next environment's ``--install`` copies instead of distilling again.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import threading
from pathlib import Path
from typing import Sequence

import numpy as np

CACHE_VERSION = "v1"


class StaticMiniLM:
    """Per-piece vectors of a :class:`memworker.embed.MiniLMOnnx` model, distilled on demand."""

    name = "static-minilm"
    dim = 384

    def __init__(self, model, cache_path: str | Path | None = None, batch_size: int = 512,
                 preload: str | Path | None = None) -> None:
        """``preload``: a table distilled before (e.g. :func:`installed_table`), read before ``cache_path``."""
        self._model = model  # a MiniLMOnnx: its tokenizer and ONNX session are shared
        self._tok = model.tokenizer_plain
        self.vocab_size = self._tok.get_vocab_size()
        self._cls, self._sep = self._tok.token_to_id("[CLS]"), self._tok.token_to_id("[SEP]")
        self.table = np.zeros((self.vocab_size, self.dim), dtype=np.float32)
        self.known = np.zeros(self.vocab_size, dtype=bool)
        self._batch = batch_size
        self._lock = threading.Lock()
        self._dirty = False
        self.cache_path = Path(cache_path) if cache_path else None
        for path in (preload, self.cache_path):
            if path and Path(path).is_file():
                self._load(Path(path))

    # -- cache ----------------------------------------------------------------------------------
    def _load(self, path: Path) -> None:
        try:
            with np.load(path) as data:
                if str(data["version"]) != CACHE_VERSION or str(data["model"]) != self._model.fingerprint:
                    return  # another model or format: distil again
                ids, vecs = data["ids"], data["vectors"].astype(np.float32)
        except (OSError, KeyError, ValueError):
            return  # an unreadable cache is rebuilt, not trusted
        ids = ids[(ids >= 0) & (ids < self.vocab_size)]
        self.table[ids] = vecs[: len(ids)]
        self.known[ids] = True

    def save(self) -> None:
        """Persist the distilled pieces (atomically); a no-op when nothing new was distilled."""
        if not self.cache_path or not self._dirty:
            return
        with self._lock:
            ids = np.flatnonzero(self.known)
            vecs = self.table[ids].astype(np.float16)
            self._dirty = False
        self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.cache_path.with_name(self.cache_path.name + f".{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            np.savez(fh, version=CACHE_VERSION, model=self._model.fingerprint, ids=ids, vectors=vecs)
        os.replace(tmp, self.cache_path)

    # -- distillation ---------------------------------------------------------------------------
    def ensure(self, ids: np.ndarray) -> int:
        """Distil the pieces among ``ids`` not yet known; returns how many were distilled."""
        missing = np.unique(ids[~self.known[ids]])
        if missing.size == 0:
            return 0
        for start in range(0, missing.size, self._batch):
            chunk = missing[start : start + self._batch]
            seq = np.stack([np.full(chunk.size, self._cls), chunk, np.full(chunk.size, self._sep)], axis=1)
            hidden = self._model.run(seq.astype(np.int64), np.ones_like(seq, dtype=np.int64))
            with self._lock:
                self.table[chunk] = hidden.mean(axis=1)
                self.known[chunk] = True
                self._dirty = True
        return int(missing.size)

    def distil_all(self) -> int:
        return self.ensure(np.arange(self.vocab_size))

    # -- embedding ------------------------------------------------------------------------------
    def piece_ids(self, text: str) -> np.ndarray:
        return np.asarray(self._tok.encode(text, add_special_tokens=False).ids, dtype=np.int64)

    def embed_ids(self, ids: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        if ids.size == 0:
            return np.zeros(self.dim, dtype=np.float32)
        self.ensure(ids)
        vecs = self.table[ids]
        vec = (vecs * weights[:, None]).sum(axis=0) if weights is not None else vecs.sum(axis=0)
        norm = float(np.linalg.norm(vec))
        return (vec / norm).astype(np.float32) if norm > 0 else vec.astype(np.float32)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i] = self.embed_ids(self.piece_ids(text))
        return out


def cache_path_for(db_path: str) -> Path | None:
    """The cache file beside a database (None for an in-memory database)."""
    if db_path == ":memory:":
        return None
    return Path(db_path).with_name(Path(db_path).name + f".static-minilm-{CACHE_VERSION}.npz")




def installed_table() -> Path:
    """The whole vocabulary, distilled once per environment by ``make setup``."""
    return Path(sys.prefix) / "share" / "memworker" / f"static-minilm-{CACHE_VERSION}.npz"


def machine_table(model) -> Path:
    """Where ``--install`` keeps a copy of the whole table for the next environment on this machine (a fresh
    clone's ``make setup`` copies it instead of distilling again): named for the model's fingerprint."""
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "memworker"
    return root / f"static-minilm-{CACHE_VERSION}-{model.fingerprint}.npz"


def main(argv: Sequence[str] | None = None) -> int:
    from memworker.embed import MiniLMOnnx

    ap = argparse.ArgumentParser(description="Distil the whole static vocabulary into a cache file "
                                 "(else done lazily, beside each database).")
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("cache", nargs="?", help="cache file to write, e.g. ~/.memworker/memworker.db"
                       + cache_path_for("x.db").name[4:])
    where.add_argument("--install", action="store_true", help=f"write the environment's table ({installed_table()}),"
                       " which every Worker of this environment loads; kept if already complete")
    args = ap.parse_args(argv)
    target = installed_table() if args.install else Path(args.cache)
    model = MiniLMOnnx()
    kept = machine_table(model) if args.install else None
    if kept and kept.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(kept, target)  # read like any table: a piece it lacks is distilled below
        print(f"copied {kept}")
    static = StaticMiniLM(model, target)
    n = static.distil_all()
    static.save()
    print(f"distilled {n} pieces into {target} ({int(static.known.sum())} of {static.vocab_size} known)")
    if kept and (n or not kept.is_file()):
        kept.parent.mkdir(parents=True, exist_ok=True)
        tmp = kept.with_name(f"{kept.name}.{os.getpid()}.tmp")
        shutil.copyfile(target, tmp)
        os.replace(tmp, kept)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
