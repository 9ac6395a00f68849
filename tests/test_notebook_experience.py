"""The library and notebook experience: a public API, a per-question export, honest figures."""

from __future__ import annotations

import importlib
import json

import pandas as pd
import pytest

import locomo_kit
from locomo_kit.cli import main
from locomo_kit.llm import ScriptedLLM
from locomo_kit.llm.execute import CallSettings
from locomo_kit.reports import figures


def test_public_api():
    for name in ("load", "ingest", "answer", "score", "judge", "report", "compare", "export"):
        assert name in locomo_kit.__all__ and callable(getattr(locomo_kit, name))
    importlib.import_module("locomo_kit.reports.markdown")  # a submodule import must not hide the function

    importlib.import_module("locomo_kit.reports.comparison")
    assert all(callable(f) for f in (locomo_kit.report, locomo_kit.ingest, locomo_kit.export, locomo_kit.compare))


def test_progress_bars_have_their_widgets():
    import ipywidgets  # noqa: F401  (tqdm.auto draws JupyterLab progress bars with it; without it: TqdmWarning)
    from tqdm.notebook import IProgress

    assert IProgress is not None


@pytest.fixture(scope="module")
def judged_run(offline_run):
    run = offline_run("--sample", "conv-30", run_id="exp")
    labels = iter(["CORRECT", "WRONG", "CORRECT"] * 1000)
    judge = locomo_kit.Judge(protocol="mem0", runs=2,
                             llm=ScriptedLLM(lambda s, p: json.dumps({"label": next(labels)}), model="judge-z"))
    locomo_kit.judge(run, judge=judge, calls=CallSettings(progress=False))
    return run


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_export_one_row_per_question_with_every_score(judged_run, fmt, capsys):
    out = judged_run.path / f"q.{fmt}"
    assert main(["export", "exp", "--format", fmt, "--output", str(out)]) == 0
    assert f"{out}: 81 rows" in capsys.readouterr().out
    frame = pd.read_csv(out) if fmt == "csv" else pd.read_parquet(out)
    assert len(frame) == 81 and frame[["sample_id", "question_index"]].drop_duplicates().shape[0] == 81
    for col in ("question", "gold", "prediction", "top_k", "context_budget", "locomo_f1", "mem0_f1", "bleu1",
                "evidence_coverage@8", "evidence_recall", "answer_in_context", "j_mem0", "j_mem0_judge"):
        assert col in frame.columns, col
    assert set(frame["j_mem0_judge"]) == {"fake/judge-z"} and frame["locomo_f1"].between(0, 1).all()


def test_export_has_the_audited_scores_when_the_run_was_scored_with_both_keys(judged_run, capsys):
    assert main(["score", "--run-id", "exp", "--sample", "conv-30", "--gold", "both"]) == 0
    out = judged_run.path / "both.csv"
    assert main(["export", "exp", "--output", str(out)]) == 0
    frame = pd.read_csv(out)
    assert {"locomo_f1_audited", "mem0_f1_audited", "bleu1_audited", "audit_changed_gold"} <= set(frame.columns)
    assert frame["audit_changed_gold"].any() and (frame["context_budget"] == 1000).all()


def test_export_without_a_run_is_a_clear_error(judged_run, capsys):
    ingestion = locomo_kit.runs.runs_root() / "conv-30-transcript-embedded-hashing"  # as `ingest` names one
    ingestion.mkdir(parents=True, exist_ok=True)
    (ingestion / "manifest.json").write_text("{}")
    assert main(["export", "no-such-run"]) == 1
    err = capsys.readouterr().err
    assert "No run at" in err and "Known runs: exp" in err
    assert "conv-30-transcript" not in err  # the ingestion folder holds no answers: not offered as a run


def test_category_figure_has_intervals_and_names_the_judge(judged_run, monkeypatch, tmp_path):
    from locomo_kit.reports.summary import summarize_run

    shown = {}
    monkeypatch.setattr(figures, "save_figure", lambda fig, path, **kw: shown.setdefault("fig", fig) and path)
    figures.categories_vs_baselines(summarize_run(judged_run), tmp_path / "c.png")
    ax = shown["fig"].axes[0]
    assert any(type(c).__name__ == "ErrorbarContainer" for c in ax.containers)
    assert "judged by fake/judge-z" in ax.get_title()
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[0].startswith("this run") and "1 conversation, 81 questions (95% CI)" in legend[0]
    assert all("10 conversations" in t for t in legend[1:])
