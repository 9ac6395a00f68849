"""The question explorer across runs as a user sees it, in Debian's headless Chromium (tests/chromium.py):
the page `locomo-kit leaderboard --systems memworker,bm25,dense --sample conv-26` writes, and the page of
`locomo-kit compare RUN RUN`; every filter count checked against the runs' scores.jsonl."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from locomo_kit.cli import main
from locomo_kit.reports.runs_explorer import page_payload
from locomo_kit.runs import RunFolder

from support.chromium import Opened

pytestmark = pytest.mark.integration


def right_by_f1(run: RunFolder) -> dict[tuple[str, int], bool]:
    """Right (official F1 ≥ 0.5, the basis of unjudged runs) per question of categories 1-4, from scores.jsonl."""
    recs = [json.loads(line) for line in (run.path / "scores.jsonl").read_text().splitlines() if line.strip()]
    key = recs[-1]["config_key"]
    return {(r["sample_id"], r["question_index"]): r["locomo_f1"] >= 0.5 for r in recs
            if r["config_key"] == key and r.get("gold_key", "original") == "original" and r["category"] != 5}


@pytest.fixture(scope="module")
def board(tmp_path_factory, dataset_path, browser):  # browser first: a skip costs nothing
    out = tmp_path_factory.mktemp("board-outputs")
    mp = pytest.MonkeyPatch()
    mp.setenv("LOCOMO_OUTPUTS_DIR", str(out))
    mp.setenv("LOCOMO_EMBEDDER", "hashing")
    mp.setenv("CI", "1")
    try:
        assert main(["leaderboard", "--systems", "memworker,bm25,dense", "--sample", "conv-26"]) == 0
        folder = next((out / "leaderboards").iterdir())
        result = json.loads((folder / "leaderboard.json").read_text())
        runs = [RunFolder(r["run_id"]) for r in result["rows"]]
        rights = [right_by_f1(r) for r in runs]
    finally:
        mp.undo()
    return folder, result, rights


def open_explorer(browser, path: Path) -> Opened:
    opened = Opened(browser, path)
    opened.page.wait_for_selector("#questions-across-runs[data-ready='1']", timeout=30_000)
    return opened


def shown(opened: Opened) -> int:
    return opened.page.locator("#runs-rows tr.row").count()


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
