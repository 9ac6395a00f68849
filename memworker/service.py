"""memworker's behaviour behind the HTTP routes: queue processing, direct saves and search."""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from datetime import datetime, timezone
from typing import Any

from memworker.config import Settings
from memworker.embed import Embedder, make_embedder
from memworker.extract import Extractor, LLMExtractor, MemoryDraft, RuleExtractor
from memworker.ranking import Ranked, Weights, fts_query, rank
from memworker.safety import is_instruction_like, redact_secrets
from memworker.store import NewMemory, Store, is_storage_error, now_ms
from memworker.transcript import Transcript, parse_transcript

log = logging.getLogger("memworker")
CANDIDATES = 100


def _epoch(iso_date: str | None) -> int | None:
    if not iso_date:
        return None
    d = datetime.fromisoformat(iso_date)
    if d.tzinfo is None:
        d = d.replace(tzinfo=timezone.utc)
    return int(d.timestamp() * 1000)


def response_text(value: Any) -> str:
    """The text of a tool response: a string, or the longest string inside a JSON value."""
    if isinstance(value, str):
        return value
    strings: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, str):
            strings.append(v)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(value)
    return max(strings, key=len) if strings else json.dumps(value)


def make_extractor(settings: Settings) -> Extractor:
    if settings.extractor == "rules":
        return RuleExtractor()
    if settings.extractor == "llm":
        return LLMExtractor(settings.llm_provider, settings.llm_model, settings.llm_base_url or None,
                            settings.llm_api_key or None)
    raise ValueError(f"Unknown extractor {settings.extractor!r}: choose 'rules' or 'llm'")


