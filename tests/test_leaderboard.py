"""``locomo-kit leaderboard``: the fast offline systems on conv-26, reuse, budgets, failures, the paired statistics;
the question explorer of its page (and of ``compare``'s) in Chromium, over the same runs."""

from __future__ import annotations

import csv
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from locomo_kit.cli import main
from locomo_kit.pipeline.leaderboard import LeaderboardError, parse_systems
from locomo_kit.reports.comparison import compare
from locomo_kit.reports.leaderboard_page import QUOTED, leaderboard_html, leaderboard_lines
from locomo_kit.reports.runs_explorer import page_payload
from locomo_kit.reports.summary import summarize_run
from locomo_kit.runs import RunFolder
from locomo_kit.runs.records import load_answers
from locomo_kit.scoring.rules import default_verdict
from locomo_kit.testing.same_results import results

from support.chromium import Opened
from support.runs import interruptible, offline_outputs

FAST = "memworker,bm25,dense"


def test_the_systems_list_is_checked_before_any_work():
    entries = parse_systems("memworker, bm25,claude-mem=http://127.0.0.1:37777")
    assert [e.spec for e in entries] == ["memworker", "bm25", "claude-mem=http://127.0.0.1:37777"]
    named = parse_systems("mcp:server-memory,mcp:profiles/mine.toml,mypackage.adapter:MySystem")  # found when run
    assert [e.system().name for e in named] == ["mcp:server-memory", "mcp:profiles/mine.toml",
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


# -- the question explorer across runs as a user sees it, in Debian's headless Chromium (tests/support/chromium.py):
# the page the leaderboard writes, and the page of `locomo-kit compare RUN RUN`; every filter count checked against
# the runs' scores.jsonl

def right_by_f1(run: RunFolder) -> dict[tuple[str, int], bool]:
    """Right (the default rule-based basis of unjudged runs: official F1 ≥ 0.5 with yes/no polarity) per question
    of categories 1-4, from answers.jsonl."""
    recs = [json.loads(line) for line in (run.path / "scores.jsonl").read_text().splitlines() if line.strip()]
    key = recs[-1]["config_key"]
    f1 = {(r["sample_id"], r["question_index"]): r["locomo_f1"] for r in recs
          if r["config_key"] == key and r.get("gold_key", "original") == "original" and r["category"] != 5}
    return {q: default_verdict(a["prediction"], a["gold"], a["category"], f1[q]) for a in load_answers(run)
            if (q := (a["sample_id"], a["question_index"])) in f1}


@pytest.fixture(scope="module")
def board(outputs, browser):  # browser first: a skip costs nothing
    """The leaderboard of the fast systems at the one default budget: its runs are the ones the leaderboard test
    above made (reused here), or made here when this test runs alone."""
    assert main(["leaderboard", "--systems", FAST, "--sample", "conv-26"]) == 0
    folder, result = _board(outputs, "-b1000-memworker-bm25-dense")
    runs = [RunFolder(r["run_id"]) for r in result["rows"]]
    return folder, result, [right_by_f1(r) for r in runs]


def open_explorer(browser, path: Path) -> Opened:
    opened = Opened(browser, path)
    opened.page.wait_for_selector("#questions-across-runs[data-ready='1']", timeout=30_000)
    return opened


def shown(opened: Opened) -> int:
    return opened.page.locator("#runs-rows tr.row").count()


@pytest.mark.integration  # Debian's Chromium
def test_the_leaderboard_page_holds_every_question_and_its_flip_filter_matches_the_table(board, browser):
    folder, result, rights = board
    opened = open_explorer(browser, folder / "report.html")
    page = opened.page
    assert opened.errors == [] and opened.requests == []
    assert shown(opened) == 152 and page.locator("#runs-count").text_content() == "152 of 152 questions"
    names = page.locator("#runs-table th.run").all_text_contents()
    assert names == [r["system"] for r in result["rows"]] and len(names) == 3
    assert page.locator("#runs-rows tr.row").first.locator("td").count() == 5 + 2 * 3
    md = (folder / "leaderboard.md").read_text()
    assert len(result["flips"]) == 3  # every two systems at the one budget
    for f in result["flips"]:
        a, b = rights[f["a"]], rights[f["b"]]
        assert f["only_a"] == sum(a[q] and not b[q] for q in a)  # the table is the records'
        assert f"| {f['run_a']} | {f['run_b']} | 152 | {f['both']} | {f['only_a']} | {f['only_b']} |" in md
        page.select_option("#r-right", str(f["a"]))
        page.select_option("#r-wrong", str(f["b"]))
        assert shown(opened) == f["only_a"]
        page.select_option("#r-right", str(f["b"]))
        page.select_option("#r-wrong", str(f["a"]))
        assert shown(opened) == f["only_b"]
        assert page.locator("#runs-count").text_content() == f"{f['only_b']} of 152 questions"
    page.select_option("#r-right", "")
    page.select_option("#r-wrong", "")
    page.select_option("#r-across", "wrong-all")
    assert shown(opened) == sum(not any(r[q] for r in rights) for q in rights[0])
    page.select_option("#r-across", "only:1")
    assert shown(opened) == sum(rights[1][q] and not rights[0][q] and not rights[2][q] for q in rights[0])
    page.select_option("#r-across", "")
    data = page_payload((folder / "report.html").read_text())
    for why in ("memory", "answerer"):
        page.select_option("#r-why", f"{why}:0")
        expected = sum(q["cells"][0]["outcome"]["original"]["failure"] == why for q in data["questions"])
        assert shown(opened) == expected > 0
    page.select_option("#r-why", "")
    page.select_option("#r-category", "1")
    assert shown(opened) == sum(q["category"] == 1 for q in data["questions"]) == 32
    page.select_option("#r-category", "")
    assert opened.errors == []
    page.close()


@pytest.mark.integration  # Debian's Chromium
def test_a_row_opens_to_every_run_side_by_side(board, browser):
    folder, result, rights = board
    opened = open_explorer(browser, folder / "report.html")
    page = opened.page
    data = page_payload((folder / "report.html").read_text())
    # a question the first system gets right and another misses, with an audited gold answer when there is one
    q = next((q for q in data["questions"] if q["gold_changed"] and q["cells"][0]["outcome"]["original"]["correct"]
              and not q["cells"][1]["outcome"]["original"]["correct"]),
             next(q for q in data["questions"] if q["cells"][0]["outcome"]["original"]["correct"]))
    page.fill("#r-text", q["question"])
    page.locator(f"#runs-rows tr.row[data-id='{q['sample_id']}:{q['question_index']}']").click()
    detail = page.locator("#runs-rows tr.detail-row")
    assert detail.count() == 1
    boxes = detail.locator(".run-detail")
    assert boxes.count() == 3
    text = detail.inner_text()
    assert q["question"] in text and str(q["gold"]) in text and "gold (audited)" in text
    for i, cell in enumerate(q["cells"]):
        box = boxes.nth(i)
        assert box.locator("h4.run-name").text_content() == result["rows"][i]["system"]
        assert cell["prediction"] in box.inner_text() and "official F1" in box.inner_text()
        assert box.locator("ol.memories > li").count() == len(cell["retrieved"])
        marked = sum(bool(set(data["memories"][r["m"]]["source_turns"]) & set(q["evidence"])) for r in cell["retrieved"])
        assert box.locator("ol.memories > li.evidence").count() == marked
    page.fill("#r-text", "")
    page.evaluate("() => document.getElementById('questions-across-runs').scrollIntoView()")
    page.mouse.move(0, 0)
    shot = folder / "questions-across-runs.png"
    page.screenshot(path=str(shot))
    assert shot.stat().st_size > 20_000 and opened.errors == []
    page.close()


@pytest.mark.integration  # Debian's Chromium
def test_the_compare_page_has_the_same_explorer(report_runs, browser, tmp_path):
    runs = [report_runs.default, report_runs.top_k]
    out = tmp_path / "cmp"
    assert main(["compare", str(runs[0].path), str(runs[1].path), "--out", str(out)]) == 0
    result = json.loads((out / "compare.json").read_text())
    opened = open_explorer(browser, out / "compare.html")
    page = opened.page
    assert opened.errors == [] and opened.requests == []
    assert shown(opened) == 152 and page.locator("#runs-table th.run").all_text_contents() == ["A", "B"]
    a, b = right_by_f1(runs[0]), right_by_f1(runs[1])
    f = result["flips"][0]
    page.select_option("#r-right", "0")
    page.select_option("#r-wrong", "1")
    assert shown(opened) == f["only_a"] == sum(a[q] and not b[q] for q in a)
    page.select_option("#r-right", "1")
    page.select_option("#r-wrong", "0")
    assert shown(opened) == f["only_b"] == sum(b[q] and not a[q] for q in a)
    assert page.locator("h2", has_text="Flips").count() == 1
    assert page.evaluate("() => [...document.images].filter(i => i.complete && i.naturalWidth > 400).length") == 2
    page.close()


# -- the main table at 1,400 px: every column on screen, the latency and context columns included

TAIL = ("ingest s", "search p50 ms", "search p95 ms", "context tokens")


def assert_measured_table_fits(opened: Opened) -> None:
    """The table under "Measured here" scrolls nowhere and each of its tail columns lies inside the 1,400 px window."""
    page = opened.page
    table = page.locator("h2:has-text('Measured here') ~ table").first
    scroll, client = table.evaluate("t => [t.scrollWidth, t.clientWidth]")
    assert scroll <= client, f"the table is {scroll} px wide in a {client} px box: columns hidden behind a scroll"
    width = page.viewport_size["width"]
    assert width == 1400
    headers = {th.text_content(): th.bounding_box() for th in table.locator("thead th").all()}
    for name in TAIL:
        box = headers[name]
        assert box and box["width"] > 0 and 0 <= box["x"] and box["x"] + box["width"] <= width, (name, box)


@pytest.mark.integration  # Debian's Chromium
def test_the_leaderboards_main_table_fits_a_1400_px_window(board, browser):
    folder, result, _ = board
    opened = Opened(browser, folder / "report.html")
    assert opened.errors == []
    assert_measured_table_fits(opened)
    opened.page.close()


@pytest.mark.integration  # Debian's Chromium
def test_the_widest_measured_table_fits_too(browser, tmp_path):
    """Five systems with long names, three judge protocols (the most columns the table has), the largest numbers."""
    rows = []
    for i in range(5):
        rows.append({"system": f"mem0 2.2.1 (Mem0 without LLM extraction, variant {i}) at http://127.0.0.1:3777{i}",
                     "status": "ok" if i else "PARTIAL", "budget": 16000, "questions": 1540, "evidence_recall": 99.9,
                     "traced": 100.0, "recall@10": 99.9, "session_recall@10": 100.0, "session_recall@10_chance": 100.0,
                     "session_hit@5": 100.0, "session_hit@5_chance": 100.0, "sessions_retrieved": 10.0,
                     "locomo_f1": 100.0, "mem0_f1": 100.0, "j_mem0": 100.0, "j_strict": 100.0, "j_playbook": 100.0,
                     "ingest_s": 123456.7, "search_p50_ms": 12345.67, "search_p95_ms": 123456.78,
                     "context_tokens": 123456.0})
    md = tmp_path / "leaderboard.md"
    md.write_text("\n".join(["# wide", "", "## Measured here", ""] + leaderboard_lines(rows) + [""]), encoding="utf-8")
    opened = Opened(browser, leaderboard_html(md, "wide"))
    assert opened.errors == [] and opened.page.locator("h2:has-text('Measured here') ~ table thead th").count() == 17
    assert_measured_table_fits(opened)
    opened.page.close()


# -- --jobs: the systems in processes of their own give the runs and records of one after another; Ctrl-C stops
# every job and a rerun completes them

JOBS_ARGS = ["leaderboard", "--systems", "memworker,bm25", "--sample", "conv-30", "--sessions", "6", "--limit", "4"]


def _results(outputs: Path) -> dict[str, object]:
    """Every run's answers and scores, every ingestion's latest record per session, and the leaderboard's rows,
    without the times (the only fields that differ between two runs of the same configuration)."""
    return results(outputs)


@pytest.fixture(scope="module")
def one_after_another(tmp_path_factory, dataset_path):
    with offline_outputs(tmp_path_factory.mktemp("jobs1")) as out:
        assert main([*JOBS_ARGS, "--jobs", "1"]) == 0
        return _results(out)


def test_jobs_2_makes_the_runs_and_records_of_jobs_1(one_after_another, tmp_path, capsys):
    with offline_outputs(tmp_path / "outputs") as out:
        assert main([*JOBS_ARGS, "--jobs", "2"]) == 0
        printed = capsys.readouterr().out
        assert _results(out) == one_after_another
    assert "memworker | done in" in printed and "bm25      | done in" in printed  # one line per system


def test_a_parallel_job_has_the_embedded_worker_embed_on_one_thread_unless_the_user_chose(monkeypatch):
    import locomo_kit.pipeline.leaderboard as board

    seen = []
    monkeypatch.setattr(board, "run_system", lambda entry, **kw: seen.append(os.environ.get("MEMWORKER_EMBED_THREADS"))
                        or board.SystemOutcome(entry))
    settings = board.BoardSettings(sample="conv-30", retrievals=(), answerer=None, judge=None, calls=None)
    entry = parse_systems("memworker")[0]
    monkeypatch.delenv("MEMWORKER_EMBED_THREADS", raising=False)
    board.system_job(entry, settings=settings)
    monkeypatch.setenv("MEMWORKER_EMBED_THREADS", "2")
    board.system_job(entry, settings=settings)
    assert seen == ["1", "2"]


def test_ctrl_c_stops_every_job_and_a_rerun_completes_them(one_after_another, tmp_path):
    """SIGINT to the command (as Ctrl-C sends it) once both systems' jobs have started: it exits 130 with no job
    process left; the same command again finishes, with the records of an uninterrupted run."""
    with offline_outputs(tmp_path / "outputs") as out:
        proc = subprocess.Popen([sys.executable, "-m", "locomo_kit", *JOBS_ARGS, "--jobs", "2"], text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=os.environ.copy(),
                                preexec_fn=interruptible)
        seen = []
        for line in proc.stdout:  # interrupt once both jobs have started (a loaded machine reads these lines late:
            seen.append(line)    # a later line may come after the small jobs ended)
            if "".join(seen).count("| started") == 2:
                break
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=120)
        assert proc.returncode == 130, "".join(seen) + rest
        assert "interrupted; rerun the same command to resume" in rest
        assert not (out / "leaderboards").exists()  # no table from an interrupted leaderboard
        memworker_runs = (out / "runs").glob("*-transcript-embedded-*-q4-*")
        assert not any((r / "report.md").exists() for r in memworker_runs), "memworker's run ended before the SIGINT"
        assert not _left_running(out), [_cmdline(p) for p in _left_running(out)]  # no job, nor its Worker
        assert main([*JOBS_ARGS, "--jobs", "2"]) == 0
        assert _results(out) == one_after_another


def _left_running(out: Path, wait_s: float = 30.0) -> list[Path]:
    """The processes still running on ``out`` after up to ``wait_s`` seconds: a job's Worker stops itself once its
    job has gone (it watches its parent), as it does when a run alone is interrupted."""
    deadline = time.monotonic() + wait_s
    while True:
        left = [p for p in Path("/proc").iterdir() if p.name.isdigit() and str(out) in _cmdline(p)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""
