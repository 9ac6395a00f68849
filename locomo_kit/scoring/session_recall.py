"""Session-level retrieval recall, in the units MemPalace, engram and memory-core-eval publish.

Turn-level evidence recall (``diagnostics.evidence_coverage``) asks whether the exact evidence turns
were retrieved. Session-level recall asks a coarser question: walk the retrieved results best first,
map each to the session(s) it came from, keep the first ``k`` *distinct* sessions, and then

- **session recall@k**: the share of the question's evidence sessions among those k sessions
  (MemPalace's "R@10", memory-core-eval's session recall);
- **session hit@k**: 1 when any evidence session is among them, else 0 (engram's "any evidence
  session within the first 5").

Each comes with its **chance level** for the conversation's session count N: the expected value when
the k sessions are instead drawn uniformly at random without replacement from the N sessions
(k capped at N). With e evidence sessions,

- chance recall@k = min(k, N) / N (each evidence session is drawn with that probability);
- chance hit@k = 1 - C(N - e, k) / C(N, k) (one minus the chance that all k draws miss every
  evidence session).

Both are computed per question and averaged over the same questions as the measured value, so a
measured figure and its chance level always describe the same question set.

A result's sessions come from its exact source turn ids (``D<session>:<turn>``) when the system
reports them, else from its ``session`` field, else (method ``text``) from the turns whose words it
holds (80% of a turn's normalised, stemmed words, as turn-level coverage decides).
"""

from __future__ import annotations

import re
from math import comb
from typing import Iterable, Mapping

from locomo_kit.scoring.locomo_f1 import stemmed_tokens

SESSION_KS = (1, 3, 5, 10)
_TRAILING_NUMBER = re.compile(r"(\d+)$")
MIN_SHARE = 0.8  # as diagnostics.evidence_coverage's text method
_WORDS: dict[int, tuple[Mapping[str, str], list[tuple[int, set[str]]]]] = {}


def turn_session(dia_id: str) -> int | None:
    """The session number of a LoCoMo turn id ``D<session>:<turn>`` (None when it is not one)."""
    m = re.fullmatch(r"D(\d+):\d+", str(dia_id))
    return int(m.group(1)) if m else None


def _session_field(value) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    m = _TRAILING_NUMBER.search(str(value).strip())  # "3", "s3", "locomo-conv-26-s3"
    return int(m.group(1)) if m else None


def result_sessions(memory: Mapping, turn_text: Mapping[str, str]) -> tuple[list[int], str]:
    """The sessions one retrieved result came from (ascending) and how that was decided."""
    from_ids = sorted({s for t in (memory.get("source_turns") or []) if (s := turn_session(t)) is not None})
    if from_ids:
        return from_ids, "turn-ids"
    field = _session_field(memory.get("session"))
    if field is not None:
        return [field], "session-field"
    have = set(stemmed_tokens(str(memory.get("content", ""))))
    found = sorted({s for s, need in _turn_words(turn_text) if len(need & have) >= MIN_SHARE * len(need)})
    return found, "text"


def _turn_words(turn_text: Mapping[str, str]) -> list[tuple[int, set[str]]]:
    """(session, stemmed word set) of every turn, computed once per turn-text mapping."""
    hit = _WORDS.get(id(turn_text))
    if hit is not None and hit[0] is turn_text:
        return hit[1]
    words = [(s, need) for t, text in turn_text.items()
             if (s := turn_session(t)) is not None and (need := set(stemmed_tokens(text)))]
    if len(_WORDS) > 32:
        _WORDS.clear()
    _WORDS[id(turn_text)] = (turn_text, words)
    return words


def ranked_sessions(retrieved: list[Mapping], turn_text: Mapping[str, str]) -> tuple[list[int], str]:
    """Distinct sessions in the order the results first bring them, and the method (the coarsest used)."""
    order: list[int] = []
    methods = set()
    for memory in retrieved:
        sessions, method = result_sessions(memory, turn_text)
        methods.add(method)
        for s in sessions:
            if s not in order:
                order.append(s)
    method = next((m for m in ("text", "session-field", "turn-ids") if m in methods), "no-results")
    return order, method


def chance_recall(k: int, n_sessions: int) -> float:
    """Expected share of evidence sessions among k of ``n_sessions`` sessions drawn at random."""
    return min(k, n_sessions) / n_sessions


def chance_hit(k: int, n_sessions: int, n_evidence: int) -> float:
    """Probability that k of ``n_sessions`` sessions drawn at random hold at least one of ``n_evidence``."""
    k = min(k, n_sessions)
    return 1.0 - comb(n_sessions - n_evidence, k) / comb(n_sessions, k)


def session_recall(evidence: Iterable[str], retrieved: list[Mapping], turn_text: Mapping[str, str],
                   n_sessions: int, ks: Iterable[int] = SESSION_KS) -> dict | None:
    """Session recall@k, hit@k and their chance levels for one question; None without evidence.

    Returns ``{"recall": {"@k": share}, "hit": {"@k": 0/1}, "chance_recall": {...}, "chance_hit": {...},
    "evidence_sessions": e, "sessions_retrieved": distinct sessions retrieved, "sessions_total": N,
    "method": ...}``.
    """
    wanted = sorted({s for e in evidence if (s := turn_session(e)) is not None})
    if not wanted or n_sessions < 1:
        return None
    n_sessions = max(n_sessions, max(wanted))
    order, method = ranked_sessions(retrieved, turn_text)
    out: dict = {"recall": {}, "hit": {}, "chance_recall": {}, "chance_hit": {}, "evidence_sessions": len(wanted),
                 "sessions_retrieved": len(order), "sessions_total": n_sessions, "method": method}
    for k in ks:
        top = set(order[:k])
        found = sum(s in top for s in wanted)
        out["recall"][f"@{k}"] = found / len(wanted)
        out["hit"][f"@{k}"] = 1.0 if found else 0.0
        out["chance_recall"][f"@{k}"] = chance_recall(k, n_sessions)
        out["chance_hit"][f"@{k}"] = chance_hit(k, n_sessions, len(wanted))
    return out


def session_sets(scores: list[Mapping]) -> dict[str, dict[str, float | None]]:
    """Mean session recall/hit and their chance levels (as shares, 0-1) over the scores that have them,
    keyed ``recall``/``hit``/``chance_recall``/``chance_hit`` then ``@k``; plus ``n`` and the mean number of
    distinct sessions retrieved."""
    rows = [s["session_recall"] for s in scores if s.get("session_recall")]
    out: dict = {"n": len(rows),
                 "sessions_retrieved": sum(r["sessions_retrieved"] for r in rows) / len(rows) if rows else None}
    for part in ("recall", "hit", "chance_recall", "chance_hit"):
        out[part] = {}
        for k in SESSION_KS:
            vals = [r[part][f"@{k}"] for r in rows if r[part].get(f"@{k}") is not None]
            out[part][f"@{k}"] = sum(vals) / len(vals) if vals else None
    return out


def session_columns(value: Mapping | None) -> dict[str, float | int | str | None]:
    """One question's session-level figures as flat export columns (None where it has none)."""
    row: dict[str, float | int | str | None] = {}
    for part, name in (("recall", "session_recall"), ("hit", "session_hit"), ("chance_recall", "session_recall_chance"),
                       ("chance_hit", "session_hit_chance")):
        for k in SESSION_KS:
            row[f"{name}@{k}"] = (value or {}).get(part, {}).get(f"@{k}")
    for key in ("evidence_sessions", "sessions_retrieved", "sessions_total"):
        row[key] = (value or {}).get(key)
    row["session_method"] = (value or {}).get("method")
    return row
