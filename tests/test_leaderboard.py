"""``locomo-kit leaderboard``: the fast offline systems on conv-26, reuse, budgets, failures, the paired statistics."""

from __future__ import annotations

import csv
import json
import socket

import pytest

from locomo_kit.cli import main
from locomo_kit.pipeline.leaderboard import QUOTED, LeaderboardError, parse_systems
from locomo_kit.reports.comparison import compare
from locomo_kit.reports.summary import summarize_run
from locomo_kit.runs import RunFolder

from support.runs import offline_outputs

FAST = "memworker,bm25,dense"


def test_the_systems_list_is_checked_before_any_work():
    entries = parse_systems("memworker, bm25,claude-mem=http://127.0.0.1:37777")
    assert [e.spec for e in entries] == ["memworker", "bm25", "claude-mem=http://127.0.0.1:37777"]
    named = parse_systems("mcp:server-memory,mcp:profiles/mine.toml,mypackage.adapter:MySystem")  # found when run
    assert [e.run_kwargs()["system"] for e in named] == ["mcp:server-memory", "mcp:profiles/mine.toml",
                                                         "mypackage.adapter:MySystem"]
    for bad, why in (("memworker,nosuch", "unknown memory system 'nosuch'"), ("bm25,bm25", "named twice"),
                     ("claude-mem", "needs its Worker's URL"), ("bm25=http://x", "runs without a URL"), (" , ", "no system")):
        with pytest.raises(LeaderboardError, match=why):
            parse_systems(bad)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory, dataset_path):
    with offline_outputs(tmp_path_factory.mktemp("outputs"), LOCOMO_WORKER_RESTART_WINDOW="0") as out:
        yield out


def _board(outputs, name_part: str):
    folder = next(p for p in (outputs / "leaderboards").iterdir() if name_part in p.name)
    return folder, json.loads((folder / "leaderboard.json").read_text())


def test_every_system_on_the_same_questions_with_both_budgets_and_the_curve(outputs, capsys):
    assert main(["leaderboard", "--systems", FAST, "--sample", "conv-26", "--context-budget", "500,1000"]) == 0
    folder, board = _board(outputs, "b500-1000")
    rows = board["rows"]
    assert [(r["system"].split()[0], r["budget"]) for r in rows] == [(s, b) for s in FAST.split(",") for b in (500, 1000)]
    assert all(len(r["system"].split()) == 2 for r in rows)  # named with its version
    assert {r["questions"] for r in rows} == {152} and {r["answerer"] for r in rows} == {"extractive"}
    for r in rows:  # each row is its run's own figures
        s = summarize_run(RunFolder(r["run_id"]))
        overall = next(d for d in s["diagnostics"] if d["category"] == "overall")
        assert r["evidence_recall"] == pytest.approx(overall["recall_all"])
        assert r["session_recall@10"] == pytest.approx(100 * overall["sessions"]["recall"]["@10"])
        assert s["manifest"]["answer"]["context_budget"] == r["budget"]
        assert r["ingest_s"] and r["ingest_s"] > 0 and r["search_p95_ms"] >= r["search_p50_ms"] > 0
    # the paired differences are compare()'s, against the first system at the same budget
    first = [r for r in rows if r["budget"] == 1000]
    result = compare([r["run_id"] for r in first])
    f1 = next(x for x in result["rows"] if x["category"] == "overall" and x["metric"] == "locomo_f1")
    mine = [p for p in board["paired"] if p["budget"] == 1000 and p["metric"] == f1["label"]]
    assert [p["system"] for p in mine] == [r["system"] for r in first[1:]]
    assert [p["diff"] for p in mine] == pytest.approx([c["diff"] for c in f1["comparisons"]])
    md = (folder / "leaderboard.md").read_text()
    assert "Not every system" not in md and f"## Published ({QUOTED})" in md and "MemPalace" in md
    for name in ("leaderboard.csv", "leaderboard.png", "curve.png", "curve.md", "report.html"):
        assert (folder / name).stat().st_size > 500, name
    html = (folder / "report.html").read_text()
    assert "data:image/png;base64," in html and "Paired differences against the first system" in html
    table = list(csv.DictReader((folder / "leaderboard.csv").open()))
    assert sum(t["measured"] == "measured here" for t in table) == 6
    assert any(t["measured"] == QUOTED and t["system"] == "Mem0" for t in table)
    assert "leaderboard:" in capsys.readouterr().out

    # again: the six runs are reused, nothing is answered again
    answers = {r["run_id"]: (RunFolder(r["run_id"]).path / "answers.jsonl").read_text() for r in rows}
    assert main(["leaderboard", "--systems", FAST, "--sample", "conv-26", "--context-budget", "1000,500"]) == 0
    assert capsys.readouterr().out.count("), not run again") == 6
    assert all((RunFolder(r).path / "answers.jsonl").read_text() == a for r, a in answers.items())


def test_a_failed_system_makes_the_command_fail_and_heads_the_table(outputs, capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once closed
    assert main(["leaderboard", "--systems", f"memworker,claude-mem=http://127.0.0.1:{port}", "--sample", "conv-26",
                 "--context-budget", "1000"]) == 1
    err = capsys.readouterr().err
    assert f"claude-mem=http://127.0.0.1:{port}" in err
    folder, board = _board(outputs, "memworker-claude-mem")
    md = (folder / "leaderboard.md").read_text()
    assert md.split("\n")[2].startswith("> **Not every system has a complete result:** **claude-mem=")
    assert [r["system"].split()[0] for r in board["rows"]] == ["memworker"] and board["failed"]
    assert "Only one system has results" in md


def test_limit_reaches_every_run_and_names_the_leaderboard(own_outputs, dataset_path, capsys):
    """--limit N: each system answers only the first N questions, in runs (and a leaderboard) of their own."""
    from locomo_kit.cli import main

    assert main(["leaderboard", "--systems", "bm25", "--sample", "conv-30", "--limit", "5"]) == 0
    (board,) = (own_outputs / "leaderboards").glob("*/leaderboard.json")
    assert board.parent.name.startswith("conv-30-q5-")
    (row,) = json.loads(board.read_text())["rows"]
    assert row["questions"] == 5 and "-q5-" in row["run_id"]


def test_a_system_that_retrieves_nothing_is_not_a_result_on_the_leaderboard(own_outputs, dataset_path, capsys):
    """As `run` exits 1 when no memory was retrieved for any question, so does the leaderboard, naming why."""
    from locomo_kit.cli import main

    code = main(["leaderboard", "--systems", "bm25,support.broken_systems:ExactTextOnly", "--sample", "conv-30",
                 "--limit", "5"])
    out, err = capsys.readouterr()
    assert code == 1 and "no memory was retrieved for any of 5 questions" in err
    (board,) = (own_outputs / "leaderboards").glob("*/leaderboard.md")
    text = board.read_text()
    assert text.index("Not every system has a complete result") < text.index("## Measured here")
    assert "no memory was retrieved for any of 5 questions" in text
    rows = json.loads(board.with_suffix(".json").read_text())["rows"]
    assert [r["status"] for r in rows] == ["ok", "PARTIAL"]
