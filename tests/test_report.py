"""The report: numbers recomputed from the records, baselines tied to sources and category ids."""

from __future__ import annotations

import json
import re
import statistics
import threading
from collections import Counter

import pytest

from locomo_kit.cli import main
from locomo_kit.llm import ScriptedLLM
from locomo_kit.llm.execute import CallSettings
from locomo_kit.pipeline.stages import run_judge, run_report
from locomo_kit.reports import baselines
from locomo_kit.scoring.locomo_f1 import locomo_f1
from locomo_kit.scoring.mem0_f1 import mem0_f1
from locomo_kit.settings import Judge

QUIET = CallSettings(progress=False)


def test_every_quoted_row_cites_its_source_by_url():
    """The leaderboard's quoted rows (papers, projects' own claims) each name a public URL to check them against."""
    from locomo_kit.reports.leaderboard_page import quoted_rows

    rows = quoted_rows()
    assert rows and all(re.search(r"https://\S+", r["source"]) for r in rows), [r["source"] for r in rows]
    assert not any(re.search(r"issue #?\d", r["source"]) for r in rows)


def test_every_baseline_cell_has_a_source_and_a_category_id():
    cells = list(baselines.cells())
    assert len(cells) > 60
    for system, metric, column, value, source in cells:
        assert column in (1, 2, 3, 4, "overall"), (system, column)
        assert source in (baselines.MEM0_PAPER, baselines.LOCOMO_PAPER)
        assert isinstance(value, (int, float)) and value > 0
        assert metric in ("mem0_j", "mem0_f1", "locomo_f1") or metric.startswith("mem0_latency:")
    mem0 = next(b for b in baselines.MEM0_J if b.system == "Mem0")
    assert mem0.values[1] == 67.13 and mem0.values[4] == 72.93  # keyed by id, not by Mem0's names
    # Mem0's overall J is reproduced by weighting its columns with the category-id counts (scoring.md §1)
    counts = {1: 282, 2: 321, 3: 96, 4: 841}
    for b in baselines.MEM0_J:
        if all(c in b.values for c in counts):
            weighted = sum(b.values[c] * n for c, n in counts.items()) / sum(counts.values())
            assert weighted == pytest.approx(b.values["overall"], abs=0.05), b.system


@pytest.fixture(scope="module")
def reported_run(offline_run):
    return offline_run("--sample", "conv-26", run_id="r1")


def test_main_command_writes_report_and_figures(reported_run):
    run = reported_run
    assert (run.path / "report.md").is_file()
    names = sorted(p.name for p in (run.path / "figures").glob("*.png"))
    assert names == ["categories_vs_baselines.png", "f1_distribution.png", "latency.png", "per_conversation.png",
                     "retrieval_vs_answer.png"]
    m = run.manifest()
    assert {"dataset", "worker", "answer", "scoring", "report", "packages", "git_commit"} <= set(m)


def test_a_budgeted_run_labels_its_retrieval_by_the_budget(reported_run):
    """The default run packs spans into 1,000 tokens: recall is "within 1,000 tokens", never "top 100"."""
    run = reported_run
    assert run.manifest()["answer"]["context_budget"] == 1000
    scores = [json.loads(l) for l in (run.path / "scores.jsonl").read_text().splitlines()]
    recall = [s["evidence_recall"] for s in scores
              if s["gold_key"] == "original" and s["category"] != 5 and s["evidence_coverage"].get("@1") is not None]
    text = (run.path / "report.md").read_text()
    assert f"evidence within the 1,000-token context: {100 * statistics.mean(recall):.1f}%" in text
    assert "all (within 1,000 tokens)" in text and "| kit retrieval: context budget | 1,000 tokens |" in text
    assert "top 100" not in text and "in the top 8" not in text
    assert "context budget 1,000 tokens (≤ 100 memories)" in run.manifest()["config_label"]
    examples = text[text.index("### Category"):text.index("## 7.")]
    # spans of several turns are one list item each: no line of the examples starts mid-memory
    assert " / " in examples and all(not line or line.startswith(("- ", "**", "### ")) for line in examples.splitlines())


