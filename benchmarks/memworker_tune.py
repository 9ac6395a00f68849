"""How memworker's retrieval defaults were chosen: each ranking term on and off, on conversations
0-4 (tuning) and 5-9 (held out), in-process (the same code the HTTP search runs, without HTTP).
Choose on the tuning split; the held-out split only reports.

Memories come from memworker's own ingestion (rule extractor, MiniLM embeddings) of every
LoCoMo session, stored once in a database under outputs/bench/ (reused on later runs, and built
again when another memworker version formed it). For each
configuration it prints evidence recall (categories 1-4) of the top 10 single memories and within
500 and 1,000 tokens of spans, on both splits (and within 1,000 tokens over all ten conversations),
and writes outputs/bench/memworker_tune.json.

    .venv/bin/python benchmarks/memworker_tune.py [--db PATH] [--dense] [--misses] [--only WORDS]

Query expansion uses static MiniLM vectors (distilled on first use, cached beside the database).
``--dense`` adds the configurations with a dense query vector (static per-piece MiniLM, and the
full MiniLM for reference; slower). ``--misses`` adds, for the default, where recall is lost:
recall as the budget grows (1,000 to 3,000 tokens), the shortfall within 1,000 tokens by a
question's number of evidence turns and by the number of speakers it names, the rank of each missed
evidence turn's memory and its distance from the nearest retrieved turn.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

import memworker
from locomo_kit.dataset import all_questions, load_dataset
from locomo_kit.paths import default_dataset_path, outputs_dir
from locomo_kit.worker import transcript
from memworker.config import Settings
from memworker.retrieval import ProjectIndex, RetrievalParams
from memworker.service import MemoryService

SPLITS = {"tuning 0-4": range(0, 5), "held-out 5-9": range(5, 10)}


def build_db(path: Path, conversations) -> None:
    """Ingest every session through memworker's queue processing, in-process."""
    from memworker.embed import make_embedder

    svc = MemoryService(Settings(db_path=str(path), embedder="minilm"), embedder=make_embedder("minilm"))
    for conv in conversations:
        for session in conv.sessions:
            call = transcript.read_tool_call(conv, session)
            row, _ = svc.store.init_session("locomo-kit", transcript.content_session_id(conv.sample_id, session.number),
                                            transcript.project_name(conv.sample_id), "tune")
            svc.store.enqueue(row["id"], "observation", {"tool_response": call["tool_response"]}, call["tool_use_id"])
            svc._process(svc.store.next_pending())
    svc.store.close()


def configurations(defaults: RetrievalParams, dense: bool) -> dict[str, RetrievalParams]:
    d = defaults
    out = {
        "default": d,
        "BM25 body only (k1 1.2, b 0.75)": RetrievalParams(k1=1.2, b=0.75, context_weight=0, bm25_weight=1,
                                                            speaker_boost=0, date_weight=0, window_weight=0,
                                                            session_weight=0, span_gap=0, expand_terms=0,
                                                            feedback_docs=0),
        "without query expansion": replace(d, expand_terms=0),
        "without neighbour field": replace(d, context_weight=0),
        "without window field": replace(d, window_weight=0),
        "without session field": replace(d, session_weight=0),
        "without speaker boost": replace(d, speaker_boost=0),
        "without date match": replace(d, date_weight=0),
        "without dense relevance feedback": replace(d, feedback_docs=0),
        "dense relevance feedback from 3 memories": replace(d, feedback_docs=3),
        "dense relevance feedback from 10 memories": replace(d, feedback_docs=10),
        "dense relevance feedback weight 0.15": replace(d, feedback_weight=0.15),
        "previous default (two speakers: neither boosted; no reply)": replace(d, two_speakers="one", reply_spans=0),
        "previous + first-named speaker 0.35, second 0.2": replace(d, two_speakers="first", second_speaker_boost=0.2,
                                                                   reply_spans=0),
        "previous + one search per named speaker, interleaved": replace(d, two_speakers="interleave", reply_spans=0),
        "previous + the reply after the best 2 hits": replace(d, two_speakers="one", reply_turns=1, reply_spans=2),
        "second-named speaker boost 0": replace(d, second_speaker_boost=0.0),
        "second-named speaker boost 0.1": replace(d, second_speaker_boost=0.1),
        "second-named speaker boost 0.3": replace(d, second_speaker_boost=0.3),
        "the reply after the best hit": replace(d, reply_turns=1, reply_spans=1),
        "the reply after the best 2 hits (both levers)": replace(d, reply_turns=1, reply_spans=2),
        "the reply after the best 4 hits": replace(d, reply_turns=1, reply_spans=4),
        "the reply after every hit": replace(d, reply_turns=1, reply_spans=1000),
        "two turns after the best 2 hits": replace(d, reply_turns=2, reply_spans=2),
        "without spans (single turns)": replace(d, span_gap=0, reply_spans=0),
        "spans with gap 2 (hits two turns apart merge)": replace(d, span_gap=2),
        "speaker boost 0.2": replace(d, speaker_boost=0.2),
        "query expansion weight 0.4": replace(d, expand_weight=0.4),
        "previous: gap 2, speaker 0.2, expansion 0.4, no feedback": replace(
            d, span_gap=2, speaker_boost=0.2, expand_weight=0.4, feedback_docs=0),
        "speaker names indexed as words": replace(d, drop_names=False),
        "BM25 k1 1.5": replace(d, k1=1.5),
        "BM25 b 0.5": replace(d, b=0.5),
        "term feedback (BM25 PRF, 5 docs, 10 terms)": replace(d, prf_docs=5),
        "seed formula (--ranking seed)": replace(d, ranking="seed"),
    }
    if dense:
        out["+ static MiniLM query (BM25 share 0.8)"] = replace(d, bm25_weight=0.8)
        out["+ full MiniLM query (BM25 share 0.8), reference"] = replace(d, bm25_weight=0.8)
    return out


