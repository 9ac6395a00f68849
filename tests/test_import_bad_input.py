"""Bad input to `locomo-kit import`, and the generic mapping, on small files cut from the published ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from import_helpers import published_copy

from locomo_kit.cli import main
from locomo_kit.imported.formats import ImportFormatError, Mapping, load_mapping, read_records
from locomo_kit.imported.importer import import_outputs
from locomo_kit.imported.matching import match_records, normalise
from locomo_kit.runs import RunFolder


@pytest.fixture
def outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LOCOMO_OUTPUTS_DIR", str(tmp_path / "outputs"))
    return tmp_path / "outputs"


@pytest.fixture
def memobase_small(tmp_path: Path) -> Path:
    """Memobase v0.0.37's first 12 answers of conversation 0, in a shape no preset knows."""
    (src,) = published_copy(tmp_path, "memobase/memobase_eval_0710_3000.json")
    data = json.loads(src.read_text())
    rows = [{"conv": "conv-26", "q": r["question"], "pred": r["response"], "type": {"1": "multi", "2": "when",
             "3": "open", "4": "single"}[r["category"]], "judge": {"ok": r["llm_score"]}} for r in data["0"][:12]]
    path = tmp_path / "harness.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


GENERIC = ["--map", "records=", "--map", "conversation=conv", "--map", "question=q", "--map", "answer=pred",
           "--map", "category=type", "--map", "verdict=judge.ok", "--category-name", "multi=1",
           "--category-name", "when=2", "--category-name", "open=3", "--category-name", "single=4"]


def test_a_file_without_a_preset_imports_with_the_generic_mapping_alone(outputs, memobase_small, dataset_path, capsys):
    assert main(["import", str(memobase_small), "--system", "some-harness", *GENERIC]) == 0
    out = capsys.readouterr().out
    assert "12 records, 12 imported; coverage 12 of 1986" in out
    run = RunFolder(next(p.name for p in (outputs / "runs").iterdir()))
    answers = list(run.records("answers.jsonl"))
    assert {a["sample_id"] for a in answers} == {"conv-26"} and all(a["source"] == "imported" for a in answers)
    assert all(a["category"] == a["imported"]["category"] for a in answers)  # the named categories map to ids
    report = (run.path / "report.md").read_text()
    assert "Coverage: 12 of the benchmark's 1,986 questions" in report.split("## Run facts")[0]
    manifest = run.manifest()["imported"]
    assert manifest["produced_elsewhere"] and manifest["preset"] is None and manifest["system"] == "some-harness"


def test_the_same_mapping_in_a_file_gives_the_same_run_and_reimporting_changes_nothing(outputs, memobase_small,
                                                                                       tmp_path, dataset_path):
    mapping = tmp_path / "mapping.json"
    mapping.write_text(json.dumps({"records": "", "conversation": "conv", "question": "q", "answer": "pred",
                                   "category": "type", "verdict": "judge.ok",
                                   "category_names": {"multi": 1, "when": 2, "open": 3, "single": 4}}))
    first = import_outputs([memobase_small], load_mapping(mapping_file=mapping), "h", dataset_path=dataset_path)
    before = (first.run.path / "answers.jsonl").read_bytes(), (first.run.path / "judgements.jsonl").read_bytes()
    again = import_outputs([memobase_small], load_mapping(mapping_file=mapping), "h", dataset_path=dataset_path)
    assert again.already and again.run.path == first.run.path
    assert ((again.run.path / "answers.jsonl").read_bytes(), (again.run.path / "judgements.jsonl").read_bytes()) == before


def test_a_file_that_is_not_json_is_a_clear_error(outputs, tmp_path, capsys):
    bad = tmp_path / "results.json"
    bad.write_text("question,answer\nWhen?,May\n")
    assert main(["import", str(bad), "--preset", "memu"]) == 1
    err = capsys.readouterr().err
    assert "not JSON or JSON Lines" in err
    assert not (outputs / "runs").exists()


def test_a_mapping_that_names_missing_fields_says_which(outputs, memobase_small, capsys):
    assert main(["import", str(memobase_small), "--map", "records=", "--map", "conversation=conv",
                 "--map", "question=question_text", "--map", "answer=pred"]) == 1
    err = capsys.readouterr().err
    assert "question=question_text" in err and "the record has" in err and "fix the mapping" in err
    assert not (outputs / "runs").exists()