def test_report_numbers_are_recomputed_from_records(reported_run, dataset):
    run = reported_run
    answers = [json.loads(l) for l in (run.path / "answers.jsonl").read_text().splitlines()]
    text = (run.path / "report.md").read_text()
    # recompute official F1 from the raw answers, independently of scores.jsonl
    f1 = [locomo_f1(a["prediction"], a["gold"], a["category"]) for a in answers]
    assert f"official F1 {100 * statistics.mean(f1):.1f}%" in text
    for cat in (1, 2, 3, 4):
        vals = [locomo_f1(a["prediction"], a["gold"], a["category"]) for a in answers if a["category"] == cat]
        m = re.search(rf"\| {cat} \S+ \| {len(vals)} \| ([\d.]+) \|", text)
        assert m and float(m.group(1)) == pytest.approx(100 * statistics.mean(vals), abs=0.051)
        mf = statistics.mean(mem0_f1(a["prediction"], a["gold"]) for a in answers if a["category"] == cat)
        row = re.search(r"\| this run \(extractive[^|]*\| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|\n\| Mem0 \(Mem0", text)
        assert row and float(row.group(cat)) == pytest.approx(100 * mf, abs=0.051)
    assert "1 conversation(s), 152 questions" in text and "not comparable" in text
    assert "compared here by id" in text and "Not judged" in text
    assert "--judge-base-url" in text and "--llm-base-url" not in text  # the option `score` takes for a judge's server


def test_judged_report_places_j_beside_mem0_only_for_the_mem0_protocol(reported_run, dataset):
    run = reported_run
    labels = iter(["CORRECT", "WRONG"] * 1000)
    llm = ScriptedLLM(lambda s, p: json.dumps({"label": next(labels)}), model="judge-x")
    run_judge(run, judge=Judge(protocol="mem0", runs=2, llm=llm), calls=QUIET)
    # each question's first run scores 60 and its second 80, whatever order the call pool takes them in
    calls_per_prompt: Counter = Counter()
    lock = threading.Lock()

    def alternate(system: str, prompt: str) -> str:
        with lock:
            calls_per_prompt[prompt] += 1
            return json.dumps({"score": 60 if calls_per_prompt[prompt] % 2 else 80})

    run_judge(run, judge=Judge(runs=2, llm=ScriptedLLM(alternate, model="judge-y")), calls=QUIET)
    report, _, summary = run_report(run, sample="conv-26")
    text = report.read_text()
    assert "| Mem0 (Mem0 paper) | 67.13 | 55.51 | 51.15 | 72.93 | 66.88 |" in text
    overall = next(r for r in summary["judge"]["playbook"] if r["category"] == "overall")
    assert overall["mean"] == pytest.approx(70.0) and overall["pooled_run_std"] == pytest.approx(statistics.stdev([60, 80]))
    assert overall["pooled_run_std_population"] == pytest.approx(statistics.pstdev([60, 80]))
    assert "**not comparable** to Mem0's binary J" in text
    mem0_overall = next(r for r in summary["judge"]["mem0"] if r["category"] == "overall")
    assert mem0_overall["runs"] == 2 and 0 <= mem0_overall["mean"] <= 100


def test_report_without_run_is_a_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LOCOMO_OUTPUTS_DIR", str(tmp_path))
    assert main(["report", "--sample", "conv-30"]) == 1
    assert "No run at" in capsys.readouterr().err


