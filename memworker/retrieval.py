"""Budgeted retrieval: rank a project's memories, merge adjacent hits into spans of whole turns,
pack them into a context budget in tokens.

Ranking (``relevance``, the default; every term kept because it raised recall on held-out
LoCoMo conversations, see docs/benchmarks.md "memworker retrieval"):

- BM25 (own parameters ``k1``, ``b``) over two fields: the memory's text (weight 1) and its
  neighbouring turns (``context_weight``), stemmed, stopwords removed;
- cosine similarity of a dense query vector with each memory's vector (``bm25_weight`` is BM25's
  share of the fused similarity, BM25 normalised by the best match);
- ``speaker_boost`` for memories by the conversation speaker a query names; when it names two
  (``two_speakers``), ``speaker_boost`` for the one it names first ("What did Jon say about Gina's
  store?") and ``second_speaker_boost`` for the other;
- ``date_weight`` for memories whose session date or resolved event date the query names
  ("in May 2023", "on 7 May 2023", "2022");
- dense relevance feedback (``feedback_docs``, ``feedback_weight``): the memories' own ingestion
  embeddings, no query embedding. The ``feedback_docs`` best memories by the terms above give a
  centroid (each weighted by how far its score lies above the last of them); every memory gains
  ``feedback_weight`` times the z-score (over the project) of its cosine with that centroid, so
  memories like the best hits rise even when they share no word with the question (``relevance``
  ranking only).

``seed`` ranks with the seed design's ``w1·similarity + w2·importance·decay + w3·recency``
(:mod:`memworker.ranking`) over the same similarity.

Spans: taking hits best first, a hit within ``span_gap`` turns of a span already chosen in the
same session joins it (with the memories between; with the default gap 1 only adjacent hits
merge), while the span stays within ``span_max_turns`` turns; the first ``reply_spans`` spans (the
best hits) also take in the ``reply_turns`` turns after their hit (the reply), when that still fits
the budget; each span costs its text's tokens (characters / 4, rounded up). Packing stops adding
once the budget is spent; a span that does not fit is skipped and smaller ones after it may still
fit.
"""

from __future__ import annotations

import json
import math
import re
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np

from memworker.extract import STOPWORDS

_WORD = re.compile(r"[a-z0-9]+")
_TURN_ID = re.compile(r"^D(\d+):(\d+)$")
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")
_MONTH_YEAR = re.compile(r"\b(" + "|".join(MONTHS) + r")(?:,?\s+(\d{4}))?\b|\b((?:19|20)\d{2})\b", re.I)


def approx_tokens(text: str) -> int:
    """Provider-independent token estimate: characters / 4, rounded up (the kit's figure too)."""
    return approx_tokens_of(len(text))


def approx_tokens_of(chars: int) -> int:
    return (chars + 3) // 4


_porter = None


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    global _porter
    if _porter is None:
        from nltk.stem import PorterStemmer

        _porter = PorterStemmer()
    return _porter.stem(word)


def terms(text: str, drop: frozenset[str] = frozenset()) -> list[str]:
    """Stemmed content words of ``text`` (lower-cased, stopwords and ``drop`` words left out)."""
    return [_stem(w) for w in _WORD.findall(text.lower()) if w not in STOPWORDS and w not in drop]


