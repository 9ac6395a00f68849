"""The audited gold key: the pinned audit, its mapping onto the dataset, scoring and judging under both keys."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from locomo_kit.cli import main
from locomo_kit.data_fetch import AUDIT_SHA256, DataFetchError, fetch_audit, sha256_file
from locomo_kit.scoring.gold import AuditError, ceilings, keys_for, load_audit
from locomo_kit.scoring.locomo_f1 import locomo_f1

from support.claude_mem_standin import serve
from support.llm_standins import Script, openai_app, openai_completion


@pytest.fixture(scope="session")
def audit_path():
    return fetch_audit()


def test_fetch_audit_copies_a_local_file_and_refuses_a_wrong_one(audit_path, tmp_path, monkeypatch):
    monkeypatch.setenv("LOCOMO_AUDIT_SOURCE", str(audit_path))
    dest = fetch_audit(tmp_path / "a" / "errors.json")
    assert sha256_file(dest) == AUDIT_SHA256 and [p.name for p in dest.parent.iterdir()] == ["errors.json"]
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    with pytest.raises(DataFetchError, match="not the pinned LoCoMo audit.*Nothing was written"):
        fetch_audit(tmp_path / "b" / "errors.json", source=str(bad))
    monkeypatch.setenv("LOCOMO_AUDIT_SOURCE", str(tmp_path / "missing.json"))
    with pytest.raises(DataFetchError, match="LOCOMO_AUDIT_SOURCE points to"):
        fetch_audit(tmp_path / "c" / "errors.json")


def test_all_156_audit_entries_map_onto_their_questions(audit_path, dataset):
    audit = load_audit(audit_path, [c.sample_id for c in dataset], dataset)
    assert len(audit) == 156
    questions = {(c.sample_id, q.index): q for c in dataset for q in c.questions}
    raw = {e["question_id"]: e for e in json.loads(audit_path.read_text())}
    for (sample_id, index), entry in audit.items():
        q = questions[(sample_id, index)]
        assert q.question == raw[entry.question_id]["question"] and q.category == entry.category
        assert str(q.answer) == entry.original_answer
        conv = int(re.match(r"locomo_(\d+)_", entry.question_id).group(1))
        assert dataset[conv].sample_id == sample_id
    assert Counter(e.error_type for e in audit.values())["WRONG_CITATION"] == 57
    assert sum(e.answer_changed for e in audit.values()) == 99
    # evidence-only entries keep the gold answer even where the audit's correct_answer holds a comment
    commented = [e for e in audit.values() if "citation" in raw[e.question_id]["correct_answer"]]
    assert commented and all(e.answer == e.original_answer for e in commented)


def test_a_question_text_that_differs_is_refused(audit_path, dataset, tmp_path):
    raw = json.loads(audit_path.read_text())
    raw[5]["question"] = "Something else?"
    bad = tmp_path / "errors.json"
    bad.write_text(json.dumps(raw))
    with pytest.raises(AuditError, match=raw[5]["question_id"]):
        load_audit(bad, [c.sample_id for c in dataset], dataset)
    raw[5]["question_id"] = "locomo_42_qa1"
    bad.write_text(json.dumps(raw))
    with pytest.raises(AuditError, match="names no conversation"):
        load_audit(bad, [c.sample_id for c in dataset], dataset)


def test_ceilings_of_the_original_key(audit_path, dataset):
    audit = load_audit(audit_path, [c.sample_id for c in dataset], dataset)
    c = ceilings([(q.sample_id, q.index, q.category) for conv in dataset for q in conv.questions], audit)
    assert c["overall"]["questions"] == 1540 and c["overall"]["answers_changed"] == 99
    assert c["overall"]["ceiling"] == pytest.approx(100 * (1 - 99 / 1540))  # 93.57%
    assert sum(c[k]["answers_changed"] for k in (1, 2, 3, 4)) == 99
    with pytest.raises(ValueError, match="--gold must be one of"):
        keys_for("fixed")


@pytest.fixture(scope="module")
def g1_run(offline_run):
    return offline_run("--sample", "conv-26", "--top-k", "10", run_id="g1")


def test_score_gold_both_on_a_judged_run(g1_run, audit_path, dataset, capsys):
    """`score --gold both` with a judge (an OpenAI-compatible stand-in on loopback): both keys' tables,
    ceilings, the audited J, corrected evidence ids in the diagnostics, and the calibration section."""
    run = g1_run
    script = Script([(200, openai_completion('{"explanation": "e", "label": "CORRECT"}'))])
    with serve(openai_app(script)) as url:
        assert main(["score", "--sample", "conv-26", "--run-id", "g1", "--gold", "both", "--judge-model",
                     "openai/judge-m", "--judge-base-url", f"{url}/v1", "--judge-protocol", "mem0", "--judge-runs", "1",
                     "--calibration-size", "20"]) == 0
    printed = capsys.readouterr().out
    assert "gold key: original" in printed and "gold key: audited" in printed
    assert re.search(r"calibration \(mem0, openai/judge-m\): vague-topical answers false-accept 100\.0% of \d+", printed)
    assert re.search(r"J \(mem0, % correct, judged by openai/judge-m\): 100\.0 \[[\d.]+, 100\.0\] over \d+ questions",
                     printed)
    assert "WARNING: the judge openai/judge-m (mem0) accepted 100% of" in printed
    assert main(["report", "--sample", "conv-26", "--run-id", "g1"]) == 0
    top = (run.path / "report.md").read_text().split("## Run facts")[0]
    assert "The J numbers below are unreliable:" in top and "vague non-answers" in top
    audit = load_audit(audit_path, [c.sample_id for c in dataset], [dataset[0]])
    changed = {k for k, e in audit.items() if e.answer_changed}
    answers = [json.loads(line) for line in (run.path / "answers.jsonl").read_text().splitlines()]
    prompts = [r["body"]["messages"][-1]["content"] for r in script.requests]
    # every answer once with its original gold; each changed question again with the audited gold
    for a in answers:
        entry = audit.get(("conv-26", a["question_index"]))
        with_original = [p for p in prompts if f"Question: {a['question']}\nGold answer: {a['gold']}\nGenerated answer: {a['prediction']}\n" in p]
        assert len(with_original) == 1, a["question_index"]
        if entry and entry.answer_changed:
            assert any(f"Gold answer: {entry.answer}\nGenerated answer: {a['prediction']}\n" in p for p in prompts)
    scores = [json.loads(line) for line in (run.path / "scores.jsonl").read_text().splitlines()]
    audited = {s["question_index"]: s for s in scores if s["gold_key"] == "audited"}
    assert len(audited) == len(answers) == len([s for s in scores if s["gold_key"] == "original"])
    for a in answers:
        entry = audit.get(("conv-26", a["question_index"]))
        gold = entry.answer if entry and entry.answer_changed else a["gold"]
        assert audited[a["question_index"]]["locomo_f1"] == pytest.approx(locomo_f1(a["prediction"], gold, a["category"]))
        assert audited[a["question_index"]]["gold_changed"] == (("conv-26", a["question_index"]) in changed)
        if entry:  # corrected evidence ids drive the audited diagnostics
            assert audited[a["question_index"]]["evidence_sessions"] == sorted({int(e[1:].split(":")[0]) for e in entry.evidence})
    text = (run.path / "report.md").read_text()
    n_changed = len(changed)
    assert "## 1b. Both gold keys: original and audited" in text
    cat14 = sum(1 for a in answers if a["category"] != 5)
    assert f"| overall | {n_changed} of {cat14} | {100 * (1 - n_changed / cat14):.1f} |" in text
    assert "J mem0 original | J mem0 audited" in text
    assert "## 2b. Judge calibration" in text
    assert re.search(r"\| mem0 \| openai/judge-m \| judge-mem0-paraphrase-v1 \| vague-topical \| false-accept \| \d+ \| 100\.0 \|", text)
