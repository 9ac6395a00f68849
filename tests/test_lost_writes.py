"""Held against acknowledged after every ingestion: a system that acknowledges writes it does not hold is never
a result. Python adapters broken in one way each (``tests/support/broken_systems.py``): one that keeps one
memory per speaker (a write key that repeats: conv-26's 419 turns acknowledged, 2 held), one that drops every
other write, and the same store declared as a transformer, which reports its figures and fails nothing."""

from __future__ import annotations

import json
import sqlite3

import pytest

from locomo_kit.cli import main
from locomo_kit.dataset import get_conversation, load_dataset, select
from locomo_kit.ingestion import ingest_conversations
from locomo_kit.ingestion.writes import check_writes, fell_short, sampled_turns, spans
from locomo_kit.runs import RunFolder, ingestion_folder

from support.broken_systems import OneKeyPerSpeaker
from support.runs import set_outputs

KEYED = "support.broken_systems:OneKeyPerSpeaker"
DROPS = "support.broken_systems:DropsEveryOther"
LOST = "holds 2 of the 419 memories it acknowledged for conv-26 (lost during ingestion"


@pytest.fixture
def outputs(tmp_path, monkeypatch):
    return set_outputs(monkeypatch, tmp_path / "outputs")


def _ingestion(out: str) -> RunFolder:
    path = next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("run folder: "))
    return ingestion_folder(path.rsplit("/", 1)[1])


def test_acknowledged_419_held_2_fails_ingest_verify_and_run_naming_both_numbers(outputs, capsys):
    assert main(["ingest", "--sample", "conv-26", "--system", KEYED]) == 1
    captured = capsys.readouterr()
    assert LOST in captured.err and "session(s) 1-19" in captured.err
    assert "LOST WRITES" in captured.out and "held after ingestion: 2 of 419" in captured.out
    check = _ingestion(captured.out).manifest()["held_check"]
    assert (check["held"], check["acknowledged"], check["lost"]) == (2, 419, True)
    assert check["declaration"] == "stores what it is given"
    assert check["conversations"][0]["sessions_short"] == list(range(1, 20))

    # resumed: nothing is sent again, the check runs again and says the loss happened during the ingestion
    assert main(["ingest", "--sample", "conv-26", "--system", KEYED]) == 1
    captured = capsys.readouterr()
    assert "19 already done" in captured.out and LOST in captured.err and "lost since" not in captured.err

    assert main(["verify", "--sample", "conv-26", "--system", KEYED]) == 1
    captured = capsys.readouterr()
    assert "held 2 of the 419 memories acknowledged at ingestion (stores what it is given)" in captured.out
    assert LOST in captured.err

    assert main(["run", "--sample", "conv-26", "--system", KEYED, "--limit", "5"]) == 1
    captured = capsys.readouterr()
    assert "PARTIAL: official F1" in captured.out and LOST in captured.err
    report = next(line.split()[1] for line in captured.out.splitlines() if line.startswith("report:"))
    head = open(report, encoding="utf-8").read().split("## ")[0]
    assert f"**LOST WRITES: {KEYED} {LOST}" in head and "This run is not a result" in head


def test_its_leaderboard_row_is_partial_with_the_reason(outputs, tmp_path, capsys):
    board = tmp_path / "board"
    assert main(["leaderboard", "--systems", f"bm25,{KEYED}", "--sample", "conv-26", "--limit", "5",
                 "--out", str(board)]) == 1
    rows = json.loads((board / "leaderboard.json").read_text())["rows"]
    keyed = next(r for r in rows if "OneKeyPerSpeaker" in r["run_id"])
    bm25 = next(r for r in rows if r is not keyed)
    assert bm25["status"] == "ok" and "note" not in bm25
    assert keyed["status"] == "PARTIAL" and LOST in keyed["note"]
    assert f"(**PARTIAL**: LOST WRITES: {KEYED} {LOST}" in (board / "leaderboard.md").read_text()


def test_a_store_that_drops_every_other_write_is_caught_and_the_sessions_named(outputs, capsys):
    assert main(["run", "--sample", "conv-26@s3", "--system", DROPS, "--limit", "3"]) == 1
    err = capsys.readouterr().err
    assert "LOST WRITES" in err and "the count fell short of the writes in session(s) 1-3" in err


