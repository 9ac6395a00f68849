from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from locomo_kit.dataset import (
    DatasetError,
    UnknownSample,
    all_questions,
    dataset_stats,
    get_conversation,
    load_dataset,
    normalize_evidence,
    questions,
    select,
)


def test_real_file_statistics(dataset):
    stats = dataset_stats(dataset)
    assert stats["conversations"] == 10
    assert stats["sessions"] == 272
    assert stats["turns"] == 5882
    assert stats["image_turns"] == 1226
    assert stats["questions"] == 1986
    assert stats["questions_by_category"] == {1: 282, 2: 321, 3: 96, 4: 841, 5: 446}
    assert stats["questions_excluding_adversarial"] == 1540


def test_conversation_structure(dataset):
    conv = get_conversation(dataset, "conv-26")
    assert (conv.speaker_a, conv.speaker_b) == ("Caroline", "Melanie")
    # conv-26 has date keys for sessions 20-35 but no session lists: those are skipped
    assert [s.number for s in conv.sessions] == list(range(1, 20))
    first = conv.sessions[0]
    assert first.date_time == "1:56 pm on 8 May, 2023"
    assert first.date == datetime(2023, 5, 8, 13, 56)
    assert first.turns[0].dia_id == "D1:1" and first.turns[0].speaker == "Caroline"
    assert first.summary and first.events and "Caroline" in first.observation
    assert all(t.session == s.number for s in conv.sessions for t in s.turns)


def test_questions_default_excludes_adversarial(dataset):
    conv = get_conversation(dataset, "conv-26")
    default = questions(conv)
    everything = all_questions(conv)
    assert len(everything) == 199
    assert all(q.category != 5 for q in default)
    assert len(default) == len(everything) - sum(q.category == 5 for q in everything)
    q0 = everything[0]
    assert q0.index == 0 and q0.sample_id == "conv-26" and q0.category_name in {"multi-hop", "temporal", "open-domain", "single-hop"}


def test_answers_are_text_and_adversarial_have_their_answer(dataset):
    qs = [q for c in dataset for q in all_questions(c)]
    assert all(q.answer is None or isinstance(q.answer, str) for q in qs)
    assert sum(q.answer is None for q in qs) == 444
    assert sum(q.adversarial_answer is not None for q in qs if q.category == 5) == 446


def test_all_evidence_ids_are_normalised(dataset):
    for c in dataset:
        for q in c.questions:
            for e in q.evidence:
                assert e.startswith("D") and e.count(":") == 1 and " " not in e


@pytest.mark.parametrize(
    "raw, expected",
    [
        (["D1:3"], ("D1:3",)),
        (["D8:6; D9:17"], ("D8:6", "D9:17")),
        (["D:11:26"], ("D11:26",)),
        (["D9:1 D4:4 D4:6"], ("D9:1", "D4:4", "D4:6")),
        (["D"], ()),
        (["D1:3", "D1:3"], ("D1:3",)),
    ],
)
def test_normalize_evidence(raw, expected):
    assert normalize_evidence(raw) == expected


def test_select(dataset):
    assert len(select(dataset, "all")) == 10
    assert [c.sample_id for c in select(dataset, "conv-26, conv-30")] == ["conv-26", "conv-30"]
    with pytest.raises(KeyError, match="Unknown sample 'conv-99'.*conv-26"):
        select(dataset, "conv-99")


