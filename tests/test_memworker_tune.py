"""benchmarks/memworker_tune.py's account of where recall is lost, on a small index."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

from memworker.retrieval import ProjectIndex, RetrievalParams

ROOT = Path(__file__).resolve().parents[1]


def tune_module():
    spec = importlib.util.spec_from_file_location("memworker_tune", ROOT / "benchmarks" / "memworker_tune.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def index(texts: list[str]) -> ProjectIndex:
    rows = []
    for n, text in enumerate(texts, 1):
        meta = {"source_turns": [f"D1:{n}"], "speaker": "A", "session_date": "2023-05-08"}
        rows.append({"id": n, "narrative": f"A on 8 May 2023: {text}", "body": text, "context": "",
                     "metadata": json.dumps(meta), "importance": 0.5, "embedding": None})
    return ProjectIndex(rows, RetrievalParams(feedback_docs=0), None, None)


def test_misses_are_counted_by_evidence_count_and_rank():
    tune = tune_module()
    filler = [f"filler words number {n} about nothing in particular at all" for n in range(400)]
    idx = index(["went swimming in the lake", "painted a sunset", *filler])
    q = lambda text, evidence: SimpleNamespace(question=text, evidence=tuple(evidence))
    questions = {0: [q("Where did A go swimming?", ["D1:1"]),
                     q("What did A paint and where did A swim?", ["D1:2", "D1:1"]),
                     q("Which filler words about nothing?", ["D1:2", "D1:9999"])]}  # no memory for D1:9999
    m = tune.where_recall_is_lost({0: idx}, questions)
    by_count = m["shortfall_within1000_by_evidence_turns"]
    assert by_count["1"] == {"questions": 1, "recall": 1.0, "share_of_shortfall": 0.0, "points_lost": 0.0}
    assert by_count["2"]["questions"] == 2 and by_count["2"]["recall"] == 0.5  # 1.0 and 0.0
    ranks = m["missed_evidence_turns_by_rank"]
    # the 400 fillers match the third question and fill the budget: D1:2 ranks below 100
    assert ranks == {"ranks 1-20": 0, "ranks 21-40": 0, "ranks 41-100": 0, "rank > 100": 1, "no memory": 1}
    assert m["recall_by_budget"]["tuning 0-4"][1000] == round((1 + 1 + 0) / 3, 4)
    assert "held-out 5-9" not in m["recall_by_budget"]  # no held-out conversation given
    tune.print_misses(m)  # prints without error


def test_a_database_formed_by_another_memworker_is_not_reused(tmp_path):
    import memworker

    tune = tune_module()
    db = tmp_path / "tune.db"
    assert tune.stale(db) is None  # nothing to reuse
    db.write_bytes(b"")
    assert "of unknown version" in tune.stale(db)
    tune.built_by_file(db).write_text("0.1.0")
    assert f"built by memworker 0.1.0, this is {memworker.__version__}" in tune.stale(db)
    tune.built_by_file(db).write_text(memworker.__version__)
    assert tune.stale(db) is None