@dataclass(frozen=True)
class RetrievalParams:
    ranking: str = "relevance"  # relevance | seed
    k1: float = 1.0
    b: float = 0.75
    context_weight: float = 0.7
    bm25_weight: float = 1.0
    speaker_boost: float = 0.35
    date_weight: float = 0.3
    feedback_docs: int = 5  # dense relevance feedback from the best memories' ingestion embeddings (0: off)
    feedback_weight: float = 0.07
    span_gap: int = 1
    span_max_turns: int = 5
    window_weight: float = 0.4  # BM25 weight of the turns two to ``window`` positions away
    window: int = 3
    session_weight: float = 0.6  # BM25 of the whole session (added to each of its memories)
    prf_docs: int = 0  # pseudo-relevance feedback: expand the query with terms of the best ``prf_docs``
    prf_terms: int = 10
    prf_weight: float = 0.3
    expand_terms: int = 5  # static vectors: each query word adds up to this many of the project's words
    expand_min_sim: float = 0.4  # … whose (centred) static-vector cosine with it is at least this
    expand_weight: float = 0.6  # … weighted by this times that cosine
    dense_idf: bool = False  # static vectors: weight word pieces by their IDF in the project
    dense_center: bool = False  # static vectors: subtract the project's mean vector
    drop_names: bool = True  # speaker names are matched by speaker_boost, not as words
    strip_prefix: bool = False  # True: index a memory's own words without "Speaker on <date>:"
    two_speakers: str = "first"  # a query naming two speakers: first (speaker_boost for the one named first,
    # second_speaker_boost for the other) | one (neither boosted) | interleave (one search per named speaker,
    # their results taken in turn)
    second_speaker_boost: float = 0.2
    reply_turns: int = 1  # with a budget: the turns after a hit that join its span (the reply) ...
    reply_spans: int = 0  # ... for the first this many spans (the best hits); 0: none (the default: see docs)


@dataclass
class Doc:
    id: int
    session: int | None
    position: int | None
    speaker: str | None
    day: str | None  # the session's date as the memory's text writes it, e.g. "8 May 2023"
    narrative: str
    turns: list[str]
    months: frozenset[str]  # "may 2023", "2023", … named by the session or event date
    tokens: int


@dataclass
class Span:
    docs: list[int]  # indexes into the index's docs, in turn order
    best: int  # index of the best hit
    score: float
    text: str = ""
    tokens: int = 0


class _Field:
    """BM25 postings of one text field with fixed ``k1``/``b``: term → (doc indexes, saturated tf·idf)."""

    def __init__(self, docs_terms: list[list[str]], k1: float, b: float) -> None:
        n = len(docs_terms)
        lengths = np.array([len(t) for t in docs_terms], dtype=np.float64)
        avg = float(lengths.mean()) if n and lengths.mean() > 0 else 1.0
        postings: dict[str, dict[int, int]] = {}
        for i, ts in enumerate(docs_terms):
            for t in ts:
                postings.setdefault(t, {}).setdefault(i, 0)
                postings[t][i] += 1
        self.post: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for t, by_doc in postings.items():
            idx = np.fromiter(by_doc.keys(), dtype=np.int64, count=len(by_doc))
            tf = np.fromiter(by_doc.values(), dtype=np.float64, count=len(by_doc))
            idf = math.log(1 + (n - len(by_doc) + 0.5) / (len(by_doc) + 0.5))
            norm = k1 * (1 - b + b * lengths[idx] / avg)
            self.post[t] = (idx, idf * tf * (k1 + 1) / (tf + norm))

    def score(self, query_terms: set[str], out: np.ndarray, weight: float) -> None:
        for t in query_terms:
            hit = self.post.get(t)
            if hit is not None:
                out[hit[0]] += weight * hit[1]


