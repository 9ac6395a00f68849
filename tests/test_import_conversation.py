"""A real-shaped file of one conversation's answers with no conversation field (``…_conv26_answers.json``):
it imports with ``--conversation conv-26``, by its question texts (each matched only where its text is unique
in the dataset, ambiguous ones listed) and by ``conversation=@file`` (``conv26`` in the name is the sample id,
not position 26). Before asking for a preset the kit says what the file holds and which mapping would read it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from locomo_kit.cli import main
from locomo_kit.cli.main import build_parser
from locomo_kit.imported.formats import describe_file

from support.runs import set_outputs

READ = ["--map", "records=", "--map", "question=question", "--map", "answer=prediction", "--map", "category=category"]


@pytest.fixture
def outputs(tmp_path, monkeypatch):
    return set_outputs(monkeypatch, tmp_path / "outputs")


@pytest.fixture
def answers(tmp_path, dataset_path) -> Path:
    """Twenty of conv-26's questions with an answer each, as a harness writes them: no conversation field."""
    sample = next(s for s in json.loads(Path(dataset_path).read_text()) if s["sample_id"] == "conv-26")
    rows = [{"question": q["question"], "prediction": str(q.get("answer", "")), "category": q["category"]}
            for q in sample["qa"][:20]]
    path = tmp_path / "team_conv26_answers.json"
    path.write_text(json.dumps(rows, indent=1))
    return path


def _run(out: str) -> Path:
    return Path(next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("run folder: ")))


def _imported(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "answers.jsonl").read_text().splitlines()]


def test_with_conversation_by_question_text_and_by_file_name(outputs, answers, capsys):
    assert main(["import", str(answers), *READ, "--conversation", "conv-26", "--run-id", "named"]) == 0
    out = capsys.readouterr().out
    assert "20 records, 20 imported" in out
    assert {a["sample_id"] for a in _imported(_run(out))} == {"conv-26"}

    assert main(["import", str(answers), *READ, "--run-id", "by-text"]) == 0
    out = capsys.readouterr().out
    assert "20 records, 20 imported" in out and {a["sample_id"] for a in _imported(_run(out))} == {"conv-26"}

    assert main(["import", str(answers), *READ, "--map", "conversation=@file", "--run-id", "by-file"]) == 0
    out = capsys.readouterr().out
    assert "20 records, 20 imported" in out and "unknown conversation" not in out


def test_a_question_text_two_conversations_ask_is_listed_as_ambiguous(outputs, answers, dataset_path, tmp_path,
                                                                       capsys):
    raw = json.loads(Path(dataset_path).read_text())
    first = next(s for s in raw if s["sample_id"] == "conv-26")["qa"][0]["question"]
    other = next(s for s in raw if s["sample_id"] == "conv-30")
    other["qa"][0]["question"] = first  # conv-30 now asks conv-26's first question too
    dataset = tmp_path / "locomo10.json"
    dataset.write_text(json.dumps(raw))
    assert main(["import", str(answers), *READ, "--dataset", str(dataset), "--run-id", "ambiguous"]) == 0
    out = capsys.readouterr().out
    assert "20 records, 19 imported" in out
    assert f"ambiguous question text: {answers.name} record 0 (conversation @text, index None): {first}" in out


def test_before_asking_for_a_preset_it_says_what_the_file_holds(outputs, answers, tmp_path, capsys):
    obj = tmp_path / "obj.json"
    obj.write_text(json.dumps({"results": json.loads(answers.read_text()), "meta": {}}))
    unrelated = tmp_path / "unrelated.json"
    unrelated.write_text(json.dumps([{"a": 1}, {"b": 2}]))
    broken = tmp_path / "broken.json"
    broken.write_text('{"a": 1,\n oops}')
    one = tmp_path / "one.json"
    one.write_text(json.dumps([json.loads(answers.read_text())[0]]))
    expected = {
        answers: "a list of 20 records with fields question, prediction, category; would read it: --map records= "
                 "--map question=question --map answer=prediction --map category=category (no conversation field: "
                 "add --conversation conv-26",
        obj: "an object with keys results, meta; 'results' is a list of 20 records with fields question, prediction, "
             "category; would read it: --map records=results --map question=question",
        unrelated: "a list of 2 records with fields a, b; name the field with each question's text",
        broken: "not JSON or JSON Lines (Expecting property name enclosed in double quotes at line 2",
        one: "a list of 1 records with fields question, prediction, category; would read it",
    }
    for path, text in expected.items():
        assert text in describe_file(path)
        assert main(["import", str(path)]) == 1
        err = capsys.readouterr().err
        assert "say how to read the file" in err and text in err, err


def test_the_special_values_of_map_are_in_the_help():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices["import"]
    text = sub.format_help()
    for value in ("records=*", "conversation=@key", "conversation=@file", "conversation=@sequence", "--conversation"):
        assert value in " ".join(text.split()), value
