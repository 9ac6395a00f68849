"""What a compressing Worker kept of the conversation, measured without an LLM.

claude-mem in transcript mode hands each session to an LLM that writes observations; whatever
the model drops can never be retrieved. **Compression fidelity** is the share of turns whose
content survives, under the text-overlap rule of the coverage diagnostics
(:func:`~locomo_kit.scoring.diagnostics.covered_by_text`: 80% of a turn's stemmed words in one
observation):

- per session: its turns found in the observations that session produced (recorded in
  ``ingest.jsonl`` as each session finishes);
- per sample: every turn, and the questions' evidence turns, found anywhere in the project's
  observations (recorded in the ingestion manifest's ``compression`` after ingesting).

A pass-through compressor (tests/claude_mem_compressor.py) keeps every turn by construction; a
model that writes about something else keeps almost none, and then the report says so at its
top: the memory never stored what the questions ask about, so retrieval and answer figures over
it describe the compressor. A paraphrasing compressor scores below 1 even when faithful: the
rule counts words, not meaning.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from locomo_kit.dataset import Conversation, Session, Turn, questions
from locomo_kit.runs import ingestion_folder
from locomo_kit.scoring.diagnostics import covered_by_text
from locomo_kit.scoring.locomo_f1 import stemmed_tokens

JUNK_SHARE = 0.10  # below this share of turns surviving, the compression is flagged as junk
MANIFEST_KEY = "compression"


def kept_turns(turns: Iterable[Turn], contents: Sequence[str]) -> list[str]:
    """Dia ids of the turns whose content survives in one of ``contents`` (observation texts)."""
    contexts = [stemmed_tokens(c) for c in contents if c]
    return [t.dia_id for t in turns if covered_by_text(t.text, contexts)]


def session_fidelity(session: Session, contents: Sequence[str]) -> dict:
    kept = kept_turns(session.turns, contents)
    n = len(session.turns)
    return {"turns": n, "turns_kept": len(kept), "fidelity": round(len(kept) / n, 4) if n else None,
            "lost_turns": [t.dia_id for t in session.turns if t.dia_id not in set(kept)]}


def sample_fidelity(conv: Conversation, contents: Sequence[str], sessions: dict[int, dict]) -> dict:
    """Turns and evidence turns of ``conv`` surviving anywhere in ``contents``; ``sessions``: the
    per-session records (session number → ``session_fidelity``)."""
    kept = set(kept_turns(conv.turns, contents))
    evidence = sorted({e for q in questions(conv) for e in q.evidence if e in {t.dia_id for t in conv.turns}})
    ev_kept = [e for e in evidence if e in kept]
    n = len(conv.turns)
    return {"observations": len(contents), "turns": n, "turns_kept": len(kept),
            "fidelity": round(len(kept) / n, 4) if n else None,
            "evidence_turns": len(evidence), "evidence_kept": len(ev_kept),
            "evidence_fidelity": round(len(ev_kept) / len(evidence), 4) if evidence else None,
            "lost_evidence": [e for e in evidence if e not in kept],
            "sessions": {str(k): {f: v[f] for f in ("turns", "turns_kept", "fidelity")} for k, v in sorted(sessions.items())}}


def measure(system, conversations: Iterable[Conversation], session_records: dict[str, dict[int, dict]]) -> dict:
    """The manifest record: per sample, :func:`sample_fidelity` over the memories ``system`` (a
    :class:`~locomo_kit.systems.base.MemorySystem` that ``compresses``) holds now."""

    out = {"rule": "a turn survives when 80% of its stemmed words appear in one observation (as coverage)",
           "samples": {}}
    for conv in conversations:
        contents = system.stored_texts(conv.sample_id)
        out["samples"][conv.sample_id] = sample_fidelity(conv, contents, session_records.get(conv.sample_id, {}))
    return out


def session_records(records: Iterable[dict], mode: str) -> dict[str, dict[int, dict]]:
    """The latest per-session fidelity in ``ingest.jsonl`` records, by sample and session number."""
    out: dict[str, dict[int, dict]] = {}
    for r in records:
        if r.get("kind") == "reset":
            out.pop(r.get("sample_id"), None)
        elif r.get("kind") == "session" and r.get("mode") == mode and r.get("fidelity") is not None:
            out.setdefault(r["sample_id"], {})[int(r["session"])] = r
    return out


def _pct(kept: int, n: int) -> str:
    return f"{kept}/{n} ({100 * kept / n:.0f}%)" if n else "0/0"


def summary_lines(record: dict | None) -> list[str]:
    """Console lines for the ingest summary: one per conversation, however many sessions it has (the
    per-session fidelity is in the report's section 5b), and a warning for a compressor that kept nothing."""
    if not record or not record.get("samples"):
        return []
    lines = []
    for sample, s in record["samples"].items():
        sessions = [(k, v) for k, v in s["sessions"].items() if v.get("turns")]
        lowest = min(sessions, key=lambda kv: kv[1]["turns_kept"] / kv[1]["turns"], default=None)
        weakest = (f"; lowest session s{lowest[0]} {_pct(lowest[1]['turns_kept'], lowest[1]['turns'])} of "
                   f"{len(sessions)} (each session in the report, section 5b)") if lowest else ""
        lines.append(f"compression fidelity {sample}: {_pct(s['turns_kept'], s['turns'])} of turns survive in "
                     f"{s['observations']} observations, {_pct(s['evidence_kept'], s['evidence_turns'])} of the "
                     f"questions' evidence turns" + weakest)
        if junk(s):
            lines.append(f"WARNING: {sample}: the compressor kept almost nothing of the conversation (below "
                         f"{100 * JUNK_SHARE:.0f}% of turns): the memory never stored what the questions ask about")
    return lines


def ingested_fidelity(sample: dict) -> float | None:
    """Turns surviving in their own session's observations, over the sessions ingested (else anywhere)."""
    sessions = [v for v in (sample.get("sessions") or {}).values() if v.get("turns")]
    if sessions:
        return sum(v["turns_kept"] for v in sessions) / sum(v["turns"] for v in sessions)
    return sample.get("fidelity")


def junk(sample: dict) -> bool:
    share = ingested_fidelity(sample)
    return share is not None and share < JUNK_SHARE


def compression_record(run) -> dict | None:
    """The compression record of the ingestion a run stands on (or of the folder itself)."""

    m = run.manifest()
    if m.get(MANIFEST_KEY):
        return m[MANIFEST_KEY]
    ingestion_id = m.get("ingestion", {}).get("id")
    return ingestion_folder(ingestion_id).manifest().get(MANIFEST_KEY) if ingestion_id else None


def compresses(run) -> bool:
    """The run's Worker writes its memories with a compressor (claude-mem's provider, memworker's llm
    extractor), as its health reports; memworker's rules extractor stores turns as they are."""
    worker = run.manifest().get("worker") or {}
    return worker.get("compressor_provider") not in (None, "", "rules")


def compression_banner(run) -> list[str]:
    """Lines for the top of the report: the fidelity of a compressing Worker, a warning for any Worker
    whose compression is junk."""
    record = compression_record(run)
    if not record or not record.get("samples"):
        return []
    shown = compresses(run)
    out = []
    for sample, s in record["samples"].items():
        text = (f"compression fidelity of {sample}: {_pct(s['turns_kept'], s['turns'])} of its turns and "
                f"{_pct(s['evidence_kept'], s['evidence_turns'])} of the questions' evidence turns survive in the "
                f"Worker's {s['observations']} stored observations (text overlap, as coverage; see section 5b)")
        if junk(s):
            out.append(f"> **JUNK COMPRESSION: the compressor kept almost nothing of {sample}.** The {text}. What the "
                       "memory never stored cannot be retrieved: the retrieval and answer figures below describe the "
                       "compressor, not the memory's search.")
        elif shown:
            out.append(f"> The {text}.")
    return out


def evidence_stored(run) -> dict[str, set[str]] | None:
    """Per sample, the evidence turns lost by the compressor (None when not measured)."""
    record = compression_record(run)
    if not record or not record.get("samples"):
        return None
    return {sample: set(s.get("lost_evidence", [])) for sample, s in record["samples"].items()}


def _share(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.0f}"


def section(run, analysis: dict) -> list[str]:
    """Section 5b of the report: fidelity per session, and where the wrong answers were lost
    (``analysis``: :func:`locomo_kit.reports.errors.analyse`)."""
    record = compression_record(run)
    if not record or not record.get("samples"):
        return []
    lines = ["## 5b. What the memory stored (compression fidelity, no LLM involved)", "",
             "Share of turns whose content survives in the observations the Worker's compressor wrote: a turn "
             "survives when 80% of its stemmed words appear in one observation (the coverage rule). A faithful "
             "paraphrase can score below 100%; a compressor that wrote about something else scores near 0.", "",
             "| sample | session | turns | survive | % |", "|---|---|---|---|---|"]
    for sample, s in record["samples"].items():
        for k, v in s["sessions"].items():
            lines.append(f"| {sample} | {k} | {v['turns']} | {v['turns_kept']} | {_share(v['fidelity'])} |")
        lines.append(f"| {sample} | all, anywhere | {s['turns']} | {s['turns_kept']} | {_share(s['fidelity'])} |")
        lines.append(f"| {sample} | evidence turns, anywhere | {s['evidence_turns']} | {s['evidence_kept']} | "
                     f"{_share(s['evidence_fidelity'])} |")
    lines.append("")
    split = wrong_answer_split(run, analysis.get("wrong", []))
    if split and split["wrong"]:
        lines += [f"Of {split['wrong']} wrong answers (categories 1-4, with evidence): **{split['never stored']}** the "
                  "memory never stored (every evidence turn lost by the compressor), **"
                  f"{split['not retrieved']}** stored but not retrieved, **{split['not used']}** retrieved but not used "
                  "by the answerer.", ""]
    return lines


def wrong_answer_split(run, wrong: list[dict]) -> dict | None:
    """Wrong answers (``sample_id``, ``evidence``, ``coverage``) split three ways: never stored,
    stored but not retrieved, retrieved but not used."""
    lost = evidence_stored(run)
    if lost is None:
        return None
    out = {"wrong": 0, "never stored": 0, "not retrieved": 0, "not used": 0}
    for w in wrong:
        evidence = w.get("evidence") or []
        if not evidence:
            continue
        out["wrong"] += 1
        if all(e in lost.get(w["sample_id"], set()) for e in evidence):
            out["never stored"] += 1
        elif not w.get("coverage"):
            out["not retrieved"] += 1
        else:
            out["not used"] += 1
    return out