def evaluate(index: ProjectIndex, questions, query_vector) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"@10": [], "within500": [], "within1000": []}
    for q in questions:
        sim, _, _ = index.similarity(q.question, query_vector(q.question))
        order = [int(k) for k in np.argsort(-sim, kind="stable")]
        evidence = set(q.evidence)
        top = {t for k in order[:10] for t in index.docs[k].turns}
        out["@10"].append(len(evidence & top) / len(evidence))
        for budget in (500, 1000):
            seen = {t for s in index.pack(order, sim, budget, 100) for k in s.docs for t in index.docs[k].turns}
            out[f"within{budget}"].append(len(evidence & seen) / len(evidence))
    return out


def evaluate_service(svc: MemoryService, project: str, questions) -> dict[str, list[float]]:
    """The same figures through ``MemoryService.search`` (what the HTTP route calls)."""
    out: dict[str, list[float]] = {"@10": [], "within500": [], "within1000": []}
    for q in questions:
        evidence = set(q.evidence)
        for name, kwargs in (("@10", {"limit": 10}), ("within500", {"limit": 100, "context_budget": 500}),
                             ("within1000", {"limit": 100, "context_budget": 1000})):
            rows = svc.search(q.question, project, **kwargs)
            seen = {t for row, _ in rows for t in json.loads(row["metadata"]).get("source_turns", [])}
            out[name].append(len(evidence & seen) / len(evidence))
    return out


def built_by_file(db: Path) -> Path:
    """Beside the database: the memworker version that formed its memories."""
    return db.with_name(db.name + ".memworker-version")


def stale(db: Path) -> str | None:
    """Why a reused database no longer describes this memworker's memories (None when it does or is absent)."""
    if not db.exists():
        return None
    recorded = built_by_file(db).read_text().strip() if built_by_file(db).is_file() else None
    if recorded != memworker.__version__:
        return f"{db} was built by memworker {recorded or 'of unknown version'}, this is {memworker.__version__}"
    return None


BUDGET_CURVE = (1000, 1250, 1500, 2000, 3000)
RANK_BINS = ((0, 20, "ranks 1-20"), (20, 40, "ranks 21-40"), (40, 100, "ranks 41-100"), (100, 10**9, "rank > 100"))


