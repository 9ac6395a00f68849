"""``run --context-budget 250,500``: one run per budget, reuse of what is done, the accuracy-against-context curve."""

from __future__ import annotations

import json

import pytest

from locomo_kit.cli import main
from locomo_kit.paths import outputs_dir
from locomo_kit.pipeline.budgets import parse_budgets
from locomo_kit.reports.summary import summarize_run
from locomo_kit.runs import RunFolder


def test_budget_lists_parse_and_bad_ones_are_refused(capsys):
    assert parse_budgets("250, 500,1000,500") == [250, 500, 1000]
    assert parse_budgets("[500, 1000]") == [500, 1000] and parse_budgets(1000) == [1000] and parse_budgets(None) is None
    for bad in ("250,abc", "0,500", ","):
        with pytest.raises(ValueError):
            parse_budgets(bad)
    with pytest.raises(SystemExit):
        main(["run", "--context-budget", "500,x"])
    assert "not a whole number of tokens" in capsys.readouterr().err
    assert main(["run", "--context-budget", "250,500", "--run-id", "mine"]) == 1
    assert "--run-id names one run" in capsys.readouterr().err


@pytest.fixture()
def outputs(tmp_path, monkeypatch, dataset_path):
    monkeypatch.setenv("LOCOMO_OUTPUTS_DIR", str(tmp_path))
    monkeypatch.setenv("LOCOMO_EMBEDDER", "hashing")
    monkeypatch.setenv("CI", "1")
    return tmp_path


def test_one_run_per_budget_then_the_curve_and_nothing_is_rerun(outputs, capsys):
    assert main(["run", "--sample", "conv-26", "--context-budget", "250,500"]) == 0
    out = capsys.readouterr().out
    runs = sorted(d.name for d in (outputs / "runs").iterdir() if (d / "answers.jsonl").is_file())
    assert len(runs) == 2 and any("-b250-" in r for r in runs) and any("-b500-" in r for r in runs)
    curve = json.loads(next((outputs_dir() / "curves").glob("*/curve.json")).read_text())
    points = {p["budget"]: p for p in curve["points"]}
    assert set(points) == {250, 500}
    for budget, point in points.items():  # each point is its run's own overall figure
        s = summarize_run(RunFolder(point["run_id"]))
        overall = next(r for r in s["diagnostics"] if r["category"] == "overall")
        assert point["evidence_recall"] == pytest.approx(overall["recall_all"])
        assert point["locomo_f1"] == pytest.approx(next(r for r in s["locomo_f1"] if r["category"] == "overall")["mean"])
        assert s["manifest"]["answer"]["context_budget"] == budget
    assert points[500]["evidence_recall"] >= points[250]["evidence_recall"]
    assert points[500]["context_tokens"] > points[250]["context_tokens"]
    folder = next((outputs_dir() / "curves").iterdir())
    assert (folder / "curve.png").stat().st_size > 5000 and "| memworker | 250 |" in (folder / "curve.md").read_text()
    assert "curve:" in out

    answers = {r: (outputs / "runs" / r / "answers.jsonl").read_text() for r in runs}
    assert main(["run", "--sample", "conv-26", "--context-budget", "500,250,1000"]) == 0
    out = capsys.readouterr().out
    assert out.count("), not run again") == 2 and "context budget 1,000:" in out
    assert all((outputs / "runs" / r / "answers.jsonl").read_text() == text for r, text in answers.items())
    curve = json.loads(next(p for p in (outputs_dir() / "curves").glob("*/curve.json") if "1000" in str(p)).read_text())
    assert [p["budget"] for p in curve["points"]] == [250, 500, 1000]


def test_a_budget_list_runs_the_system_it_names(outputs, capsys):
    assert main(["run", "--sample", "conv-26", "--system", "bm25", "--context-budget", "250,500"]) == 0
    runs = sorted(d.name for d in (outputs / "runs").iterdir() if (d / "answers.jsonl").is_file())
    assert len(runs) == 2 and all(r.startswith("conv-26-bm25-") for r in runs)
    curve = json.loads(next((outputs_dir() / "curves").glob("conv-26-bm25*/curve.json")).read_text())
    assert {p["system"] for p in curve["points"]} == {"bm25"} and [p["budget"] for p in curve["points"]] == [250, 500]
