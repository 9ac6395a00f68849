"""``bm25``: BM25 over single turns with their session dates (the Mem0 paper's BM25 RAG row, measured here).

bm25s 0.3.16 (PyPI, numpy only) with its defaults: Lucene BM25, k1 1.5, b 0.75, its English stop
words, no stemmer. An optional extra (``pip install 'bm25s==0.3.16'``): the core install does not
need it. The turns persist in the store's SQLite file; the index (milliseconds to build) is built
from them per conversation on the first search of a process.
"""

from __future__ import annotations

from importlib import metadata
from typing import Any

from locomo_kit.systems.base import Identity, SystemOption
from locomo_kit.systems.turn_store import TurnMemory
from locomo_kit.systems.turn_system import TurnSystem


def _version() -> str | None:
    try:
        return metadata.version("bm25s")
    except metadata.PackageNotFoundError:
        return None


class BM25System(TurnSystem):
    name = "bm25"
    settings_defaults = {"k1": 1.5, "b": 0.75, "method": "lucene", "stopwords": "en", "stemmer": None,
                         "memory": "one turn, '[date] speaker: text'"}
    semantic = "none (lexical BM25)"
    system_options = (
        SystemOption("k1", float, 1.5, "BM25's term-frequency saturation"),
        SystemOption("b", float, 0.75, "BM25's document-length normalisation"),
        SystemOption("method", str, "lucene", "bm25s's scoring variant: robertson, atire, bm25l, bm25+ or lucene"),
        SystemOption("stopwords", str, "en", "bm25s's stop-word list ('en', or '' for none)"),
    )

    @classmethod
    def declared_version(cls) -> str | None:
        return _version()

    def identity(self) -> Identity:
        return Identity(self.name, _version(), dict(self.settings), url="in-process")

    def _tokenizer(self):
        from bm25s.tokenization import Tokenizer  # deferred: a heavy import

        return Tokenizer(stopwords=self.settings["stopwords"])

    def build_index(self, memories: list[TurnMemory], vectors: list) -> Any:
        import bm25s  # deferred: a heavy import

        tok = self._tokenizer()
        ids = tok.tokenize([m.text for m in memories], return_as="ids", show_progress=False)
        index = bm25s.BM25(k1=self.settings["k1"], b=self.settings["b"], method=self.settings["method"])
        index.index(ids, show_progress=False)
        return tok, index

    def rank(self, index: Any, query: str, k: int) -> list[tuple[int, float]]:
        tok, bm25 = index
        q = tok.tokenize([query], update_vocab=False, return_as="ids", show_progress=False)
        docs, scores = bm25.retrieve(q, k=k, show_progress=False)
        return [(int(d), float(s)) for d, s in zip(docs[0], scores[0]) if s > 0]