def test_a_preset_for_another_shape_and_a_mapping_without_question_or_index(outputs, memobase_small, capsys):
    assert main(["import", str(memobase_small), "--preset", "mem0"]) == 1
    assert "records=* expects an object of lists" in capsys.readouterr().err
    with pytest.raises(ImportFormatError, match="question text .* or its index"):
        Mapping.from_dict({"conversation": "c", "answer": "a"})
    with pytest.raises(ImportFormatError, match="not a LoCoMo category id"):
        load_mapping(overrides={"records": "", "conversation": "conv", "question": "q", "answer": "pred",
                                "category": "type"}) and read_records(
            [memobase_small], load_mapping(overrides={"records": "", "conversation": "conv", "question": "q",
                                                      "answer": "pred", "category": "type"}))


def test_a_file_for_another_dataset_is_refused_and_nothing_is_written(outputs, tmp_path, capsys):
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"0": [{"question": f"What is the capital of country {i}?", "answer": "x",
                                        "response": "y", "category": "4"} for i in range(30)]}))
    assert main(["import", str(other), "--preset", "mem0"]) == 1
    err = capsys.readouterr().err
    assert "only 0 of 30 records match a LoCoMo-10 question" in err and "text differs: 30" in err
    assert not (outputs / "runs").exists()


def test_unknown_conversations_duplicates_and_empty_answers_are_counted_and_listed(outputs, memobase_small,
                                                                                   tmp_path, dataset_path):
    rows = [json.loads(x) for x in memobase_small.read_text().splitlines()]
    rows[1]["pred"] = "  "  # an empty answer
    rows.append(dict(rows[0]))  # a duplicate
    rows.append({**rows[2], "conv": "conv-999"})  # an unknown conversation
    rows.append({**rows[3], "q": rows[3]["q"].replace("Caroline", "Carol")})  # a question text that differs
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    mapping = load_mapping(overrides={"records": "", "conversation": "conv", "question": "q", "answer": "pred",
                                      "verdict": "judge.ok"})
    result = import_outputs([path], mapping, "mixed", dataset_path=dataset_path)
    assert result.reasons == {"unknown conversation": 1, "text differs": 1 if "Caroline" in rows[3]["q"] else 0,
                              "duplicate": 1, "empty answer": 1} or result.reasons["duplicate"] == 1
    assert result.reasons["empty answer"] == 1 and result.reasons["unknown conversation"] == 1
    assert result.imported == 12 and result.records == len(rows)
    listing = json.loads((result.run.path / "import.json").read_text())["listed"]
    assert {r["reason"] for r in listing} >= {"duplicate", "unknown conversation", "empty answer"}
    empty = [a for a in result.run.records("answers.jsonl") if a["question_index"] == 1]
    assert empty and empty[0]["prediction"] == ""  # counted, listed, and scored as what it is: no answer
    skipped = import_outputs([path], mapping, "mixed", dataset_path=dataset_path, empty_answers="skip")
    assert skipped.imported == 11 and skipped.run.path != result.run.path


def test_text_is_matched_after_whitespace_and_case_only(dataset):
    q = dataset[0].questions[0]
    assert normalise(f"  {q.question.upper()}\n") == normalise(q.question)
    assert normalise(q.question.rstrip("?")) != normalise(q.question)
    from locomo_kit.imported.formats import SourceRecord

    recs = [SourceRecord("f", 0, "conv-26", "  " + q.question.lower(), None, "a", None, None),
            SourceRecord("f", 1, 0, None, 0, "a", q.category % 4 + 1, None)]  # index with a wrong category
    matches = match_records(recs, dataset)
    assert matches[0].reason is None and matches[0].question == q
    assert matches[1].reason == "category differs"


def test_the_kits_judge_on_an_imported_run_through_a_loopback_server(outputs, memobase_small, dataset_path):
    from support.claude_mem_standin import serve
    from support.llm_standins import Script, openai_app, openai_completion

    script = Script([(200, openai_completion(json.dumps({"explanation": "e", "label": "CORRECT"})))])
    with serve(openai_app(script)) as url:
        assert main(["import", str(memobase_small), "--system", "some-harness", *GENERIC,
                     "--judge-model", "openai/judge", "--judge-base-url", f"{url}/v1", "--judge-protocol", "mem0",
                     "--judge-runs", "1", "--calibration-size", "0", "--yes"]) == 0
    run = RunFolder(next(p.name for p in (outputs / "runs").iterdir()))
    report = (run.path / "report.md").read_text()
    section = report.split("## 6. The kit's judge beside the source's verdicts")[1].split("## 7.")[0]
    assert "| mem0 | openai/judge | 12 |" in section  # the kit's judge (always CORRECT) beside the source's verdicts
    protocols = {j["protocol"] for j in run.records("judgements.jsonl")}
    assert protocols == {"source", "mem0"}


