"""report.html and compare.html without a browser: self-contained, the same sections as the markdown,
and the explorer's data built from the run folder's records (tests/test_browser.py opens the pages)."""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from locomo_kit.llm import ScriptedLLM
from locomo_kit.llm.execute import CallSettings
from locomo_kit.pipeline.stages import load, run_judge, run_report
from locomo_kit.reports import questions
from locomo_kit.reports.comparison import compare, write_comparison
from locomo_kit.reports.html import Rendered, render_markdown, render_page
from locomo_kit.runs import RunFolder
from locomo_kit.settings import Judge


class _Refs(HTMLParser):
    """Every URL a page would load (src, href of <link>, <script src>) and every <script> tag."""

    def __init__(self) -> None:
        super().__init__()
        self.loads: list[str] = []
        self.links: list[str] = []
        self.scripts: list[dict] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            self.scripts.append(a)
        if "src" in a:
            self.loads.append(a["src"])
        if tag == "link":
            self.loads.append(a.get("href", ""))
        if tag == "a":
            self.links.append(a.get("href", ""))


def refs(html: str) -> _Refs:
    p = _Refs()
    p.feed(html)
    return p


def explorer_data(html: str) -> dict:
    m = re.search(r'<script type="application/json" id="explorer-data">(.*?)</script>', html, re.S)
    assert m, "no explorer data in the page"
    return json.loads(m.group(1))


def assert_self_contained(html: str) -> None:
    r = refs(html)
    assert r.loads, "the page inlines its figures"
    assert all(u.startswith("data:") for u in r.loads), [u[:60] for u in r.loads if not u.startswith("data:")]
    assert all(not s.get("src") for s in r.scripts)
    assert not re.search(r"@import|url\((?!data:)", html), "a stylesheet refers to something outside the page"
    assert all(h.startswith(("#", "http")) for h in r.links), r.links


def test_make_runs_run_writes_report_html_beside_report_md(report_runs):
    run = report_runs.default
    html = (run.path / "report.html").read_text(encoding="utf-8")
    assert run.manifest()["report"]["html"] == str(run.path / "report.html")
    assert_self_contained(html)
    figures = sorted(p.name for p in (run.path / "figures").glob("*.png"))
    assert len(figures) == 5 and html.count('<img src="data:image/png;base64,') == len(figures)
    # the same sections as report.md, in the same order
    md_headings = re.findall(r"^#{1,3} (.+)$", (run.path / "report.md").read_text(encoding="utf-8"), re.M)
    html_headings = [re.sub(r"<[^>]+>", "", h) for h in re.findall(r"<h[123][^>]*>(.*?)</h[123]>", html)]
    assert html_headings[:len(md_headings)] == [h.replace("**", "").replace("`", "") for h in md_headings]
    assert html_headings[len(md_headings):] == ["Question explorer"]
    assert "extractive floor" in html and "<table>" in html


def test_the_explorer_data_is_the_run_folders_records(report_runs, dataset_path):
    run = report_runs.default
    conversations, _ = load("conv-26")
    data = explorer_data((run.path / "report.html").read_text(encoding="utf-8"))
    assert data == json.loads(json.dumps(questions.explorer_data(run, conversations)))
    rows = data["rows"]
    assert len(rows) == 152 and data["gold_keys"] == ["original", "audited"]
    answers = {(a["sample_id"], a["question_index"]): a for a in map(json.loads, (run.path / "answers.jsonl").open())}
    scores = {(s["sample_id"], s["question_index"], s["gold_key"]): s for s in map(json.loads, (run.path / "scores.jsonl").open())}
    for row in rows:
        q = (row["sample_id"], row["question_index"])
        a = answers[q]
        assert (row["question"], row["gold"], row["prediction"]) == (a["question"], a["gold"], a["prediction"])
        for key in ("original", "audited"):
            s = scores[(*q, key)]
            assert row["scores"][key]["locomo_f1"] == s["locomo_f1"] and row["scores"][key]["mem0_f1"] == s["mem0_f1"]
            assert row["gold_changed"] == scores[(*q, "audited")]["gold_changed"]
        # the retrieved memories in order, the evidence among their source turns marked
        assert [data["memories"][r["m"]]["content"] for r in row["retrieved"]] == [m["content"] for m in a["retrieved"]]
        for r, m in zip(row["retrieved"], a["retrieved"]):
            assert r["evidence"] == sorted(set(m["source_turns"]) & (set(row["evidence"]) | set(row["evidence_audited"])))
        original = row["scores"]["original"]
        if not original["correct"] and original["coverage"] is not None:
            assert original["failure"] == ("answerer" if original["coverage"] > 0 else "memory")
        else:
            assert original["failure"] is None
        for ev in row["evidence"]:
            assert f"{row['sample_id']} {ev}" in data["turns"] or ev not in {t for c in conversations for t in c.turn_index()}
    changed = [r for r in rows if r["gold_changed"]]
    assert len(changed) == 15 and all(r["gold_audited"] and r["gold_audited"] != r["gold"] for r in changed)
    # the failure split agrees with the report's error analysis
    md = (run.path / "report.md").read_text(encoding="utf-8")
    memory = sum(r["scores"]["original"]["failure"] == "memory" for r in rows)
    answerer = sum(r["scores"]["original"]["failure"] == "answerer" for r in rows)
    assert f"**{memory}** had none of their evidence" in md and f"**{answerer}** had some of it" in md