def _normalise(mat: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (mat / norms).astype(np.float32)


def _months(*dates: str | None) -> frozenset[str]:
    out = set()
    for d in dates:
        if d and len(d) >= 7 and d[:4].isdigit():
            month = MONTHS[int(d[5:7]) - 1]
            out |= {f"{month} {d[:4]}", month, d[:4]}
    return frozenset(out)


def query_months(query: str) -> set[str]:
    """Month/year mentions of a query: {"may 2023"} for "in May 2023", {"2022"} for "in 2022"."""
    out = set()
    for m in _MONTH_YEAR.finditer(query):
        if m.group(1):
            out.add(f"{m.group(1).lower()} {m.group(2)}" if m.group(2) else m.group(1).lower())
        else:
            out.add(m.group(3))
    return out


def _content(narrative: str, facts_json: str | None) -> str:
    """A memory's text as a reader sees it: the narrative, then merged facts it does not contain."""
    try:
        facts = json.loads(facts_json or "[]")
    except json.JSONDecodeError:
        facts = []
    extra = [f for f in facts if isinstance(f, str) and f and f not in narrative]
    return " ".join([narrative, *extra]) if extra else narrative


def _strip_prefix(narrative: str, speaker: str | None, day: str | None) -> str:
    """The turn's own words: ``Caroline on 8 May 2023: I went …`` → ``I went …``."""
    for prefix in (f"{speaker} on {day}: ", f"{speaker} said on {day}: ", f"{speaker}: "):
        if speaker and narrative.startswith(prefix):
            return narrative[len(prefix):]
    return narrative


class ProjectIndex:
    """Everything a search of one project needs, in memory; rebuilt when the project changes."""

    def __init__(self, rows: list[dict], params: RetrievalParams, static=None, stored: np.ndarray | None = None) -> None:
        """``static``: a :class:`memworker.static_embed.StaticMiniLM` for memory and query vectors;
        without it ``stored`` (the memories' ingestion embeddings, one row per memory) meets a query
        vector given to :meth:`similarity`. ``stored`` also feeds dense relevance feedback."""
        self.params = params
        self.ids = np.array([r["id"] for r in rows], dtype=np.int64)
        self.pos_of = {int(i): k for k, i in enumerate(self.ids)}
        self.docs: list[Doc] = []
        self.importance = np.array([float(r.get("importance") or 0.5) for r in rows])
        self.rows = rows
        for r in rows:
            meta = json.loads(r.get("metadata") or "{}")
            turns = [str(t) for t in meta.get("source_turns") or []]
            m = _TURN_ID.match(turns[0]) if turns else None
            day = None
            if meta.get("session_date"):
                from datetime import date

                from memworker.timeparse import fmt_day

                try:
                    day = fmt_day(date.fromisoformat(meta["session_date"]))
                except ValueError:
                    day = None
            narrative = _content(r.get("narrative") or "", r.get("facts"))
            self.docs.append(Doc(id=int(r["id"]), session=int(m.group(1)) if m else None,
                                 position=int(m.group(2)) if m else None, speaker=meta.get("speaker"),
                                 day=day, narrative=narrative, turns=turns,
                                 months=_months(meta.get("session_date"), meta.get("event_date")),
                                 tokens=approx_tokens(narrative)))
        self.lines = [f"{d.speaker}: {_strip_prefix(d.narrative, d.speaker, d.day)}" if d.speaker else d.narrative
                      for d in self.docs]
        self.line_chars = [len(line) for line in self.lines]
        self.min_tokens = min((d.tokens for d in self.docs), default=1)
        self.speakers = {d.speaker for d in self.docs if d.speaker}
        self.drop = frozenset(s.lower() for s in self.speakers) if params.drop_names else frozenset()
        bodies = [r.get("body") or r.get("narrative") or "" for r in rows]
        if params.strip_prefix:
            bodies = [_strip_prefix(b, d.speaker, d.day) for b, d in zip(bodies, self.docs)]
        self.body_terms = [terms(b, self.drop) for b in bodies]
        self.body = _Field(self.body_terms, params.k1, params.b)
        self.context = _Field([terms(r.get("context") or "", self.drop) for r in rows], params.k1, params.b)
        self.by_speaker = {s: np.array([d.speaker == s for d in self.docs]) for s in self.speakers}
        self.by_session: dict[int, dict[int, int]] = {}
        for k, d in enumerate(self.docs):
            if d.session is not None and d.position is not None:
                self.by_session.setdefault(d.session, {}).setdefault(d.position, k)
        self.window_field = self.session_field = None
        if params.window_weight:
            wide = []
            for d in self.docs:
                got: list[str] = []
                if d.session is not None:
                    session = self.by_session[d.session]
                    for n in range(d.position - params.window, d.position + params.window + 1):
                        if abs(n - d.position) >= 2 and n in session:
                            got += self.body_terms[session[n]]
                wide.append(got)
            self.window_field = _Field(wide, params.k1, params.b)
        if params.session_weight:
            sessions = sorted(self.by_session)
            self.session_pos = np.array([sessions.index(d.session) if d.session is not None else -1 for d in self.docs])
            self.session_field = _Field([[t for k in self.by_session[s].values() for t in self.body_terms[k]]
                                         for s in sessions], params.k1, params.b)
        self.static = static
        self.vectors = stored
        usable = stored is not None and stored.ndim == 2 and len(stored) == len(rows) > 0
        self.memory_vectors = _normalise(stored) if usable and params.feedback_docs > 0 else None
        self.dense = static is not None and bool(rows) and params.bm25_weight < 1
        if self.dense:
            self._static_vectors()
        self.expansion = static is not None and bool(rows) and params.expand_terms > 0
        if self.expansion:
            self._word_vectors(bodies)

    def _word_vectors(self, bodies: list[str]) -> None:
        """Static vectors of the project's words (one per stem), centred: the query expansion's vocabulary."""
        words: dict[str, str] = {}
        for body in bodies:
            for w in _WORD.findall(body.lower()):
                if len(w) >= 3 and not w.isdigit() and w not in STOPWORDS and w not in self.drop:
                    words.setdefault(_stem(w), w)
        self.vocab_stems = list(words)
        self._neighbour_cache: dict[str, tuple[tuple[str, float], ...]] = {}
        mat = np.vstack([self.static.embed_ids(self.static.piece_ids(w)) for w in words.values()]) if words \
            else np.zeros((0, self.static.dim), dtype=np.float32)
        self.word_center = mat.mean(axis=0) if len(mat) else np.zeros(self.static.dim, dtype=np.float32)
        self.word_vectors = _normalise(mat - self.word_center)

    def expand(self, query_words: list[str], known: set[str]) -> dict[str, float]:
        """The project's words nearest each query word: stem → cosine (expansion terms, not in ``known``)."""
        out: dict[str, float] = {}
        for w in query_words:
            if len(w) >= 3 and not w.isdigit():
                for stem, sim in self._neighbours(w):
                    if stem not in known:
                        out[stem] = max(out.get(stem, 0.0), sim)
        return out

    def _neighbours(self, word: str) -> tuple[tuple[str, float], ...]:
        """The project's words within ``expand_min_sim`` of ``word``, best ``expand_terms`` (cached per word)."""
        hit = self._neighbour_cache.get(word)
        if hit is None:
            hit = ()
            if len(self.vocab_stems):
                p = self.params
                sims = self.word_vectors @ _normalise((self.static.embed_ids(self.static.piece_ids(word))
                                                       - self.word_center)[None, :])[0]
                m = min(p.expand_terms, len(sims))
                hit = tuple((self.vocab_stems[k], float(sims[k])) for k in np.argpartition(-sims, m - 1)[:m]
                            if sims[k] >= p.expand_min_sim)
            if len(self._neighbour_cache) < 50_000:
                self._neighbour_cache[word] = hit
        return hit

    def _static_vectors(self) -> None:
        p, st = self.params, self.static
        pieces = [st.piece_ids(f"{d.speaker}: {_strip_prefix(d.narrative, d.speaker, d.day)}" if d.speaker
                               else d.narrative) for d in self.docs]
        df = np.zeros(st.vocab_size)
        for ids in pieces:
            df[np.unique(ids)] += 1
        n = len(pieces)
        self.piece_idf = np.log((n + 1) / (df + 1)) + 1.0 if p.dense_idf else None
        mat = np.vstack([st.embed_ids(ids, self.piece_idf[ids] if p.dense_idf else None) for ids in pieces])
        self.center = mat.mean(axis=0) if p.dense_center else np.zeros(st.dim, dtype=np.float32)
        self.vectors = _normalise(mat - self.center)

    def query_vector(self, query: str) -> np.ndarray | None:
        """The query's static vector in this project's space (None without static vectors)."""
        if not self.dense:
            return None
        ids = self.static.piece_ids(query)
        vec = self.static.embed_ids(ids, self.piece_idf[ids] if self.piece_idf is not None else None) - self.center
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm > 0 else vec

    # -- scoring ------------------------------------------------------------------------------
    def bm25(self, query: str) -> np.ndarray:
        p = self.params
        words = [w for w in _WORD.findall(query.lower()) if w not in STOPWORDS and w not in self.drop]
        qt = {_stem(w) for w in words}
        out = self._bm25_terms(qt, 1.0)
        if self.expansion:
            for stem, sim in self.expand(words, qt).items():
                out = out + self._bm25_terms({stem}, p.expand_weight * sim)
        if p.prf_docs and out.max() > 0:
            top = np.argsort(-out)[: p.prf_docs]
            counts: dict[str, float] = {}
            for k in top:
                for t in set(self.body_terms[k]):
                    if t not in qt:
                        counts[t] = counts.get(t, 0.0) + float(out[k])
            expansion = sorted(counts, key=lambda t: -counts[t])[: p.prf_terms]
            if expansion:
                out = out + self._bm25_terms(set(expansion), p.prf_weight)
        return out

    def _bm25_terms(self, qt: set[str], weight: float) -> np.ndarray:
        p = self.params
        out = np.zeros(len(self.docs))
        self.body.score(qt, out, weight)
        if p.context_weight:
            self.context.score(qt, out, weight * p.context_weight)
        if self.window_field is not None:
            self.window_field.score(qt, out, weight * p.window_weight)
        if self.session_field is not None and len(self.by_session):  # none: every doc has session_pos -1
            per_session = np.zeros(len(self.by_session))
            self.session_field.score(qt, per_session, weight * p.session_weight)
            out = out + np.where(self.session_pos >= 0, per_session[self.session_pos], 0.0)
        return out

    def similarity(self, query: str, qvec: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(fused similarity with boosts, bm25, cosine) for every document."""
        p = self.params
        if qvec is None and p.bm25_weight < 1:
            qvec = self.query_vector(query)
        bm = self.bm25(query)
        best = float(bm.max()) if bm.size else 0.0
        cos = np.zeros(len(self.docs))
        if qvec is not None and self.vectors is not None and self.vectors.size and self.vectors.shape[1] == qvec.shape[0]:
            cos = np.clip(self.vectors @ qvec, 0.0, None)
        sim = p.bm25_weight * (bm / best if best > 0 else bm) + (1 - p.bm25_weight) * cos
        if p.date_weight:
            wanted = query_months(query)
            if wanted:
                sim = sim + p.date_weight * np.array([bool(wanted & d.months) for d in self.docs])
        named = self.named_speakers(query) if p.speaker_boost else []
        if len(named) == 1:
            sim = sim + p.speaker_boost * self.by_speaker[named[0]]
        elif named and p.two_speakers == "first":
            sim = sim + p.speaker_boost * self.by_speaker[named[0]] + p.second_speaker_boost * self.by_speaker[named[1]]
        elif named and p.two_speakers == "interleave":
            return self.interleave([self._with_feedback(sim + p.speaker_boost * self.by_speaker[s]) for s in named]), bm, cos
        return self._with_feedback(sim), bm, cos

    def named_speakers(self, query: str) -> list[str]:
        """The project's speakers a query names, in the order it first names them."""
        words = _WORD.findall(query.lower())
        first = {w: i for i, w in reversed(list(enumerate(words)))}
        return sorted((s for s in self.speakers if s.lower() in first), key=lambda s: (first[s.lower()], s))

    def _with_feedback(self, sim: np.ndarray) -> np.ndarray:
        """``sim`` plus the dense relevance feedback it leads to (``relevance`` ranking only)."""
        p = self.params
        if p.ranking == "relevance" and self.memory_vectors is not None and p.feedback_weight and float(sim.max()) > 0:
            return sim + p.feedback_weight * self.feedback(sim)
        return sim

    @staticmethod
    def interleave(sims: list[np.ndarray]) -> np.ndarray:
        """One ranking from one search per named speaker, taking each search's next best in turn:
        scores that fall from the best search's top score by 1e-6 a place."""
        n = len(sims[0])
        place = np.full(n, np.inf)
        for j, sim in enumerate(sims):
            r = np.empty(n)
            r[np.argsort(-sim, kind="stable")] = np.arange(n) * len(sims) + j
            place = np.minimum(place, r)
        return max(float(s.max()) for s in sims) - place * 1e-6

    def feedback(self, sim: np.ndarray) -> np.ndarray:
        """Z-scores of each memory's cosine with the centroid of the best ``feedback_docs`` memories."""
        vectors = self.memory_vectors
        m = min(self.params.feedback_docs, len(sim))
        top = np.argpartition(-sim, m - 1)[:m]
        weights = (sim[top] - sim[top].min() + 1e-3).astype(np.float32)  # float32 throughout: no upcast copy
        centroid = weights @ vectors[top]
        cos = vectors @ (centroid / (float(np.linalg.norm(centroid)) or 1.0))
        spread = float(cos.std())
        return (cos - cos.mean()) / spread if spread > 0 else np.zeros_like(cos)

    # -- spans --------------------------------------------------------------------------------
    def pack(self, order: list[int], scores: np.ndarray, budget: int, limit: int) -> list[Span]:
        """Merge hits (indexes, best first) into spans and pack them into ``budget`` tokens."""
        p = self.params
        spans: list[Span] = []
        by_session: dict[int, list[Span]] = {}
        member: set[int] = set()
        used = 0
        for k in order:
            if budget - used < self.min_tokens:
                break
            if k in member:
                continue
            d = self.docs[k]
            target = None
            if d.session is not None and p.span_gap > 0:
                for s in by_session.get(d.session, ()):
                    first, last = self.docs[s.docs[0]].position, self.docs[s.docs[-1]].position
                    if (first - p.span_gap <= d.position <= last + p.span_gap
                            and max(last, d.position) - min(first, d.position) + 1 <= p.span_max_turns):
                        target = s
                        break
            reply = p.reply_turns if len(spans) < p.reply_spans else 0
            if target is not None:
                first, last = self.docs[target.docs[0]].position, self.docs[target.docs[-1]].position
                lo, hi = min(first, d.position), max(last, d.position)
                taken = member - set(target.docs) if reply else member
                for members in self._extents(d.session, lo, hi, d.position, taken, reply):
                    cost = approx_tokens_of(self._span_chars(members)) - target.tokens
                    if used + cost <= budget:
                        member.update(members)
                        target.docs, target.tokens = members, target.tokens + cost
                        used += cost
                        break
                continue
            if len(spans) >= limit:
                continue
            if d.session is None:
                options = [[k]]
            else:
                options = self._extents(d.session, d.position, d.position, d.position, member, reply)
            for members in options:
                tokens = d.tokens if len(members) == 1 else approx_tokens_of(self._span_chars(members))
                if used + tokens <= budget:
                    span = Span(docs=members, best=k, score=float(scores[k]), tokens=tokens)
                    spans.append(span)
                    if d.session is not None:
                        by_session.setdefault(d.session, []).append(span)
                    member.update(members)
                    used += tokens
                    break
        for span in spans:
            span.text = self.render(span.docs)
        return spans

    def _extents(self, session_no: int, lo: int, hi: int, hit: int, taken: set[int], reply: int) -> list[list[int]]:
        """A span's members (in turn order) for the turns ``lo``-``hi`` of a session: first with up to
        ``reply`` turns after the hit (not a turn ``taken`` by another span, nor beyond ``span_max_turns``),
        then without them."""
        session = self.by_session[session_no]
        plain = [session[n] for n in range(lo, hi + 1) if n in session]
        wide = hi
        for n in range(hit + 1, hit + reply + 1):
            if n > wide:
                if n not in session or session[n] in taken or n - lo + 1 > self.params.span_max_turns:
                    break
                wide = n
        return [plain] if wide == hi else [plain + [session[n] for n in range(hi + 1, wide + 1)], plain]

    def select(self, order: list[int], scores: np.ndarray, limit: int, offset: int = 0,
               context_budget: int | None = None) -> list[Span]:
        """A search's results from its ranking (indexes, best first), from ``offset`` on: with
        ``context_budget``, spans packed into it (:meth:`pack`); without, one memory each."""
        if context_budget:
            return self.pack(order, scores, context_budget, offset + limit)[offset:]
        return [Span(docs=[k], best=k, score=float(scores[k]), text=self.docs[k].narrative, tokens=self.docs[k].tokens)
                for k in order[offset: offset + limit]]

    def results(self, spans: list[Span], stored: dict[int, dict], scores: np.ndarray, sim: np.ndarray,
                bm: np.ndarray, cos: np.ndarray, budgeted: bool) -> list[tuple[dict, Hit]]:
        """The rows a search answers, with their scores: each span's stored row (``stored``: id -> row, of
        its best memory; a span whose memory was deleted since the index was built is left out), its
        metadata carrying the span's source turns, token count and (several memories) member ids. With
        a budget the row's narrative is the span's whole text, the text counted against it."""
        out: list[tuple[dict, Hit]] = []
        for span in spans:
            best = span.best
            row = dict(stored.get(int(self.ids[best])) or {})
            if not row:
                continue
            meta = json.loads(row.get("metadata") or "{}")
            turns = [t for m in span.docs for t in self.docs[m].turns]
            meta.update(source_turns=turns, tokens=span.tokens)
            if len(span.docs) > 1:
                meta["span"] = {"ids": [int(self.ids[m]) for m in span.docs], "session": self.docs[best].session}
            if budgeted:
                row.update(narrative=span.text, facts="[]")
            row["metadata"] = json.dumps(meta)
            out.append((row, Hit(score=float(scores[best]), similarity=float(sim[best]), bm25=float(bm[best]),
                                 cosine=float(cos[best]))))
        return out

    def _span_chars(self, members: list[int]) -> int:
        """Characters of :meth:`render`'s text, without rendering it."""
        if len(members) == 1:
            return len(self.docs[members[0]].narrative)
        head = self.docs[members[0]]
        header = len(f"On {head.day}:") + 1 if head.day else 0
        return header + sum(self.line_chars[m] for m in members) + len(members) - 1

    def render(self, members: list[int]) -> str:
        """One span's text: the date once, then each turn as ``Speaker: words``."""
        if len(members) == 1:
            return self.docs[members[0]].narrative
        head = self.docs[members[0]]
        lines = ([f"On {head.day}:"] if head.day else []) + [self.lines[m] for m in members]
        return "\n".join(lines)


class IndexCache:
    """Per-project indexes, rebuilt when the store's version of the project changes."""

    def __init__(self) -> None:
        self._indexes: dict[str, tuple[int, RetrievalParams, ProjectIndex]] = {}
        self._lock = threading.Lock()

    def stale(self, store) -> list[str]:
        """Projects written since their index was built (or never indexed)."""
        with store.lock:
            versions = dict(store.versions)
        with self._lock:
            return [p for p, v in versions.items() if p not in self._indexes or self._indexes[p][0] != v]

    def get(self, project: str, store, params: RetrievalParams,
            build: Callable[[list[dict]], ProjectIndex]) -> ProjectIndex:
        """``store`` has ``versions`` and ``index_rows(project) -> (version, rows)``."""
        with self._lock:
            hit = self._indexes.get(project)
            if hit and hit[0] == store.versions.get(project, 0) and hit[1] == params:
                return hit[2]
            version, rows = store.index_rows(project)
            index = build(rows)
            self._indexes[project] = (version, params, index)
            return index


@dataclass
class Hit:
    """A result's scores (of its best memory, for a span)."""

    score: float
    similarity: float
    bm25: float
    cosine: float