def where_recall_is_lost(indexes: dict[int, ProjectIndex], questions: dict[int, list]) -> dict:
    """For the default ranking: recall by budget, shortfall by evidence count, recall by the number of
    speakers a question names, ranks of missed turns and how far each lies from a retrieved turn."""
    curve: dict[str, dict[int, list[float]]] = {s: {b: [] for b in BUDGET_CURVE} for s in SPLITS}
    by_count: dict[str, list[float]] = {}
    by_named: dict[str, list[float]] = {}
    distance = {"next to a retrieved turn": 0, "2-3 turns from one": 0, "further": 0}
    ranks = {name: 0 for *_, name in RANK_BINS} | {"no memory": 0}
    for pos, index in indexes.items():
        first = {}
        for k, d in enumerate(index.docs):
            for t in d.turns:
                first.setdefault(t, k)
        for q in questions[pos]:
            sim, _, _ = index.similarity(q.question)
            order = [int(k) for k in np.argsort(-sim, kind="stable")]
            rank = {k: r for r, k in enumerate(order)}
            evidence = set(q.evidence)
            for budget in BUDGET_CURVE:
                seen = {t for s in index.pack(order, sim, budget, 1000) for k in s.docs for t in index.docs[k].turns}
                recall = len(evidence & seen) / len(evidence)
                for split, positions in SPLITS.items():
                    if pos in positions:
                        curve[split][budget].append(recall)
                if budget == 1000:
                    by_count.setdefault(str(min(len(evidence), 4)), []).append(recall)
                    by_named.setdefault(str(min(len(index.named_speakers(q.question)), 2)), []).append(recall)
                    for e in evidence - seen:
                        r = rank.get(first.get(e, -1))
                        name = "no memory" if r is None else next(n for lo, hi, n in RANK_BINS if lo <= r < hi)
                        ranks[name] += 1
                        distance[turn_distance(e, seen)] += 1
    total_loss = sum(1 - r for v in by_count.values() for r in v) or 1.0
    n_all = sum(len(v) for v in by_count.values())
    return {
        "recall_by_budget": {s: {b: round(statistics.mean(v), 4) for b, v in c.items()}
                             for s, c in curve.items() if c[BUDGET_CURVE[0]]},  # splits with questions only
        "shortfall_within1000_by_evidence_turns": {
            (k if k != "4" else "4+"): {"questions": len(v), "recall": round(statistics.mean(v), 4),
                                        "share_of_shortfall": round(sum(1 - r for r in v) / total_loss, 3),
                                        "points_lost": round(100 * sum(1 - r for r in v) / n_all, 2)}
            for k, v in sorted(by_count.items())},
        "missed_evidence_turns_by_rank": ranks,
        "recall_within1000_by_speakers_named": {k: {"questions": len(v), "recall": round(statistics.mean(v), 4)}
                                                for k, v in sorted(by_named.items())},
        "missed_evidence_turns_by_distance": distance,
    }


def turn_distance(turn: str, seen: set[str]) -> str:
    """How far a missed evidence turn (``D3:7``) lies from the nearest retrieved turn of its session."""
    session, _, n = turn.partition(":")
    if not n.isdigit():
        return "further"
    near = {abs(int(t.partition(":")[2]) - int(n)) for t in seen
            if t.partition(":")[0] == session and t.partition(":")[2].isdigit()}
    return "next to a retrieved turn" if 1 in near else "2-3 turns from one" if near & {2, 3} else "further"


