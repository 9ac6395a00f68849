"""``--sessions N``: the first N sessions of each conversation and the questions about them, a run of its own.

A smoke test of a slow ingestion (a compressor on a CPU): the memory is given only sessions 1..N, only the
questions whose evidence lies wholly in them are asked, the run and its ingestion are named for it, and
its report says so at its top. A Worker that holds more of the conversation than that is refused.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from locomo_kit.cli import main
from locomo_kit.dataset import (
    first_sessions,
    get_conversation,
    partial_note,
    questions,
    select,
    split_sessions,
    with_sessions,
)
from locomo_kit.worker.embedded import EmbeddedWorker


@pytest.fixture()
def isolated(offline_outputs_dir):
    return offline_outputs_dir


def test_the_first_sessions_keep_only_the_questions_whose_evidence_lies_in_them(dataset):
    whole = get_conversation(dataset, "conv-26")
    (two,) = select(dataset, "conv-26@s2")
    assert [s.number for s in two.sessions] == [1, 2] and two.partial and two.whole == (19, len(whole.questions))
    kept_turns = {t.dia_id for t in two.turns}
    assert two.questions and all(q.evidence and set(q.evidence) <= kept_turns for q in two.questions)
    left_out = [q for q in whole.questions if q not in two.questions]
    assert all(not q.evidence or not set(q.evidence) <= kept_turns for q in left_out)
    assert [q.index for q in two.questions] == sorted(q.index for q in two.questions)  # indexes kept, in order
    assert len(questions(two)) == 15  # categories 1-4 of conv-26 with all their evidence in sessions 1-2
    assert partial_note(two) == ("conv-26: the first 2 of 19 sessions, and the 20 of 199 questions (all five "
                                 "categories) whose evidence lies in them")
    assert first_sessions(whole, 19) is whole and first_sessions(whole, 40) is whole and not whole.partial
    assert partial_note(whole) is None
    both = select(dataset, "conv-26,conv-30@s1")
    assert [len(c.sessions) for c in both] == [1, 1]
    assert len(select(dataset, "all@s3")) == 10


def test_the_selector_is_checked():
    assert with_sessions("conv-26", 2) == "conv-26@s2" and with_sessions("all", None) == "all"
    assert with_sessions("conv-26@s2", 2) == "conv-26@s2"
    assert split_sessions("conv-26@s12") == ("conv-26", 12) and split_sessions("conv-26") == ("conv-26", None)
    with pytest.raises(ValueError, match="already names its first 2 sessions"):
        with_sessions("conv-26@s2", 3)
    with pytest.raises(ValueError, match="at least 1"):
        split_sessions("conv-26@s0")
    with pytest.raises(ValueError, match="positive integer"):
        with_sessions("conv-26", 0)


def test_a_run_over_the_first_sessions_is_its_own_run_and_says_so_at_the_top(isolated, capsys):
    assert main(["run", "--sample", "conv-26", "--sessions", "2"]) == 0
    out = capsys.readouterr().out
    assert "conv-26: the first 2 of 19 sessions, and the 20 of 199 questions" in out
    assert "ingest ok: 2 sessions done" in out
    (report,) = re.findall(r"^report:\s+(\S+)", out, flags=re.M)
    run = Path(report).parent
    assert run.name.startswith("conv-26-s2-transcript-embedded-hashing-extractive-b1000-")
    assert (isolated / "runs" / "conv-26-s2-transcript-embedded-hashing" / "ingest.jsonl").is_file()
    assert sum(1 for _ in open(run / "answers.jsonl")) == 15
    head = Path(report).read_text().split("## Run facts")[0]
    assert "**Partial conversations: only the first 2 sessions of each conversation were given to the memory" in head
    assert "conv-26: sessions 1-2 of 19, 15 questions" in head
    # the whole conversation is another run, on another ingestion; the partial one is reused as it is
    assert main(["run", "--sample", "conv-26@s2"]) == 0
    assert "ingest ok: 0 sessions done, 2 already done" in capsys.readouterr().out


def test_an_ingestion_holding_later_sessions_is_refused_for_a_run_over_the_first_ones(isolated, capsys):
    assert main(["ingest", "--sample", "conv-30", "--sessions", "3", "--ingest-id", "shared"]) == 0
    capsys.readouterr()
    assert main(["run", "--sample", "conv-30", "--sessions", "2", "--ingest-id", "shared"]) == 1
    err = capsys.readouterr().err
    assert "holds sessions 3-3 of conv-30, past the first 2 this run asks for" in err


def test_a_worker_holding_more_of_the_conversation_is_refused(isolated, tmp_path, capsys):
    worker = EmbeddedWorker(tmp_path / "w.db", embedder="hashing")
    url = worker.start()
    try:
        assert main(["ingest", "--sample", "conv-30", "--sessions", "1", "--worker-url", url]) == 0
        main(["ingest", "--sample", "conv-30", "--sessions", "2", "--worker-url", url])  # gives the Worker session 2
        capsys.readouterr()
        assert main(["answer", "--sample", "conv-30", "--sessions", "1", "--worker-url", url]) == 1  # and run
        err = capsys.readouterr().err
        assert re.search(r"holds \d+ observations of locomo-eval-conv-30, more than the \d+ this ingestion of "
                         r"conv-30's first 1 sessions recorded", err)
    finally:
        worker.stop()