def test_paid_run_without_key_fails_before_doing_anything(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LOCOMO_OUTPUTS_DIR", str(tmp_path))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert main(["run", "--sample", "conv-26", "--paid"]) == 1
    assert "export ANTHROPIC_API_KEY" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_paid_protocol_end_to_end_through_the_sdk(tmp_path, monkeypatch, capsys):
    """`run --paid` against a loopback stand-in of the Messages API: answers, judgements, report."""
    from support.claude_mem_standin import serve
    from support.llm_standins import Script, anthropic_app, anthropic_message

    monkeypatch.setenv("LOCOMO_OUTPUTS_DIR", str(tmp_path))
    monkeypatch.setenv("LOCOMO_EMBEDDER", "hashing")
    monkeypatch.setenv("CI", "1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    script = Script([(200, anthropic_message('{"score": 80, "explanation": "close"}', 500, 12))])
    with serve(anthropic_app(script)) as url:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
        with pytest.warns(UserWarning, match="temperature"):
            assert main(["run", "--sample", "conv-30", "--paid", "--judge-runs", "2", "--run-id", "paid", "--yes"]) == 0
    out = capsys.readouterr().out
    assert "answering: 81 calls to anthropic/claude-opus-4-6 still needed (0 already done)" in out
    models = [r["body"]["model"] for r in script.requests]
    # the judge also grades the calibration set and, under the audited key, the questions whose gold it changes
    from locomo_kit.data_fetch import fetch_audit
    from locomo_kit.dataset import load_dataset, select
    from locomo_kit.scoring.calibration import build_calibration_set

    calibration = len(build_calibration_set(select(load_dataset(), "conv-30"), 100))
    changed = sum(1 for e in json.loads(fetch_audit().read_text())
                  if e["question_id"].startswith("locomo_1_") and e["error_type"] != "WRONG_CITATION")
    judge_calls = 2 * (81 + calibration + changed)
    # one preflight call per model (max_tokens 1), before anything else, then the calls themselves
    assert [r["body"]["max_tokens"] for r in script.requests[:2]] == [1, 1] and models[:2] == ["claude-opus-4-6",
                                                                                              "claude-sonnet-4-6"]
    # the answers, and the answerer's no-memory floor (the same 81 questions with an empty context)
    assert models.count("claude-opus-4-6") == 2 * 81 + 1 and models.count("claude-sonnet-4-6") == judge_calls + 1
    assert "no-memory floor: 81 calls to anthropic/claude-opus-4-6 still needed (0 already done)" in out
    assert f"judging (playbook): {judge_calls} calls to anthropic/claude-sonnet-4-6 still needed (0 already done)" in out
    text = (tmp_path / "runs" / "paid" / "report.md").read_text()
    assert "playbook: anthropic/claude-sonnet-4-6, prompt judge-playbook-v1, 2 runs" in text
    assert "| overall | 81 | 80.0 |" in text
    assert "## 2b. Judge calibration" in text and "| playbook | anthropic/claude-sonnet-4-6 | judge-playbook-v1 | gold |" in text
    costs = text.split("## 7. Costs")[1]
    assert "$" in costs and "| no-memory floor | anthropic/claude-opus-4-6 | 40,500 | 972 | $0.2268 |" in costs
    assert "**No-memory floor.** What this run's answerer (anthropic/claude-opus-4-6) scores" in text


def facts(text: str) -> list[str]:
    """The lines of the run facts table."""
    section = text.split("## Run facts", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("|")]


def test_the_run_facts_have_a_header_and_each_system_option_on_its_own_row(reported_run):
    """No empty header row, no settings dumped as one line of JSON; the system's own options labelled as its own,
    apart from what the kit asked of it (a system's "top_k" is not the kit's)."""
    text = (reported_run.path / "report.md").read_text()
    lines = facts(text)
    assert lines[0] == "| fact | value |" and lines[1] == "|---|---|"
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
    assert all(len(c) == 2 and c[0] and c[1] for c in cells), [c for c in cells if len(c) != 2 or not all(c)]
    assert not any(value.startswith("{") for _, value in cells)  # no JSON dump of the settings
    settings = reported_run.manifest()["worker"]["settings"]
    own = {k: v for k, v in cells if k.startswith("system option ")}
    from locomo_kit.worker.identity import PLACEMENT_SETTINGS

    shown = {k: v for k, v in settings.items() if k not in PLACEMENT_SETTINGS}
    assert len(own) == len(shown) > 5
    for k in shown:
        assert f"system option `{k}` (memworker's own)" in own
    kit = dict(c for c in cells if c[0].startswith("kit retrieval: "))
    assert kit["kit retrieval: context budget"] == "1,000 tokens"
    assert kit["kit retrieval: top_k"] == "at most 100 memories asked for, cut to the context budget"
    assert not any(k == "top_k" for k, _ in cells)


def test_the_notebooks_overview_has_evidence_recall_and_the_reports_path(reported_run):
    from locomo_kit.reports import category_table, report_lines, summarize_run

    s = summarize_run(reported_run)
    table = category_table(s).set_index("category")
    overall = next(d for d in s["diagnostics"] if d["category"] == "overall")
    assert table.loc["overall", "evidence recall %"] == pytest.approx(overall["recall_all"])
    assert table.loc["overall", "official F1 %"] == pytest.approx(s["locomo_f1"][-1]["mean"])
    assert list(table.index) == [1, 2, 3, 4, "overall"] and table.loc[1, "n"] == 32
    report = reported_run.path / "report.md"
    assert report_lines(report) == [f"report: {report}",
                                    f"html:   {reported_run.path / 'report.html'} (with the question explorer)"]
