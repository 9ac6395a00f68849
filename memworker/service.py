"""memworker's behaviour behind the HTTP routes: queue processing, direct saves and search."""

from __future__ import annotations

import json
import logging
import threading
import time
from datetime import datetime, timezone
from typing import Any

import numpy as np

from memworker.config import Settings
from memworker.embed import Embedder, make_embedder
from memworker.extract import Extractor, LLMExtractor, MemoryDraft, RuleExtractor
from memworker.injection import screen
from memworker.provenance import corroboration
from memworker.ranking import Weights, rank
from memworker.retrieval import Hit, IndexCache, ProjectIndex, RetrievalParams
from memworker.safety import redact_secrets
from memworker.store import NewMemory, Store, is_storage_error, now_ms
from memworker.transcript import Transcript, parse_transcript

log = logging.getLogger("memworker")
CANDIDATES = 100
WARM_AFTER_IDLE_S = 2.0
KEEP_SPLIT_ITEMS = 4  # split items whose drafts are kept between their chunks  # rebuild stale search indexes once the queue has been idle this long


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
        if settings.ranking not in ("relevance", "seed"):
            raise ValueError(f"Unknown ranking {settings.ranking!r}: choose 'relevance' or 'seed'")
        if settings.two_speakers not in ("first", "one", "interleave"):
            raise ValueError(f"Unknown two_speakers {settings.two_speakers!r}: choose 'first', 'one' or 'interleave'")
        if settings.query_embedder not in ("static", "full"):
            raise ValueError(f"Unknown query embedder {settings.query_embedder!r}: choose 'static' or 'full'")
        self.params = RetrievalParams(
            ranking=settings.ranking, k1=settings.bm25_k1, b=settings.bm25_b, context_weight=settings.context_weight,
            bm25_weight=settings.bm25_weight, speaker_boost=settings.speaker_boost, date_weight=settings.date_weight,
            window_weight=settings.window_weight, session_weight=settings.session_weight,
            expand_terms=settings.expand_terms, expand_min_sim=settings.expand_min_sim,
            expand_weight=settings.expand_weight, feedback_docs=settings.feedback_docs,
            feedback_weight=settings.feedback_weight,
            span_gap=settings.span_gap, span_max_turns=settings.span_max_turns,
            two_speakers=settings.two_speakers, second_speaker_boost=settings.second_speaker_boost,
            reply_turns=settings.reply_turns, reply_spans=settings.reply_spans)
        self.static = None  # StaticMiniLM for queries, once the embedder is loaded
        self.indexes = IndexCache()
        self.ready = threading.Event()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._busy = threading.Event()
        self._thread: threading.Thread | None = None
        self.started = time.time()
        self.stalled: str | None = None  # why the queue cannot make progress (storage failing), else None
        # fairness between a split (large) item and the rest: after a chunk of a split item, items not
        # yet started go first until they have had as many memories' worth of work as that chunk
        self._fresh_credit = 0
        self._drafts_of: dict[int, tuple[str, Transcript, list[MemoryDraft]]] = {}  # split items, between chunks
        self._uncorroborated: dict[str, tuple[ProjectIndex, np.ndarray]] = {}  # per project: positions in its index

    # -- lifecycle ----------------------------------------------------------------------------
    def start(self) -> None:
        """Load the embedder and start the queue processor, in the background."""
        def boot() -> None:
            if self.embedder is None:
                self.embedder = make_embedder(self.settings.embedder, threads=self.settings.embed_threads)
            self.static = self._make_static()
            self.ready.set()
            self._run()

        self._thread = threading.Thread(target=boot, name="memworker-queue", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread:
            self._thread.join(timeout=30)
        if self.static is not None:
            self.static.save()
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
        last_item = time.monotonic()
        while not self._stop.is_set():
            try:
                item = self.store.next_pending(prefer_fresh=self._fresh_credit > 0)
                if item is None:
                    self.stalled, stalls = None, 0
                    if time.monotonic() - last_item >= WARM_AFTER_IDLE_S:
                        self._warm_indexes()
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
                    last_item = time.monotonic()
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
        """One step of an item: all of it, or one chunk of ``chunk_memories`` memories of a large one.

        A large item is committed in chunks, one transaction each, resuming at its recorded progress
        (only with a deterministic extractor, which gives the same drafts again after a restart); its
        drafts are kept between chunks, so a chunk costs its own memories' work, not the whole item's
        parsing and extraction again.
        """
        if item["kind"] == "summarize":
            self.store.finish_summary(item["id"], item["session_id"], self._summary(item["project"],
                                                                                     json.loads(item["payload"])))
            self._account(started=False, split=False, memories=1)
            return
        transcript, drafts = self._drafts(item)
        chunk = max(1, self.settings.chunk_memories)
        start = int(item.get("progress") or 0) if self.extractor.name == "rules" else 0
        end = len(drafts) if self.extractor.name != "rules" else min(len(drafts), start + chunk)
        memories = self._to_memories(drafts[start:end], transcript, item["project"], item["content_session_id"],
                                     item["prompt_number"])
        split = end < len(drafts)
        self.store.commit_memories(item["id"], memories, self.settings.dedup_threshold,
                                   progress=end if split else None)
        if not split:
            self._drafts_of.pop(item["id"], None)
        self._account(started=start > 0, split=split, memories=end - start)

    def _drafts(self, item: dict) -> tuple[Transcript, list[MemoryDraft]]:
        """The item's transcript and drafts (kept for the next chunk while the item is split)."""
        kept = self._drafts_of.get(item["id"])
        if kept is not None and kept[0] == item["payload"]:
            return kept[1], kept[2]
        payload = json.loads(item["payload"])
        transcript = parse_transcript(response_text(payload.get("tool_response")))
        drafts = self.extractor.extract(transcript)
        while len(self._drafts_of) >= KEEP_SPLIT_ITEMS:
            self._drafts_of.pop(next(iter(self._drafts_of)))
        self._drafts_of[item["id"]] = (item["payload"], transcript, drafts)
        return transcript, drafts

    def _account(self, started: bool, split: bool, memories: int) -> None:
        """Work credit of items not yet started: a chunk of a split item earns them its memories (at most
        one chunk's worth); an item done in one step spends its own (at least 1)."""
        if started or split:
            self._fresh_credit = min(max(1, self.settings.chunk_memories), self._fresh_credit + memories)
        else:
            self._fresh_credit = max(0, self._fresh_credit - max(1, memories))

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
        if self.static is not None:  # the static vectors of new words now, not on the first search
            self.static.ensure(np.concatenate([self.static.piece_ids(d.content) for d in drafts]))
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
                "instruction_signals": d.instruction_signals,
                "unverified": False,
                "provenance": {"route": "observation", "content_session": session_id, "prompt_number": prompt_number},
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
        importance 0.1 and flagged ``instruction_like``. Marked ``unverified`` (not from a transcript),
        and, when it names a speaker of the project's transcripts, checked against what they said
        (``memworker.provenance``): an ``uncorroborated`` claim ranks lower (``uncorroborated_weight``).
        """
        assert self.embedder is not None
        text, _ = redact_secrets(text)
        t = parse_transcript(text)
        turn = t.turns[0] if len(t.turns) == 1 else None
        signals = screen(text)
        signals += [x for x in (screen(title) if title else []) if x not in signals]
        instruction = bool(signals)
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
            "instruction_signals": signals,
            "unverified": True,
            "provenance": {"route": "memory/save"},
            "embedder": self.embedder.name,
        }
        checked = corroboration(self.store, project, text)
        if checked is not None:
            meta["corroboration"] = checked
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

    def _make_static(self):
        """Static query vectors distilled from the ingestion model (MiniLM only; else None)."""
        from memworker.embed import MiniLMOnnx

        uses = self.settings.bm25_weight < 1 or self.settings.expand_terms > 0
        if self.settings.query_embedder != "static" or not uses or not isinstance(self.embedder, MiniLMOnnx):
            return None
        from memworker.static_embed import StaticMiniLM, cache_path_for, installed_table

        return StaticMiniLM(self.embedder, self.settings.static_cache or cache_path_for(self.settings.db_path),
                            preload=installed_table())

    def _query_vector(self, query: str):
        assert self.embedder is not None
        return self.embedder.embed([query])[0]

    def _warm_indexes(self) -> None:
        """With the queue idle, rebuild the search index of each project written since (not on a search)."""
        for project in self.indexes.stale(self.store):
            if self._stop.is_set() or self.store.queue_depth():
                return
            try:
                self.index(project)
            except Exception:  # a search will rebuild it and report the error
                log.exception("warming the index of %s failed", project)
        if self.static is not None:
            self.static.save()

    def index(self, project: str) -> ProjectIndex:
        """The project's search index (cached until the project's memories change)."""
        def build(rows: list[dict]) -> ProjectIndex:
            stored = [np.frombuffer(r["embedding"], dtype=np.float32) for r in rows if r["embedding"] is not None]
            matrix = np.vstack(stored) if stored and len(stored) == len(rows) else None
            return ProjectIndex(rows, self.params, self.static, matrix)

        return self.indexes.get(project, self.store, self.params, build)

    def search(self, query: str, project: str | None, limit: int, since: int | None = None,
               until: int | None = None, obs_type: str | None = None, offset: int = 0,
               context_budget: int | None = None) -> list[tuple[dict, Hit | None]]:
        """Ranked rows with their scores; without a query, the project's newest rows.

        With ``context_budget`` (tokens), hits become spans of whole turns packed to the budget
        (see :mod:`memworker.retrieval`); each row then carries its span's text, exact source turns
        and token count.
        """
        if not project:
            return []
        if not query.strip():
            ids = self.store.project_ids(project, since, until, obs_type)[::-1][offset: offset + limit]
            rows = self.store.rows(ids)
            return [(rows[i], None) for i in ids if i in rows]
        index = self.index(project)
        if not index.docs:
            return []
        allowed = None
        if since is not None or until is not None or obs_type:
            allowed = set(self.store.project_ids(project, since, until, obs_type))
        dense = self.params.bm25_weight < 1 and not index.dense
        sim, bm, cos = index.similarity(query, self._query_vector(query) if dense else None)
        if self.params.ranking == "seed":
            scores = self._seed_scores(project, index, sim, bm, cos)
        else:
            scores = sim
        scores = self._weigh_uncorroborated(project, index, scores)
        order = np.argsort(-scores, kind="stable")
        keep = scores[order] > -np.inf
        if allowed is not None:
            keep &= np.isin(index.ids[order], np.fromiter(allowed, dtype=np.int64, count=len(allowed)))
        order = order[keep].tolist()
        spans = index.select(order, scores, limit, offset, context_budget)
        rows = self.store.rows(int(index.ids[s.best]) for s in spans)
        out = index.results(spans, rows, scores, sim, bm, cos, budgeted=bool(context_budget))
        if self.params.ranking == "seed":  # only its recency term reads the access times: no write otherwise
            self.store.touch([int(index.ids[k]) for s in spans for k in s.docs])
        return out

    def _weigh_uncorroborated(self, project: str, index: ProjectIndex, scores: "np.ndarray") -> "np.ndarray":
        """Scale the positive scores of directly saved claims that the project's transcripts do not
        corroborate (``memworker.provenance``) by ``uncorroborated_weight``."""
        weight = self.settings.uncorroborated_weight
        cached = self._uncorroborated.get(project)
        if cached is None or cached[0] is not index:
            flagged = [k for k, r in enumerate(index.rows) if '"uncorroborated"' in (r.get("metadata") or "")
                       and json.loads(r["metadata"]).get("corroboration", {}).get("status") == "uncorroborated"]
            cached = (index, np.array(flagged, dtype=np.int64))
            self._uncorroborated[project] = cached
        positions = cached[1]
        if weight == 1.0 or not len(positions):
            return scores
        scores = scores.copy()
        positive = positions[scores[positions] > 0]
        scores[positive] *= weight
        return scores

    def _seed_scores(self, project: str, index: ProjectIndex, sim, bm, cos) -> "np.ndarray":
        """The seed design's formula over the candidates (BM25 matches and the best cosines)."""
        candidates = set(np.flatnonzero(bm > 0).tolist()) | set(np.argsort(-cos)[:CANDIDATES].tolist())
        facts = self.store.rows(int(index.ids[k]) for k in candidates)
        boost = {int(index.ids[k]): float(sim[k] - self.params.bm25_weight * bm[k] / (bm.max() or 1.0)
                                          - (1 - self.params.bm25_weight) * cos[k]) for k in candidates}
        ranked = rank({int(index.ids[k]): float(bm[k]) for k in candidates if bm[k] > 0},
                      {int(index.ids[k]): float(cos[k]) for k in candidates}, facts, self._now_ms(project), now_ms(),
                      self.weights, boost)
        scores = np.full(len(index.docs), -np.inf)
        for r in ranked:
            scores[index.pos_of[r.id]] = r.score
        return scores
