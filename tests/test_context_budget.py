"""The kit's --context-budget: option resolution, run configuration, client-side packing, end to end."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from locomo_kit.cli import build_parser
from locomo_kit.cli.common import CliError, retrieval_options
from locomo_kit.dataset import get_conversation
from locomo_kit.ingestion import ingest_conversations
from locomo_kit.qa.answering import AnswerConfig, QARunner
from locomo_kit.qa.context import approx_tokens, fit_budget
from locomo_kit.runs import RunFolder
from locomo_kit.systems.workers import WorkerSystem
from locomo_kit.worker import transcript
from locomo_kit.worker.client import Observation, WorkerClient
from locomo_kit.worker.embedded import EmbeddedWorker


def obs(oid: int, text: str) -> Observation:
    return Observation(id=oid, project="p", type="event", title="", subtitle="", narrative=text, text=None, facts=[],
                       concepts=[], created_at=None, created_at_epoch=None, metadata={})


def ns(**kw) -> argparse.Namespace:
    return argparse.Namespace(**{"top_k": None, "context_budget": None, **kw})


def test_the_library_reads_top_k_and_budget_as_the_cli_does():
    import locomo_kit as lk

    def read(**kw):
        r = lk.Retrieval(**kw)
        return r.top_k, r.context_budget

    assert read() == (100, 1000) and read(top_k=8) == (8, None) and read(top_k=5, context_budget=500) == (5, 500)
    assert lk.Retrieval() == lk.Retrieval(context_budget=1000) == lk.Retrieval(context_budget=1000, top_k=100)
    with pytest.raises(ValueError, match="positive"):
        lk.Retrieval(context_budget=0)
    with pytest.raises(ValueError, match="from 1 to 100"):
        lk.Retrieval(top_k=101)


def test_auto_says_what_it_chose(monkeypatch, capsys):
    from locomo_kit.cli.common import say_auto

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    say_auto("answer", "auto")
    say_auto("answer", "extractive")  # only auto is announced
    say_auto("judge", "auto")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    say_auto("judge", "auto")
    assert capsys.readouterr().out.splitlines() == [
        "answer model: auto → extractive (ANTHROPIC_API_KEY is not set)",
        "judge model: auto → no judge (F1 only) (ANTHROPIC_API_KEY is not set)",
        "judge model: auto → anthropic/claude-sonnet-4-6 (ANTHROPIC_API_KEY is set)"]


def test_budget_is_the_default_and_top_k_alone_means_top_k():
    def read(args):
        r = retrieval_options(args)
        return r.top_k, r.context_budget

    assert read(ns()) == (100, 1000)
    assert read(ns(top_k=8)) == (8, None)
    assert read(ns(context_budget=500)) == (100, 500)
    assert read(ns(context_budget=500, top_k=5)) == (5, 500)
    with pytest.raises(CliError, match="positive"):
        retrieval_options(ns(context_budget=0))
    args = build_parser().parse_args(["answer", "--context-budget", "750"])
    assert args.context_budget == 750 and args.top_k is None


def test_budget_is_part_of_the_answer_configuration():
    plain, budget = AnswerConfig(top_k=8), AnswerConfig(top_k=100, context_budget=1000)
    assert plain.key() == AnswerConfig(top_k=8, context_budget=None).key()
    assert len({plain.key(), budget.key(), AnswerConfig(top_k=100, context_budget=500).key()}) == 3


def test_fit_budget_packs_best_first_and_skips_what_does_not_fit():
    memories = [obs(1, "a" * 400), obs(2, "b" * 800), obs(3, "c" * 200)]  # 100, 200, 50 tokens
    assert [o.id for o in fit_budget(memories, 160)] == [1, 3]
    assert [o.id for o in fit_budget(memories, 40)] == []
    assert fit_budget(memories, None) == memories


def test_answers_within_budget_from_memworker(tmp_path, dataset):
    conv = get_conversation(dataset, "conv-26")
    conv = dataclasses.replace(conv, sessions=conv.sessions[:2])
    asked = [q for q in conv.questions if q.category != 5 and q.evidence
             and all(int(e[1:].split(":")[0]) <= 2 for e in q.evidence)][:4]
    assert asked
    with EmbeddedWorker(tmp_path / "mw.db", embedder="hashing") as url, WorkerClient(url, token="") as client:
        ingest_conversations(WorkerSystem.around(client, poll_interval=0.2), [conv], RunFolder("r", root=tmp_path), progress=False)
        runner = QARunner(AnswerConfig(top_k=100, context_budget=300), system=WorkerSystem.around(client))
        records = [runner.answer_one(conv, q) for q in asked]
        raw = client.search(asked[0].question, transcript.project_name(conv.sample_id), limit=100)
    for rec in records:
        assert rec.status == "ok" and rec.context_budget == 300 and rec.retrieved
        assert sum(approx_tokens(r["content"]) for r in rec.retrieved) <= 300 < rec.context_tokens + 300
        assert all(r["source_turns"] for r in rec.retrieved)
    assert len(raw.observations) > len(records[0].retrieved)  # without the budget: more results


def test_llm_base_url_means_the_answerers_server_only(capsys):
    """`--llm-base-url` is the answerer's server; `score` has none, so it says to use --judge-base-url."""
    from locomo_kit.cli import main

    assert main(["score", "--sample", "conv-26", "--llm-base-url", "http://127.0.0.1:9/v1"]) == 1
    err = capsys.readouterr().err
    assert "--judge-base-url" in err and "answerer" in err
    args = build_parser().parse_args(["answer", "--llm-base-url", "http://127.0.0.1:9/v1"])
    assert args.answer_base_url == "http://127.0.0.1:9/v1"