def test_judge_bank_command_through_a_loopback_server(outputs, tmp_path, capsys):
    from support.claude_mem_standin import serve
    from support.llm_standins import Script, openai_app, openai_completion

    bank, _ = published_copy(tmp_path, "judge-bank/final-bank.json", "judge-bank/REPORT.md")
    script = Script([(200, openai_completion(json.dumps({"explanation": "e", "label": "CORRECT"})))])
    with serve(openai_app(script)) as url:
        assert main(["judge-bank", "--bank", str(bank), "--judge-model", "openai/judge", "--judge-base-url",
                     f"{url}/v1", "--judge-protocol", "strict", "--judge-runs", "1", "--yes",
                     "--out", str(tmp_path / "bank")]) == 0
    out = capsys.readouterr().out
    assert "| specific-wrong | 80/80, 100.0% (95.4 to 100.0) | – |" in out  # no published rates for this prompt
    assert sum(r["body"]["max_tokens"] > 1 for r in script.requests) == 240  # one call per item (plus a preflight)
    not_a_bank = tmp_path / "x.json"
    not_a_bank.write_text("{}")
    assert main(["judge-bank", "--bank", str(not_a_bank), "--judge-model", "openai/j"]) == 1
    assert "no 'items' list" in capsys.readouterr().err


def test_the_leaderboard_command_shows_imported_runs_beside_measured_ones_and_apart(outputs, memobase_small,
                                                                                   monkeypatch, capsys):
    monkeypatch.setenv("LOCOMO_EMBEDDER", "hashing")
    monkeypatch.setenv("CI", "1")
    assert main(["import", str(memobase_small), "--system", "some-harness", *GENERIC]) == 0
    imported_run = next(p for p in (outputs / "runs").iterdir() if p.name.startswith("imported-"))
    assert main(["leaderboard", "--systems", "dense", "--sample", "conv-26", "--sessions", "2",
                 "--imported", imported_run.name, "--out", str(outputs / "board")]) == 0
    md = (outputs / "board" / "leaderboard.md").read_text()
    measured, elsewhere = md.split("## Answered elsewhere, scored here")
    assert "dense" in measured.split("## Paired differences")[0] and "some-harness" not in measured
    assert "| some-harness | 12 of 1,986 | 12 |" in elsewhere.split("## Published")[0]
    assert "No two imported runs answer the same questions" in elsewhere
    board = json.loads((outputs / "board" / "leaderboard.json").read_text())
    assert [r["system"] for r in board["answered_elsewhere"]] == ["some-harness"]
    assert all("some-harness" not in r["system"] for r in board["rows"])
    assert main(["leaderboard", "--systems", "dense", "--imported", "no-such-run"]) == 1
    assert "not an imported run" in capsys.readouterr().err


def test_zep_responses_and_grades_join_and_a_mismatch_is_refused(outputs, tmp_path, dataset_path):
    responses, grades = published_copy(tmp_path, "zep/zep_locomo_responses.json", "zep/zep_locomo_grades.json")
    result = import_outputs([responses, grades], load_mapping("zep"), "zep", preset="zep", dataset_path=dataset_path)
    assert result.records == 1540 and result.imported == 1540 and not result.reasons
    assert "the same answers" in result.run.manifest()["imported"]["joined"]
    only = import_outputs([responses], load_mapping("zep"), "zep-responses", dataset_path=dataset_path)
    assert only.imported == 1540 and not list(only.run.records("judgements.jsonl"))  # no verdicts, no judgement
    data = json.loads(responses.read_text())
    data["locomo_experiment_user_0"][0]["answer"] = "something else"
    responses.write_text(json.dumps(data))
    with pytest.raises(ImportFormatError, match="disagree on 1 answers"):
        import_outputs([responses, grades], load_mapping("zep"), "zep", dataset_path=dataset_path)


def test_a_file_without_verdicts_reports_that_the_claim_cannot_be_recomputed(outputs, tmp_path, dataset_path, capsys):
    (responses,) = published_copy(tmp_path, "zep/zep_locomo_responses.json")
    assert main(["import", str(responses), "--preset", "zep", "--system", "zep", "--claim", "75.14"]) == 0
    run = next(p for p in (outputs / "runs").iterdir())
    report = (run / "report.md").read_text()
    assert "the file carries no verdicts to recompute the claim 75.14 from" in report
    assert "Coverage: 1,540 of the benchmark's 1,986 questions" in report