def test_an_unknown_sample_is_one_line_in_a_notebook(dataset, dataset_path, tmp_path):
    """``papermill 01_dataset.ipynb out.ipynb -p sample conv-99``: the cell's error is the message, which lists the
    known samples, not a traceback through the library (the error is a DatasetError and a KeyError alike)."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    with pytest.raises(UnknownSample) as caught:
        select(dataset, "conv-99")
    assert isinstance(caught.value, (KeyError, ValueError)) and str(caught.value).startswith("Unknown sample 'conv-99'")
    notebook = Path(__file__).resolve().parents[1] / "notebooks" / "01_dataset.ipynb"
    with pytest.raises(PapermillExecutionError) as failed:
        papermill.execute_notebook(str(notebook), str(tmp_path / "out.ipynb"), cwd=str(notebook.parent),
                                   parameters={"sample": "conv-99", "dataset_path": str(dataset_path)},
                                   progress_bar=False, kernel_name="python3")
    error = failed.value
    assert error.ename == "UnknownSample"
    assert error.traceback == [f"UnknownSample: {error.evalue}"]
    assert "Known samples: conv-26, conv-30" in error.evalue


def _write(tmp_path: Path, content: str) -> Path:
    p = tmp_path / "locomo.json"
    p.write_text(content, encoding="utf-8")
    return p


def _one_sample(dataset_path: Path) -> dict:
    return json.loads(dataset_path.read_text())[0]


def test_missing_file_says_how_to_fetch(tmp_path):
    with pytest.raises(DatasetError, match="locomo-kit data fetch"):
        load_dataset(tmp_path / "nope.json")


def test_invalid_json_says_where(tmp_path, monkeypatch):
    with pytest.raises(DatasetError, match=r"not valid JSON \(.*, line 2, column \d+\)$"):
        load_dataset(_write(tmp_path, '[\n{"sample_id": }]'))  # the user's own file: no fetch hint
    monkeypatch.setenv("LOCOMO_DATA_DIR", str(tmp_path / "data"))
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "locomo10.json").write_text('[{"sample_id": ')
    with pytest.raises(DatasetError, match=r"line 1, column \d+\)\. Replace it .*`locomo-kit data fetch --force`"):
        load_dataset()  # the project's copy, damaged: how to replace it


@pytest.mark.parametrize("content", ['{"a": 1}', "[]", '"text"'])
def test_not_locomo_is_rejected(tmp_path, content):
    with pytest.raises(DatasetError, match="not LoCoMo"):
        load_dataset(_write(tmp_path, content))


def test_schema_violation_names_sample_key_and_expectation(tmp_path, dataset_path):
    sample = _one_sample(dataset_path)
    sample["qa"][3]["category"] = "two"
    with pytest.raises(DatasetError, match=r"sample 'conv-26'\.qa\[3\]: key 'category' should be int, got str"):
        load_dataset(_write(tmp_path, json.dumps([sample])))


def test_bad_session_date_is_named(tmp_path, dataset_path):
    sample = _one_sample(dataset_path)
    sample["conversation"]["session_2_date_time"] = "yesterday"
    with pytest.raises(DatasetError, match=r"conv-26'\.conversation: 'session_2_date_time' = 'yesterday'"):
        load_dataset(_write(tmp_path, json.dumps([sample])))


def test_broken_turn_rejects_whole_file(tmp_path, dataset_path):
    good = _one_sample(dataset_path)
    bad = json.loads(json.dumps(good))
    bad["sample_id"] = "conv-x"
    del bad["conversation"]["session_1"][0]["text"]
    with pytest.raises(DatasetError, match=r"conv-x'\.conversation\.session_1\[0\]: missing key 'text'"):
        load_dataset(_write(tmp_path, json.dumps([good, bad])))


def test_duplicate_samples_rejected(tmp_path, dataset_path):
    s = _one_sample(dataset_path)
    with pytest.raises(DatasetError, match="duplicate sample_id"):
        load_dataset(_write(tmp_path, json.dumps([s, s])))


def test_a_file_read_again_is_parsed_again_only_when_it_changed(tmp_path, dataset_path):
    """Each stage reads the dataset again: the parse is kept while the file is unchanged, and a file rewritten in
    place (a fetch, an edit) is read anew."""
    path = tmp_path / "locomo10.json"
    raw = json.loads(dataset_path.read_text())
    path.write_text(json.dumps(raw))
    first, again = load_dataset(path), load_dataset(path)
    assert again == first and again is not first and again[0] is first[0]  # a list of its own, shared conversations
    path.write_text(json.dumps(raw[:2]))
    assert [c.sample_id for c in load_dataset(path)] == [c.sample_id for c in first[:2]]
    path.write_text(json.dumps(raw[:2])[:-1])  # broken where it was good: the error, not the earlier parse
    with pytest.raises(DatasetError, match="not valid JSON"):
        load_dataset(path)