def print_misses(m: dict) -> None:
    print("\nwhere recall is lost (default ranking, all ten conversations)")
    print("  recall by budget (tokens): " + "; ".join(
        f"{split} " + ", ".join(f"{b} {r:.3f}" for b, r in c.items()) for split, c in m["recall_by_budget"].items()))
    for k, v in m["shortfall_within1000_by_evidence_turns"].items():
        print(f"  {k} evidence turn(s): {v['questions']} questions, recall within 1,000 {v['recall']:.3f}, "
              f"{v['points_lost']:.1f} points lost ({100 * v['share_of_shortfall']:.0f}% of the shortfall)")
    print("  missed evidence turns, by the rank of their memory: "
          + ", ".join(f"{n} {c}" for n, c in m["missed_evidence_turns_by_rank"].items()))
    print("  missed evidence turns, by their distance from a retrieved turn: "
          + ", ".join(f"{n} {c}" for n, c in m["missed_evidence_turns_by_distance"].items()))
    print("  recall within 1,000 by speakers a question names: " + ", ".join(
        f"{k if k != '2' else '2+'} {v['recall']:.3f} ({v['questions']} questions)"
        for k, v in m["recall_within1000_by_speakers_named"].items()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", default=str(outputs_dir() / "bench" / "memworker_tune.db"))
    ap.add_argument("--dense", action="store_true")
    ap.add_argument("--misses", action="store_true", help="also: where the default ranking loses recall")
    ap.add_argument("--only", default="", help="only the configurations whose name contains one of these "
                    "comma-separated words (the default always), e.g. 'previous,speaker,reply'")
    ap.add_argument("--out", default=str(outputs_dir() / "bench" / "memworker_tune.json"))
    args = ap.parse_args()
    dataset = load_dataset(default_dataset_path())
    db = Path(args.db)
    why = stale(db)
    if why:
        print(f"{why}: building it again")
        for old in (db, *db.parent.glob(db.name + "-*"), built_by_file(db)):
            old.unlink(missing_ok=True)
    if not db.exists():
        db.parent.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        build_db(db, dataset)
        built_by_file(db).write_text(memworker.__version__)
        print(f"built {db} in {time.perf_counter() - t0:.0f} s")
    svc = MemoryService(Settings(db_path=str(db), embedder="hashing"))
    s = Settings()
    defaults = svc.params
    from memworker.embed import MiniLMOnnx
    from memworker.static_embed import StaticMiniLM, cache_path_for

    full = MiniLMOnnx()
    static = StaticMiniLM(full, cache_path_for(str(db)))  # query expansion (and the dense term with --dense)
    results = {}
    print(f"{'configuration':<62}" + "".join(f"{split:>30}" for split in SPLITS) + f"{'all 0-9':>12}")
    print(" " * 62 + "      @10  within500 within1000" * len(SPLITS) + f"{'within1000':>12}")
    everything: dict[str, list[float]] = {}
    wanted = [w.strip() for w in args.only.split(",") if w.strip()]
    chosen = {name: params for name, params in configurations(defaults, args.dense).items()
              if not wanted or name == "default" or any(w in name for w in wanted)}
    for name, params in chosen.items():
        row = {}
        for split, positions in SPLITS.items():
            figures: dict[str, list[float]] = {}
            for pos in positions:
                conv = dataset[pos]
                _, rows = svc.store.index_rows(transcript.project_name(conv.sample_id))
                uses_full = name.startswith("+ full")
                stored = np.vstack([np.frombuffer(r["embedding"], dtype=np.float32) for r in rows])
                index = ProjectIndex(rows, params, None if uses_full else static, stored)
                vector = (lambda q: full.embed([q])[0]) if uses_full else (lambda q: None)
                qs = [q for q in all_questions(conv) if q.category != 5 and q.evidence]
                if params.ranking == "seed":
                    svc.params, svc.static = params, static
                    measured = evaluate_service(svc, transcript.project_name(conv.sample_id), qs)
                    svc.params = defaults
                else:
                    measured = evaluate(index, qs, vector)
                for k, v in measured.items():
                    figures.setdefault(k, []).extend(v)
            row[split] = {k: round(statistics.mean(v), 4) for k, v in figures.items()}
            for k, v in figures.items():
                everything.setdefault(k, []).extend(v)
        row["all 0-9"] = {k: round(statistics.mean(v), 4) for k, v in everything.items()}
        everything.clear()
        results[name] = {"params": asdict(params), **row}
        print(f"{name:<62}" + "".join(f"{r['@10']:>9.3f}{r['within500']:>11.3f}{r['within1000']:>10.3f}"
                                      for r in row.values() if r is not row["all 0-9"])
              + f"{row['all 0-9']['within1000']:>12.3f}", flush=True)
    misses = None
    if args.misses:
        indexes, questions = {}, {}
        for pos, conv in enumerate(dataset):
            _, rows = svc.store.index_rows(transcript.project_name(conv.sample_id))
            stored = np.vstack([np.frombuffer(r["embedding"], dtype=np.float32) for r in rows])
            indexes[pos] = ProjectIndex(rows, defaults, static, stored)
            questions[pos] = [q for q in all_questions(conv) if q.category != 5 and q.evidence]
        misses = where_recall_is_lost(indexes, questions)
        print_misses(misses)
    static.save()
    svc.store.close()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"settings_defaults": s.public(), "results": results, "misses": misses}, indent=2))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
