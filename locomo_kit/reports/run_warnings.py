"""Banners for the top of a report whose numbers stand on incomplete ingestion or empty retrieval.

A run that failed never looks like a result: sessions that failed or stored nothing, questions
whose search returned nothing, a Worker without semantic search, an index not yet consistent, and
the kit's own keyword fusion standing in for the Worker's retrieval are each said at the top.
"""

from __future__ import annotations

from locomo_kit.dataset import Conversation
from locomo_kit.qa.retrieval import LABELS
from locomo_kit.reports.numbers import num
from locomo_kit.runs import RunFolder, ingestion_folder
from locomo_kit.runs.records import INGEST_FILE, done_sessions, load_answers


def ingestion_gaps(run: RunFolder, conversations: list[Conversation], mode: str) -> dict:
    """Sessions of the run's conversations not ingested ``ok`` (failed, empty or never attempted)."""
    total = sum(len(c.sessions) for c in conversations)
    ok = sum(len(done_sessions(run, c.sample_id, mode)) for c in conversations)
    failed = {(r["sample_id"], r["session"]) for r in run.records(INGEST_FILE)
              if r.get("kind") == "session" and r.get("status") == "failed"}
    return {"sessions": total, "ingested": ok, "missing": total - ok, "ever_failed": len(failed)}


def run_warnings(run: RunFolder, conversations: list[Conversation]) -> list[str]:
    """Markdown blockquote lines (empty when there is nothing to warn about)."""
    m = run.manifest()
    out: list[str] = []
    mode = str(m.get("parameters", {}).get("mode", "transcript"))
    answers = load_answers(run)
    memory = [a for a in answers if a.get("source") == "memory"]
    ingestion = ingestion_folder(m["ingestion"]["id"]) if m.get("ingestion", {}).get("id") else run
    held = ingestion.manifest().get("held_check") or {}
    if held.get("problem"):
        out.append(f"> **{held['problem']}.** It acknowledged writes it does not hold: every number below "
                   "understates what a system that keeps its writes would score, and says nothing about this one's "
                   "retrieval. This run is not a result.")
    own = ingestion.manifest().get("read_your_writes") or {}
    if own.get("warning"):
        out.append(f"> **{own['warning']}.** Questions about what it does not return cannot be answered from it.")
    elif own.get("sampled"):
        out.append(f"> Read-your-writes: {own['found']} of {own['sampled']} sampled writes were found by their own "
                   f"words after ingestion (top {own.get('top_k', 10)}).")
    if memory or m.get("ingest"):
        gaps = ingestion_gaps(ingestion, conversations, mode)
        if gaps["missing"]:
            out.append(f"> **INCOMPLETE INGESTION: {gaps['missing']} of {gaps['sessions']} sessions are not in the "
                       f"Worker** (failed, stored zero observations, or never attempted; see ingest.jsonl). Questions "
                       "about them cannot be answered from memory: these scores understate the memory system.")
    if memory:
        empty = sum(1 for a in memory if not a.get("retrieved"))
        if empty:
            out.append(f"> **EMPTY RETRIEVALS: {empty} of {len(memory)} questions retrieved no memory at all.**"
                       + (" Nothing was retrieved for any question: these scores say nothing about the memory."
                          if empty == len(memory) else ""))
        strategy = memory[-1].get("query_strategy") or "question"
        if strategy != "question":
            out.append(f"> **Retrieval: {m.get('answer', {}).get('retrieval') or LABELS[strategy]}.**")
    worker = m.get("worker", {})
    semantic = str(worker.get("semantic_search") or "")
    if semantic.startswith("unavailable"):
        out.append(f"> **DEGRADED WORKER: semantic search {semantic}.**")
    cons = m.get("consistency") or ingestion.manifest().get("consistency")
    if isinstance(cons, dict) and cons.get("probes") and not cons.get("consistent"):
        out.append(f"> **INDEX NOT CONSISTENT: only {cons['found']} of {cons['probes']} sampled memories were "
                   f"findable by their own words after {num(cons['seconds'], 0)} s**; retrieval was measured on a "
                   "half-built index.")
    return [line for pair in zip(out, [""] * len(out)) for line in pair]
