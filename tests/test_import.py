"""`locomo-kit import` with every preset on copies of the published files, the catalogue, the leaderboard's
section for imported runs, and the judge bank with the scripted LLM."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from import_helpers import published, published_copy

from locomo_kit.cli import main
from locomo_kit.llm import ScriptedLLM
from locomo_kit.llm.execute import CallSettings
from locomo_kit.pipeline.judge_bank import published_rates, run_judge_bank
from locomo_kit.reports.imported_board import SECTION, imported_lines, imported_rows
from locomo_kit.runs import RunFolder
from locomo_kit.settings import Judge

COGNEE = [f"cognee/locomo_metrics_conv{i}_hybrid_completion_20_20_20_run0.json" for i in range(10)]


@pytest.fixture(scope="module")
def imports(tmp_path_factory: pytest.TempPathFactory, dataset_path: Path) -> dict[str, RunFolder]:
    """The four shared files imported once with their presets (the CLI, as a user runs it)."""
    tmp = tmp_path_factory.mktemp("imports")
    mp = pytest.MonkeyPatch()
    mp.setenv("LOCOMO_OUTPUTS_DIR", str(tmp / "outputs"))
    mp.setenv("CI", "1")
    runs = {}
    try:
        files = published_copy(tmp, "memobase/memobase_eval_0710_3000.json", "zep/zep_locomo_grades.json",
                               "memu/result.json", "cognee/gold_exclusions.json", *COGNEE)
        commands = {"memobase": [str(files[0]), "--preset", "mem0", "--system", "memobase", "--claim", "75.78"],
                    "zep": [str(files[1]), "--preset", "zep", "--system", "zep", "--claim", "75.14"],
                    "memu": [str(files[2]), "--preset", "memu", "--system", "memu"],
                    "cognee": [*map(str, files[4:]), "--preset", "cognee", "--system", "cognee", "--claim", "84.1"]}
        for name, args in commands.items():
            assert main(["import", *args]) == 0, name
            runs[name] = next(RunFolder(p.name, root=p.parent) for p in (tmp / "outputs" / "runs").iterdir()
                              if p.name.startswith(f"imported-{name}"))
    finally:
        mp.undo()
    return runs


def _report(run: RunFolder) -> str:
    return (run.path / "report.md").read_text(encoding="utf-8")


def _overall_f1(report: str) -> float:
    return float(re.search(r"\| overall \| [\d,]+ \| ([\d.]+) \|", report).group(1))


@pytest.mark.parametrize("name, coverage, f1", [("memobase", "1,540", 54.5), ("zep", "1,540", 18.7),
                                                ("memu", "1,354", None), ("cognee", "1,986", 71.1)])
def test_each_preset_imports_and_its_report_states_coverage_f1_claim_and_flips(imports, name, coverage, f1):
    report = _report(imports[name])
    top = report.split("## Run facts")[0]
    assert f"Coverage: {coverage} of the benchmark's 1,986 questions" in top and "Answered elsewhere, scored here" in top
    assert "## 1. The kit's footing: F1 per category" in report
    for cat in ("1 multi-hop", "2 temporal", "3 open-domain", "4 single-hop", "overall"):
        assert f"| {cat} |" in report
    if f1 is not None:
        assert _overall_f1(report) == pytest.approx(f1, abs=0.05)
    assert "The source's J, recomputed from its verdicts, beside its claim" in report
    assert re.search(r"\*\*The audited key flips \d+ of the source's verdicts\*\*", report)
    assert "## 8. Retrieval diagnostics" in report and "no retrieved context" in report
    manifest = imports[name].manifest()
    assert manifest["imported"]["produced_elsewhere"] and len(manifest["imported"]["files"][0]["sha256"]) == 64
    source = [j for j in imports[name].records("judgements.jsonl") if j["protocol"] == "source"]
    assert source and all(j["judge_model"] == f"source/{name}" for j in source)


def test_claims_agree_or_not_as_the_files_say(imports):
    assert "**agrees** with the claim 75.78" in _report(imports["memobase"])
    zep = _report(imports["zep"])
    assert "**does not agree** with the claim 75.14" in zep and "difference -0.01 points" in zep  # the grades give 75.13
    assert "**agrees** with the claim 92.088" in _report(imports["memu"])  # read from the file's summary (1420/1542)
    memu = json.loads((imports["memu"].path / "import.json").read_text())
    assert memu["reasons"] == {"text differs": 188} and memu["coverage"]["questions_1_4"] == 1352
    cognee = _report(imports["cognee"])
    assert "| over categories 1-4 (the kit's footing) | 1,540 | 84.1 |" in cognee
    assert "446 adversarial answers" in cognee and "official rule counts" in cognee


def test_memobase_own_f1_and_bleu_agree_with_the_kits_on_every_record(imports):
    report = _report(imports["memobase"])
    assert "| f1 | mem0_f1 | 1,540 | 0 |" in report
    assert "| bleu | bleu1 | 1,540 | 0 |" in report


def test_imported_runs_are_runs_for_score_export_and_compare(imports, monkeypatch, tmp_path, capsys):
    run = imports["zep"]
    monkeypatch.setenv("LOCOMO_OUTPUTS_DIR", str(run.path.parent.parent))
    assert main(["score", "--run-id", run.run_id, "--gold", "original"]) == 0
    assert "n=1540" in capsys.readouterr().out
    assert main(["export", str(run.path), "--output", str(tmp_path / "q.csv")]) == 0
    with open(tmp_path / "q.csv", newline="") as fh:
        assert len(list(csv.DictReader(fh))) == 1540
    assert main(["compare", str(imports["memobase"].path), str(run.path), "--out", str(tmp_path / "cmp")]) == 0
    out = capsys.readouterr().out
    assert "1540 shared questions" in out and "covers 1,540 of the benchmark's 1,986 questions" in out
    assert "> **Coverage.**" in (tmp_path / "cmp" / "compare.md").read_text().split("## Runs")[0]


def test_the_leaderboard_keeps_imported_runs_in_their_own_section(imports):
    rows = imported_rows([str(imports[n].path) for n in ("memobase", "zep", "memu")])
    lines = "\n".join(imported_lines(rows))
    assert lines.startswith(f"## {SECTION}")
    assert "| memobase | 1,540 of 1,986 | 1,540 |" in lines and "| memu | 1,354 of 1,986 | 1,352 |" in lines
    assert "| zep | memobase | 1,540 |" in lines  # paired: the same 1,540 questions
    assert "| memu | memobase" not in lines  # memu answers other questions: never paired
    with pytest.raises(ValueError, match="not an imported run"):
        imported_rows([str(imports["zep"].path.parent / "no-such-run")])


def test_a_catalogue_entry_is_copied_pinned_and_imported(tmp_path, monkeypatch, dataset_path, capsys):
    published()  # skips without the published outputs
    monkeypatch.setenv("LOCOMO_OUTPUTS_DIR", str(tmp_path / "outputs"))
    monkeypatch.setenv("LOCOMO_DATA_DIR", str(tmp_path / "data"))
    (tmp_path / "data").mkdir()
    for name in ("locomo10.json", "locomo-audit-errors.json"):
        (tmp_path / "data" / name).symlink_to(dataset_path.parent / name)
    source = tmp_path / "source"
    published_copy(source, "memu/result.json")
    monkeypatch.setenv("LOCOMO_PUBLISHED_SOURCE", str(source))
    assert main(["import", "memu"]) == 0
    assert (tmp_path / "data" / "published" / "memu" / "result.json").is_file()
    run = next((tmp_path / "outputs" / "runs").iterdir())
    manifest = json.loads((run / "manifest.json").read_text())["imported"]
    assert manifest["catalogue"]["entry"] == "memu" and manifest["catalogue"]["repository"] == "NevaMind-AI/memU"
    (source / "memu" / "result.json").write_text("{}")  # a copy that is not the pinned file
    assert main(["import", "memu", "--force"]) == 1
    assert "expected 497206c6" in capsys.readouterr().err


def test_the_judge_bank_reports_acceptance_per_class_beside_the_published_rates(tmp_path):
    files = published_copy(tmp_path, "judge-bank/final-bank.json", "judge-bank/REPORT.md")
    published = published_rates(files[1])
    assert published["mem0"]["vague-topical-wrong"]["rate"] == 52.5 and published["mem0"]["correct"]["rate"] == 100.0
    bank = json.loads(files[0].read_text())["items"]
    candidates = {(item["question"], item["candidateAnswer"]): item["intendedClass"] for item in bank}

    def reply(system: str, prompt: str) -> str:  # accepts correct and vague answers, rejects specific-wrong ones
        answer = prompt.split("Generated answer: ")[1].split("\n\nGive a one-sentence")[0]
        question = prompt.split("Question: ")[1].split("\nGold answer: ")[0]
        label = "WRONG" if candidates[(question, answer)] == "specific-wrong" else "CORRECT"
        return json.dumps({"explanation": "scripted", "label": label})

    result = run_judge_bank(Judge("fake/scripted", protocol="mem0", runs=3, llm=ScriptedLLM(reply)), bank=files[0],
                            out=tmp_path / "bank-out", report_md=files[1], calls=CallSettings(log=lambda *_: None))
    rates = result["rates"]
    assert rates["correct"]["k"] == 80 and rates["specific-wrong"]["k"] == 0 and rates["vague-topical-wrong"]["k"] == 80
    assert rates["specific-wrong"]["high"] < 5 and result["failed"] == 0
    md = (tmp_path / "bank-out" / "judge-bank.md").read_text()
    assert "| vague-topical-wrong | 80/80, 100.0%" in md and "42/80, 52.5% (41.7 to 63.1)" in md