class MemoryService:
    def __init__(self, settings: Settings, embedder: Embedder | None = None, extractor: Extractor | None = None) -> None:
        self.settings = settings
        self.store = Store(settings.db_path)
        self.embedder = embedder
        self.extractor = extractor or make_extractor(settings)
        self.weights = Weights(settings.w_similarity, settings.w_importance, settings.w_recency,
                               settings.half_life_days, settings.bm25_weight, settings.floor)
        self.ready = threading.Event()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._busy = threading.Event()
        self._thread: threading.Thread | None = None
        self.started = time.time()
        self.stalled: str | None = None  # why the queue cannot make progress (storage failing), else None
        self._prefer_fresh = False  # after a chunk of a split item, let one item not yet started go first

    # -- lifecycle ----------------------------------------------------------------------------
    def start(self) -> None:
        """Load the embedder and start the queue processor, in the background."""
        def boot() -> None:
            if self.embedder is None:
                self.embedder = make_embedder(self.settings.embedder)
            self.ready.set()
            self._run()

        self._thread = threading.Thread(target=boot, name="memworker-queue", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread:
            self._thread.join(timeout=30)
        self.store.close()

    def wake(self) -> None:
        self._wake.set()

    def is_processing(self) -> bool:
        return self._busy.is_set() or self.store.queue_depth() > 0

    def _backoff(self, n: int) -> float:
        return min(60.0, self.settings.retry_base_seconds * 2 ** max(0, min(n - 1, 16)))

    def _run(self) -> None:
        """The queue processor. It never dies: an item that fails is retried with backoff, then marked
        failed; a store that cannot be written (disk full, read-only) stalls the queue, which is
        reported by ``/api/readiness`` and retried with backoff until it can write again."""
        stalls = 0
        while not self._stop.is_set():
            try:
                item = self.store.next_pending(prefer_fresh=self._prefer_fresh)
                if item is None:
                    self.stalled, stalls = None, 0
                    due = self.store.next_retry_in()
                    self._wake.wait(timeout=1.0 if due is None else min(1.0, max(0.01, due)))
                    self._wake.clear()
                    continue
                self._busy.set()
                try:
                    self._process(item)
                except Exception as exc:
                    if is_storage_error(exc):
                        raise
                    self._record_failure(item, exc)
                finally:
                    self._busy.clear()
                self.stalled, stalls = None, 0
            except Exception as exc:  # the store itself is failing: keep the item pending, back off
                stalls += 1
                self.stalled = f"{type(exc).__name__}: {exc}"
                delay = self._backoff(stalls)
                log.error("queue cannot make progress (%s); retrying in %.2f s", self.stalled, delay)
                self._stop.wait(delay)

    def _record_failure(self, item: dict, exc: Exception) -> None:
        error = f"{type(exc).__name__}: {exc}"
        attempts = int(item.get("attempts") or 0) + 1
        if attempts >= self.settings.max_attempts:
            log.error("queue item %s failed %d times, giving up (a resend re-queues it): %s", item["id"], attempts,
                      error)
            self.store.fail_item(item["id"], error)
        else:
            delay = self._backoff(attempts)
            log.warning("queue item %s failed (attempt %d of %d), retrying in %.2f s: %s", item["id"], attempts,
                        self.settings.max_attempts, delay, error)
            self.store.retry_item(item["id"], error, delay)

    # -- processing ---------------------------------------------------------------------------
    def _process(self, item: dict) -> None:
        payload = json.loads(item["payload"])
        if item["kind"] == "summarize":
            self.store.finish_summary(item["id"], item["session_id"], self._summary(item["project"], payload))
            return
        transcript = parse_transcript(response_text(payload.get("tool_response")))
        drafts = self.extractor.extract(transcript)
        # a large item is committed in chunks, one transaction each, resuming at its recorded progress
        # (only with a deterministic extractor, which gives the same drafts again after a restart)
        chunk = max(1, self.settings.chunk_memories)
        start = int(item.get("progress") or 0) if self.extractor.name == "rules" else 0
        end = len(drafts) if self.extractor.name != "rules" else min(len(drafts), start + chunk)
        memories = self._to_memories(drafts[start:end], transcript, item["project"], item["content_session_id"],
                                     item["prompt_number"])
        self.store.commit_memories(item["id"], memories, self.settings.dedup_threshold,
                                   progress=end if end < len(drafts) else None)
        self._prefer_fresh = end < len(drafts)

    def _summary(self, project: str, payload: dict) -> str:
        last = str(payload.get("last_assistant_message") or "")
        n = len(self.store.project_ids(project))
        return f"{n} memories in {project}." + (f" Last message: {last[:500]}" if last else "")

    def _to_memories(self, drafts: list[MemoryDraft], t: Transcript, project: str, session_id: str | None,
                     prompt_number: int | None) -> list[NewMemory]:
        if not drafts:
            return []
        assert self.embedder is not None
        vectors = self.embedder.embed([d.embed_text or d.content for d in drafts])
        session_date = t.date.date().isoformat() if t.date else None
        out = []
        for d, vec in zip(drafts, vectors):
            meta = {
                "memory_type": d.type,
                "importance": d.importance,
                "speaker": d.speaker,
                "event_date": d.event_date,
                "event_when": d.event_when,
                "session": t.session,
                "session_date": session_date,
                "source_session": session_id,
                "source_turns": d.source_turns,
                "reference_count": 1,
                "instruction_like": d.instruction_like,
                "extractor": self.extractor.name,
                "embedder": self.embedder.name,
            }
            subtitle = " · ".join(x for x in (d.speaker, f"session {t.session}" if t.session else "", session_date or "") if x)
            out.append(NewMemory(
                project=project, memory_session_id=session_id, type=d.type, title=d.content[:80],
                subtitle=subtitle, narrative=d.content, body=d.content, context=d.context, facts=[d.content],
                concepts=d.concepts, metadata=meta, importance=d.importance, event_epoch=_epoch(d.event_date),
                embedding=vec, prompt_number=prompt_number))
        return out

    # -- direct saves -------------------------------------------------------------------------
    def save_memory(self, text: str, title: str | None, project: str) -> dict:
        """Store one memory as is (claude-mem's ``/api/memory/save``), indexed at once.

        Screened like extracted memories: an instruction-like text is kept as a ``quote`` with
        importance 0.1 and flagged ``instruction_like``.
        """
        assert self.embedder is not None
        text, _ = redact_secrets(text)
        t = parse_transcript(text)
        turn = t.turns[0] if len(t.turns) == 1 else None
        instruction = is_instruction_like(text) or bool(title and is_instruction_like(title))
        mtype, importance = ("quote", 0.1) if instruction else ("discovery", 0.5)
        meta = {
            "memory_type": mtype,
            "importance": importance,
            "speaker": turn.speaker if turn else None,
            "event_date": t.date.date().isoformat() if t.date else None,
            "session": t.session,
            "session_date": t.date.date().isoformat() if t.date else None,
            "source_turns": [turn.turn_id] if turn and not turn.turn_id.startswith("T") else [],
            "reference_count": 1,
            "instruction_like": instruction,
            "embedder": self.embedder.name,
        }
        vec = self.embedder.embed([text])[0]
        title = title or text.splitlines()[-1][:80]
        mem = NewMemory(project=project, memory_session_id=None, type=mtype, title=title,
                        subtitle="Manual memory", narrative=text, body=text, context="", facts=[], concepts=[],
                        metadata=meta, importance=importance, event_epoch=_epoch(meta["event_date"]), embedding=vec)
        oid = self.store.commit_memories(None, [mem], dedup_threshold=2.0)[0]
        return {"id": oid, "title": title, "project": project}

    # -- search -------------------------------------------------------------------------------
    def _now_ms(self, project: str) -> int:
        mode = self.settings.now
        if mode == "wall":
            return now_ms()
        if mode == "latest":
            return self.store.latest_event_epoch(project) or now_ms()
        return _epoch(mode) or now_ms()

    def _speaker_boost(self, query: str, project: str, rows: dict[int, dict]) -> dict[int, float]:
        """Memories by the one speaker a query names get ``speaker_boost`` added to their similarity."""
        if not self.settings.speaker_boost:
            return {}
        words = set(re.findall(r"\w+", query.lower()))
        named = {s for s in self.store.speakers(project) if s and s.lower() in words}
        if len(named) != 1:
            return {}
        (speaker,) = named
        return {i: self.settings.speaker_boost for i, r in rows.items()
                if json.loads(r["metadata"] or "{}").get("speaker") == speaker}

    def search(self, query: str, project: str | None, limit: int, since: int | None = None,
               until: int | None = None, obs_type: str | None = None, offset: int = 0) -> list[tuple[dict, Ranked | None]]:
        """Ranked rows with their scores; without a query, the project's newest rows."""
        if not project:
            return []
        allowed = None
        if since is not None or until is not None or obs_type:
            allowed = set(self.store.project_ids(project, since, until, obs_type))
        if not query.strip():
            ids = self.store.project_ids(project, since, until, obs_type)[::-1][offset: offset + limit]
            rows = self.store.rows(ids)
            return [(rows[i], None) for i in ids if i in rows]
        assert self.embedder is not None
        bm25 = self.store.fts_candidates(project, fts_query(query), CANDIDATES, self.settings.context_weight)
        cosine = self.store.dense_candidates(project, self.embedder.embed([query])[0], CANDIDATES)
        if allowed is not None:
            bm25 = {k: v for k, v in bm25.items() if k in allowed}
            cosine = {k: v for k, v in cosine.items() if k in allowed}
        rows = self.store.rows(set(bm25) | set(cosine))
        boost = self._speaker_boost(query, project, rows)
        ranked = rank(bm25, cosine, rows, self._now_ms(project), now_ms(), self.weights, boost)[offset: offset + limit]
        self.store.touch([r.id for r in ranked])
        return [(rows[r.id], r) for r in ranked]