def test_judge_runs_and_their_explanations_reach_the_explorer(report_runs, tmp_path):
    source = report_runs.default
    copy = RunFolder("judged", root=tmp_path)
    shutil.copytree(source.path, copy.path)
    reply = iter([json.dumps({"explanation": f"reason {i}", "label": "CORRECT" if i % 3 else "WRONG"}) for i in range(10_000)])
    judge = Judge(protocol="mem0", runs=2, calibration_size=0, llm=ScriptedLLM(lambda s, p: next(reply), model="judge-x"))
    run_judge(copy, judge=judge, calls=CallSettings(progress=False))
    run_report(copy, sample="conv-26")
    data = explorer_data((copy.path / "report.html").read_text(encoding="utf-8"))
    assert data["judge_protocols"] == ["mem0"]
    row = data["rows"][0]
    (j,) = row["judgements"]["original"]
    assert j["protocol"] == "mem0" and j["judge_model"] == "fake/judge-x" and j["n_runs"] == 2 and len(j["runs"]) == 2
    assert all(r["explanation"].startswith("reason ") and r["score"] in (0.0, 1.0) for r in j["runs"])
    assert row["scores"]["original"]["basis"] == "mem0 label (majority of runs)"
    assert row["scores"]["original"]["j"]["mem0"] == j["mean"]
    html = (copy.path / "report.html").read_text(encoding="utf-8")
    assert 'data-sort="j:mem0"' in html


def test_text_from_the_data_cannot_break_out_of_the_page():
    hostile = "</script><script>alert(1)</script><img src=x onerror=alert(2)>"
    rows = [{"sample_id": "s", "question_index": 0, "category": 1, "category_name": "multi-hop", "question": hostile,
             "gold": hostile, "gold_audited": None, "gold_changed": False, "audit_error": None, "adversarial_answer": None,
             "evidence": [], "evidence_audited": [], "prediction": hostile, "search_ms": 1.0, "context_tokens": 1,
             "scores": {"original": None, "audited": None}, "judgements": {"original": [], "audited": []}, "retrieved": []}]
    page = render_page("t", render_markdown(f"# {hostile}\n\n{hostile}\n\n| a |\n|---|\n| {hostile} |\n", Path(".")),
                       {"rows": rows, "memories": [], "turns": {}, "gold_keys": ["original"], "judge_protocols": []})
    r = refs(page)
    assert len(r.scripts) == 3 and r.loads == ["data:,"]  # the shared ui, the explorer's data and script; the empty favicon
    assert "<script>alert" not in page and "<img src=x" not in page
    assert explorer_data(page)["rows"][0]["question"] == hostile


def test_a_missing_or_remote_figure_is_named_not_loaded(tmp_path):
    body = render_markdown("![a](figures/none.png)\n\n![b](https://example.org/b.png)\n", tmp_path)
    page = render_page("t", body)
    assert "figure not found: figures/none.png" in page and "figure not found: https://example.org/b.png" in page
    assert refs(page).loads == ["data:,"] and isinstance(body, Rendered)


def test_compare_writes_compare_html(report_runs, tmp_path):
    result = compare([str(report_runs.default.path), str(report_runs.top_k.path)])
    paths = write_comparison(result, tmp_path / "cmp")
    html = paths["html"].read_text(encoding="utf-8")
    assert paths["html"] == tmp_path / "cmp" / "compare.html"
    assert_self_contained(html)
    # the comparison figure and the questions-by-run figure; the cross-run explorer, not one run's
    assert html.count('<img src="data:image/png;base64,') == 2 and 'id="runs-data"' in html and "explorer-data" not in html
    for heading in ("Runs", "Verdict", "Paired table"):
        assert f">{heading}</h2>" in html
    assert report_runs.top_k.run_id in html


@pytest.mark.parametrize("name", ["page.html.j2", "explorer.html.j2", "explorer.js", "report.css"])
def test_the_page_assets_ship_with_the_package(name):
    from importlib.resources import files

    assert files("locomo_kit.reports").joinpath("templates", name).is_file()


def test_the_inline_style_and_script_are_the_files_verbatim(report_runs):
    """Inlined unescaped: an HTML-escaped quote in a <style> or <script> would silently break it."""
    from importlib.resources import files

    html = (report_runs.default.path / "report.html").read_text(encoding="utf-8")
    for name in ("report.css", "explorer.js"):
        text = files("locomo_kit.reports").joinpath("templates", name).read_text(encoding="utf-8")
        assert text.strip() in html, name


def test_the_run_facts_table_has_a_header_and_no_settings_dump(report_runs):
    """The page's run facts: a header row that names its columns, one row per setting of the system (no line of
    JSON), the kit's retrieval apart from the system's own options."""
    html = (report_runs.default.path / "report.html").read_text(encoding="utf-8")
    section = html[html.index('id="run-facts"'):]
    table = section[section.index("<table>"):section.index("</table>")]
    assert re.findall(r"<th>(.*?)</th>", table) == ["fact", "value"]
    rows = re.findall(r"<tr>\s*<td>(.*?)</td>\s*<td>(.*?)</td>\s*</tr>", table, re.S)
    assert len(rows) > 20 and all(k and v for k, v in rows)
    assert not any(v.lstrip().startswith(("{", "&quot;")) or "&quot;:" in v for _, v in rows)  # no JSON
    labels = [k for k, _ in rows]
    assert sum(k.startswith("system option <code>") and k.endswith("(memworker's own)") for k in labels) > 5
    assert "kit retrieval: top_k" in labels and "top_k" not in labels