def test_lost_since_the_ingestion_is_told_from_lost_during_it(outputs, capsys):
    assert main(["ingest", "--sample", "conv-26@s2", "--system", "bm25"]) == 0
    out = capsys.readouterr().out
    folder = _ingestion(out)
    held = folder.manifest()["held_check"]
    assert held["held"] == held["acknowledged"] > 0 and held["problem"] is None
    db = sqlite3.connect(folder.path / "memories.sqlite")
    with db:
        db.execute("DELETE FROM memories WHERE dia_id = 'D1:3'")
    db.close()
    assert main(["verify", "--sample", "conv-26@s2", "--system", "bm25"]) == 1
    err = capsys.readouterr().err
    assert (f"bm25 holds {held['held'] - 1} of the {held['acknowledged']} memories it acknowledged for conv-26 "
            f"(lost since its ingestion, after which it held {held['held']})") in err
    assert main(["ingest", "--sample", "conv-26@s2", "--system", "bm25"]) == 1
    err = capsys.readouterr().err
    assert f"it held {held['held']} after them (it lost data since)" in err


class Compressing(OneKeyPerSpeaker):
    """The same store, declared as what it is: it keeps one line per speaker (a transformer)."""

    transforms = "a summariser: one line per speaker"


def test_a_system_that_declares_it_transforms_reports_its_figures_with_the_declaration(dataset_path, tmp_path):
    conv = get_conversation(load_dataset(dataset_path), "conv-26")
    folder = RunFolder("t", root=tmp_path)
    with Compressing(tmp_path / "store") as system:
        ingest_conversations(system, [conv], folder)
        check = check_writes(system, folder, [conv])
    assert (check["held"], check["acknowledged"], check["lost"], check["problem"]) == (2, 419, False, None)
    assert check["declaration"] == "transforms what it is given (a summariser: one line per speaker)"


def test_fell_short_and_spans():
    records = {1: {"observations": 3, "held_after": 3}, 2: {"observations": 3, "held_after": 4},
               3: {"observations": 2, "held_after": 6}, 4: {"observations": 5, "held_after": 6}}
    assert fell_short(records) == [2, 4]
    assert fell_short({1: {"observations": 3}, 2: {"observations": 3, "held_after": 1}}) == []  # uncounted first
    assert spans([1, 2, 3, 7, 9, 10]) == "1-3, 7, 9-10"


def _report_head(out: str) -> str:
    report = next(line.split()[1] for line in out.splitlines() if line.startswith("report:"))
    return open(report, encoding="utf-8").read().split("## ")[0]


def test_the_report_says_how_retrieved_memories_were_traced(outputs, capsys):
    assert main(["run", "--sample", "conv-26@s2", "--system", "bm25", "--limit", "5"]) == 0
    head = _report_head(capsys.readouterr().out)
    assert "(retrieved memories traced to turns: 100.0% (" in head and "by turn ids from the system, 0 by the text " \
                                                                     "rule, 0 not placed)" in head


def test_evidence_recall_is_not_measured_where_nothing_retrieved_could_be_placed(outputs, capsys):
    code = main(["run", "--sample", "conv-26@s2", "--system", "support.broken_systems:Unplaceable", "--limit", "5"])
    captured = capsys.readouterr()
    head = _report_head(captured.out)
    assert "evidence within the 1,000-token context: not measured (none of the" in head
    assert "retrieved memories could be placed on a LoCoMo turn" in head and "0.0%" not in head
    run = next(line.split()[1] for line in captured.out.splitlines() if line.startswith("report:"))
    scores = [json.loads(line) for line in open(run.replace("report.md", "scores.jsonl"), encoding="utf-8")]
    measured = [s for s in scores if s["category"] != 5 and s["coverage_method"] != "no-evidence"]
    assert measured and all(s["evidence_recall"] is None and s["coverage_method"].startswith("not measured")
                            and s["trace"]["none"] == s["trace"]["retrieved"] > 0 for s in measured)
    assert code == 0  # F1 is measured; only the evidence figures are not


def test_read_your_writes_for_any_system_the_same_turns_for_each(outputs, capsys, dataset_path):
    assert main(["ingest", "--sample", "conv-26@s3", "--system", "bm25"]) == 0
    out = capsys.readouterr().out
    probe = _ingestion(out).manifest()["read_your_writes"]
    assert "its own writes: 10 of 10 sampled turns found by searching their own words" in out
    assert (probe["sampled"], probe["found"], probe["missed"], probe["warning"]) == (10, 10, [], None)

    assert main(["ingest", "--sample", "conv-26@s3", "--system", "support.broken_systems:Unplaceable"]) == 0
    out = capsys.readouterr().out
    probe = _ingestion(out).manifest()["read_your_writes"]
    sampled = [t.dia_id for t in sampled_turns(select(load_dataset(dataset_path), "conv-26@s3")[0])]
    assert probe["found"] == 0 and probe["missed"] == [f"conv-26 {d}" for d in sampled]  # the same turns as bm25's
    assert f"WARNING: READ-YOUR-WRITES: support.broken_systems:Unplaceable returned only 0 of {len(sampled)}" in out
    assert f"not found: conv-26 {sampled[0]}" in out
