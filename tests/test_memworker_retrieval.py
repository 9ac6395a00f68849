"""memworker retrieval: budgeted spans over HTTP, ranking terms, index freshness, static query vectors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from memworker.retrieval import ProjectIndex, RetrievalParams, approx_tokens, query_months, terms

from support.helpers import drain, memworker_app

TRANSCRIPT = (
    "[Session 3 — 1:56 pm on 8 May, 2023]\n"
    "[Conversation between Caroline and Melanie]\n"
    "[D3:1] Caroline: Hey Mel! Good to see you!\n"
    "[D3:2] Caroline: I went to a pottery workshop yesterday and made a blue bowl.\n"
    "[D3:3] Melanie: Lovely! My kids and I painted a sunrise over the lake last summer.\n"
    "[D3:4] Caroline: The pottery teacher said my bowl was the best in the workshop.\n"
    "[D3:5] Melanie: I am training for a marathon in Boston next month.\n"
    "[D3:6] Caroline: Marathons are tough; my cousin ran the Chicago marathon twice.\n"
    "[D3:7] Melanie: My violin lessons start again in the autumn with a new teacher.\n"
    "[D3:8] Caroline: I adopted a grey kitten named Pixel from the shelter downtown.\n"
)


def ingest(api, project="p1", transcript=TRANSCRIPT, sid="s3", tool_use_id="u3"):
    api.post("/api/sessions/init", json={"contentSessionId": sid, "project": project})
    r = api.post("/api/sessions/observations", json={"contentSessionId": sid, "tool_name": "Read",
                                                     "tool_response": transcript, "tool_use_id": tool_use_id})
    assert r.json()["status"] == "queued"
    drain(api)


def search(api, query, **params):
    r = api.get("/api/search", params={"query": query, "project": "p1", "format": "json", **params})
    assert r.status_code == 200, r.text
    return r.json()["observations"]


@pytest.fixture()
def api(tmp_path):
    with memworker_app(tmp_path) as client:
        ingest(client)
        yield client


def test_budget_merges_adjacent_hits_into_spans_of_whole_turns(tmp_path):
    with memworker_app(tmp_path, span_gap=2) as client:
        ingest(client)
        rows = search(client, "pottery workshop bowl", context_budget=1000, limit=100)
    first = json.loads(rows[0]["metadata"])
    # D3:2 and D3:4 both match; with gap 2 they are close enough, so D3:3 between them joins the span
    assert first["source_turns"][:3] == ["D3:2", "D3:3", "D3:4"]
    assert first["span"]["ids"] and len(first["span"]["ids"]) == len(first["source_turns"])
    assert rows[0]["narrative"].startswith("On 8 May 2023:\nCaroline: I went to a pottery workshop")
    assert "Melanie: Lovely! My kids" in rows[0]["narrative"] and json.loads(rows[0]["facts"]) == []
    assert first["tokens"] == approx_tokens(rows[0]["narrative"])
    seen = [t for r in rows for t in json.loads(r["metadata"])["source_turns"]]
    assert len(seen) == len(set(seen))  # no turn twice
    assert sum(json.loads(r["metadata"])["tokens"] for r in rows) <= 1000


def test_budget_is_respected_and_spans_that_do_not_fit_are_skipped(api):
    single = search(api, "kitten Pixel shelter", limit=1)[0]
    small = approx_tokens(single["narrative"])
    rows = search(api, "kitten Pixel shelter", context_budget=small, limit=100)
    assert [json.loads(r["metadata"])["source_turns"] for r in rows] == [["D3:8"]]
    assert search(api, "kitten Pixel shelter", context_budget=3, limit=100) == []
    total = lambda b: sum(json.loads(r["metadata"])["tokens"] for r in search(api, "marathon teacher", context_budget=b))
    assert total(40) <= 40 < total(400) <= 400


def test_limit_caps_spans_and_without_budget_results_are_single_memories(api):
    assert len(search(api, "pottery marathon violin kitten", context_budget=1000, limit=2)) == 2
    rows = search(api, "pottery workshop bowl", limit=3)
    assert all(len(json.loads(r["metadata"])["source_turns"]) == 1 for r in rows)
    assert all("span" not in json.loads(r["metadata"]) for r in rows)


def test_bad_budget_is_a_validation_error(api):
    r = api.get("/api/search", params={"query": "x", "project": "p1", "context_budget": 0})
    assert r.status_code == 400 and r.json()["error"] == "ValidationError"
    r = api.get("/api/search", params={"query": "x", "project": "p1", "context_budget": "lots"})
    assert r.status_code == 400


def test_index_follows_new_and_deleted_memories(api):
    assert not any("tandem" in r["narrative"] for r in search(api, "tandem bicycle"))
    more = ("[Session 4 — 2:00 pm on 20 May, 2023]\n[Conversation between Caroline and Melanie]\n"
            "[D4:1] Melanie: We bought a red tandem bicycle for weekend rides.\n")
    ingest(api, transcript=more, sid="s4", tool_use_id="u4")
    top = search(api, "tandem bicycle")[0]
    assert "tandem" in top["narrative"]
    api.delete(f"/api/observation/{top['id']}")
    assert top["id"] not in [r["id"] for r in search(api, "tandem bicycle", context_budget=500)]


def test_speaker_boost_prefers_the_named_speaker(tmp_path):
    with memworker_app(tmp_path, speaker_boost=0.5) as client:
        ingest(client)
        rows = search(client, "What did Melanie say about the teacher?", limit=1)
    assert json.loads(rows[0]["metadata"])["speaker"] == "Melanie"  # violin teacher, not the pottery one


def test_seed_ranking_is_available_by_name(tmp_path):
    with memworker_app(tmp_path, ranking="seed", floor=0.0) as client:
        ingest(client)
        rows = search(client, "pottery workshop", limit=3)
        scores = [json.loads(r["metadata"])["score"] for r in rows]
        assert rows and scores == sorted(scores, reverse=True) and "pottery" in rows[0]["narrative"]
        assert client.get("/api/health").json()["settings"]["ranking"] == "seed"


def test_unknown_ranking_is_refused(tmp_path):
    with pytest.raises(ValueError, match="Unknown ranking"):
        with memworker_app(tmp_path, ranking="magic"):
            pass


def test_unknown_two_speakers_mode_is_refused(tmp_path):
    with pytest.raises(ValueError, match="Unknown two_speakers 'both': choose 'first', 'one' or 'interleave'"):
        with memworker_app(tmp_path, two_speakers="both"):
            pass


def index_of(turns: list[tuple[str, str, str]], stored: np.ndarray | None = None, **params) -> ProjectIndex:
    rows = []
    for i, (turn, speaker, text) in enumerate(turns, 1):
        meta = {"source_turns": [turn], "speaker": speaker, "session_date": "2023-05-08", "event_date": "2023-05-08"}
        rows.append({"id": i, "narrative": f"{speaker} on 8 May 2023: {text}", "body": f"{speaker} on 8 May 2023: {text}",
                     "context": "", "metadata": json.dumps(meta), "importance": 0.5, "embedding": None})
    return ProjectIndex(rows, RetrievalParams(**params), None, stored)


def test_default_gap_merges_only_adjacent_hits():
    # hits D1:1, D1:2 (adjacent: one span) and D1:4: D1:3 between them is no hit and is not added
    idx = index_of([(f"D1:{n}", "A", f"word{n} filler text") for n in range(1, 6)], reply_spans=0)
    spans = idx.pack([0, 1, 3], np.zeros(5), budget=10_000, limit=100)
    assert [[idx.docs[m].turns[0] for m in s.docs] for s in spans] == [["D1:1", "D1:2"], ["D1:4"]]


def test_pack_respects_gap_and_span_length():
    idx = index_of([(f"D1:{n}", "A", f"word{n} filler text") for n in range(1, 10)], span_gap=2, reply_spans=0)
    scores = np.zeros(9)
    spans = idx.pack([0, 2, 4, 6, 8], scores, budget=10_000, limit=100)
    # gap 2, at most 5 turns: D1:1..D1:5 is one span; D1:7 starts a new one; D1:9 joins it
    assert [[idx.docs[m].turns[0] for m in s.docs] for s in spans] == [
        ["D1:1", "D1:2", "D1:3", "D1:4", "D1:5"], ["D1:7", "D1:8", "D1:9"]]
    apart = idx.pack([0, 3], scores, budget=10_000, limit=100)
    assert len(apart) == 2  # three turns apart: separate spans
    no_merge = index_of([(f"D1:{n}", "A", "x y") for n in range(1, 4)], span_gap=0, reply_spans=0).pack([0, 1], np.zeros(3), 10_000, 100)
    assert len(no_merge) == 2


def test_the_best_hits_spans_take_in_the_reply_that_fits():
    idx = index_of([(f"D1:{n}", "AB"[n % 2], f"word{n} filler text") for n in range(1, 10)], reply_spans=2)
    spans = idx.pack([0, 3, 6], np.zeros(9), budget=10_000, limit=100)
    # the two best hits take in the turn after them; the third hit stays alone
    assert [[idx.docs[m].turns[0] for m in s.docs] for s in spans] == [["D1:1", "D1:2"], ["D1:4", "D1:5"], ["D1:7"]]
    assert [s.best for s in spans] == [0, 3, 6] and spans[0].text.startswith("On 8 May 2023:\nB: word1")
    assert sum(s.tokens for s in spans) == sum(approx_tokens(s.text) for s in spans)
    # a reply that would not fit the budget is left out: the hit alone is packed
    alone = idx.pack([0], np.zeros(9), budget=idx.docs[0].tokens, limit=100)
    assert [s.docs for s in alone] == [[0]]
    # a reply already in another span is not taken twice; a hit next to a span joins it with its reply
    taken = index_of([(f"D1:{n}", "A", f"word{n} filler text") for n in range(1, 6)], reply_spans=3)
    spans = taken.pack([2, 0, 1], np.zeros(5), budget=10_000, limit=100)
    assert [[taken.docs[m].turns[0] for m in s.docs] for s in spans] == [["D1:3", "D1:4"], ["D1:1", "D1:2"]]
    assert index_of([("D1:1", "A", "x y"), ("D1:2", "B", "z")], reply_spans=0).pack([0], np.zeros(2), 10_000, 9)[0].docs == [0]


def test_a_query_naming_two_speakers_boosts_the_one_named_first():
    turns = [("D1:1", "Jon", "the dance studio opened"), ("D1:2", "Gina", "the dance studio opened")]
    idx = index_of(turns, date_weight=0)
    sim, _, _ = idx.similarity("What did Gina say about Jon's dance studio?")
    assert sim[1] - sim[0] == pytest.approx(0.35 - 0.2)  # speaker_boost for Gina, second_speaker_boost for Jon
    assert idx.named_speakers("What did Jon tell Gina about Jon's studio?") == ["Jon", "Gina"]
    neither = index_of(turns, date_weight=0, two_speakers="one").similarity("What did Gina say about Jon's dance studio?")[0]
    assert neither[0] == neither[1]
    alone, _, _ = idx.similarity("What did Gina say about the dance studio?")
    assert alone[1] - alone[0] == pytest.approx(0.35)


def test_interleaved_searches_take_each_speakers_best_in_turn():
    turns = [("D1:1", "Jon", "dance dance dance studio"), ("D1:2", "Jon", "dance studio"),
             ("D1:3", "Gina", "studio"), ("D1:4", "Gina", "the weather")]
    idx = index_of(turns, date_weight=0, two_speakers="interleave", feedback_docs=0)
    sim, _, _ = idx.similarity("Did Jon and Gina talk about the dance studio?")
    order = [int(k) for k in np.argsort(-sim, kind="stable")]
    assert order == [0, 2, 1, 3]  # Jon's best, Gina's best, Jon's next, Gina's next
    assert list(sim[order]) == sorted(sim, reverse=True)


def test_other_sessions_never_merge():
    idx = index_of([("D1:1", "A", "apples"), ("D2:2", "B", "apples too")])
    assert len(idx.pack([0, 1], np.zeros(2), 10_000, 100)) == 2


def test_terms_and_date_mentions():
    assert terms("What did Caroline research about adoption agencies?") == ["carolin", "research", "adopt", "agenc"]
    assert query_months("What did she do in May 2023 and in 2022?") == {"may 2023", "2022"}
    idx = index_of([("D1:1", "A", "went hiking"), ("D1:2", "B", "went hiking")], date_weight=0.5, speaker_boost=0)
    sim, _, _ = idx.similarity("hiking in May 2023")
    assert sim[0] == sim[1] and sim[0] > idx.similarity("hiking in June 2023")[0][0]


def test_static_vectors_are_distilled_lazily_and_cached(tmp_path):
    from memworker.embed import MiniLMOnnx
    from memworker.static_embed import StaticMiniLM, cache_path_for

    model = MiniLMOnnx()
    cache = cache_path_for(str(tmp_path / "mw.db"))
    assert cache.parent == tmp_path
    static = StaticMiniLM(model, cache)
    vec = static.embed(["a pottery workshop"])[0]
    pieces = static.piece_ids("a pottery workshop")
    assert abs(float(np.linalg.norm(vec)) - 1) < 1e-5 and int(static.known.sum()) == len(set(pieces.tolist()))
    near = static.embed(["a ceramics class"])[0] @ vec
    far = static.embed(["quarterly tax filing deadline"])[0] @ vec
    assert near > far
    static.save()
    again = StaticMiniLM(model, cache)
    assert again.ensure(pieces) == 0 and np.allclose(again.embed(["a pottery workshop"])[0], vec, atol=1e-2)
    model.fingerprint = "another model"
    assert StaticMiniLM(model, cache).known.sum() == 0  # a cache of another model is not trusted


def test_static_query_vectors_over_http(tmp_path):
    with memworker_app(tmp_path, embedder="minilm", bm25_weight=0.7) as client:
        ingest(client)
        rows = search(client, "ceramics class", context_budget=200)
        assert rows and "pottery" in rows[0]["narrative"]  # no shared word: the dense term found it
        assert json.loads(rows[0]["metadata"])["cosine"] > 0
    from memworker.static_embed import installed_table

    # pieces distilled by this Worker are kept beside its database; none are when the install-time table has all
    assert (tmp_path / "mw.db.static-minilm-v1.npz").is_file() != installed_table().is_file()


def test_a_preloaded_table_spares_distilling(tmp_path):
    from memworker.embed import MiniLMOnnx
    from memworker.static_embed import StaticMiniLM

    model = MiniLMOnnx()
    first = StaticMiniLM(model, tmp_path / "table.npz")
    pieces = first.piece_ids("a pottery workshop")
    vec = first.embed(["a pottery workshop"])[0]
    first.save()
    static = StaticMiniLM(model, tmp_path / "own.npz", preload=tmp_path / "table.npz")
    assert static.ensure(pieces) == 0 and np.allclose(static.embed(["a pottery workshop"])[0], vec, atol=1e-2)
    static.save()
    assert not (tmp_path / "own.npz").exists()  # nothing new was distilled: nothing to keep


def test_query_expansion_finds_a_memory_by_a_related_word(tmp_path):
    with memworker_app(tmp_path, embedder="minilm") as client:
        ingest(client)
        index = client.app.state.service.index("p1")
        assert index.expansion and not index.dense  # the default: BM25 with expansion, no dense term
        assert index.memory_vectors is not None and len(index.memory_vectors) == len(index.docs)  # feedback
        near = index.expand(["kitty"], set())
        assert near and max(near.values()) >= 0.4
        rows = search(client, "What pet kitty did Caroline get?", limit=1)
    assert "kitten" in rows[0]["narrative"]
    with memworker_app(tmp_path / "off", embedder="minilm", expand_terms=0) as client:
        ingest(client)
        assert not client.app.state.service.index("p1").expansion
        assert "kitten" not in search(client, "What pet kitty did Caroline get?", limit=1)[0]["narrative"]


FEEDBACK_TURNS = [("D1:1", "A", "we adopted a puppy from the shelter"),
                  ("D1:2", "B", "the weather was grey all week"),
                  ("D1:3", "A", "walks with my new dog every morning"),
                  ("D1:4", "B", "the tax forms are due soon")]


def feedback_vectors() -> np.ndarray:
    """Stored embeddings: turns 1 and 3 (dogs) close together, the others elsewhere."""
    return np.array([[1.0, 0.1, 0.0], [0.0, 1.0, 0.2], [0.9, 0.0, 0.3], [0.0, 0.2, 1.0]], dtype=np.float32)


def test_dense_feedback_raises_memories_like_the_best_hits():
    params = dict(speaker_boost=0, date_weight=0, context_weight=0, window_weight=0, session_weight=0, span_gap=0)
    plain = index_of(FEEDBACK_TURNS, feedback_vectors(), feedback_docs=0, **params)
    sim, _, _ = plain.similarity("puppy shelter")
    assert sim[2] == sim[1] == 0  # "walks with my new dog" shares no word with the question
    fed = index_of(FEEDBACK_TURNS, feedback_vectors(), feedback_docs=1, feedback_weight=0.5, **params)
    sim, _, _ = fed.similarity("puppy shelter")
    assert int(np.argmax(sim)) == 0 and sim[2] > sim[1] and sim[2] > sim[3]
    assert np.allclose(fed.feedback(np.array([1.0, 0, 0, 0])).mean(), 0, atol=1e-6)  # z-scores over the project


def test_dense_feedback_needs_stored_vectors_and_a_match():
    without = index_of(FEEDBACK_TURNS, None, feedback_docs=5)
    assert without.memory_vectors is None
    short = index_of(FEEDBACK_TURNS, feedback_vectors()[:2], feedback_docs=5)  # not one per memory: unusable
    assert short.memory_vectors is None
    fed = index_of(FEEDBACK_TURNS, feedback_vectors(), feedback_docs=5, feedback_weight=0.5)
    sim, _, _ = fed.similarity("unrelated query words")
    assert not sim.any()  # nothing matched: no feedback from arbitrary memories


def test_install_copies_the_table_an_earlier_environment_left_on_this_machine(tmp_path, monkeypatch, capsys):
    """`make setup` in a fresh clone copies the machine's table (named for the model's sha256 and onnxruntime's
    version) instead of distilling the vocabulary again; the first install on a machine leaves it there."""
    from memworker import static_embed
    from memworker.embed import MiniLMOnnx
    from memworker.static_embed import StaticMiniLM, machine_table

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(static_embed, "installed_table", lambda: tmp_path / "env1" / "table.npz")
    few = lambda self: self.ensure(self.piece_ids("a pottery workshop"))  # the whole vocabulary takes ~40 s
    monkeypatch.setattr(StaticMiniLM, "distil_all", few)
    assert static_embed.main(["--install"]) == 0
    kept = machine_table(MiniLMOnnx())
    assert kept.is_file() and kept.read_bytes() == (tmp_path / "env1" / "table.npz").read_bytes()
    assert "copied" not in capsys.readouterr().out

    monkeypatch.setattr(static_embed, "installed_table", lambda: tmp_path / "env2" / "table.npz")
    assert static_embed.main(["--install"]) == 0
    out = capsys.readouterr().out
    assert f"copied {kept}" in out and "distilled 0 pieces" in out  # every piece came with the copy
