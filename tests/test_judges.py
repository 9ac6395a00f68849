"""Several judges over the same answers: Mem0 platform's published answers imported with the two published
verdict sets (per conversation, pooled, agreement and kappa against a direct computation from the files, the
disagreements in the browser), bad verdict files, and a run judged by the kit twice beside an imported set."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fastapi import FastAPI, Request
from import_helpers import published_copy

from locomo_kit.cli import main
from locomo_kit.imported.verdicts import VerdictImportError, VerdictMapping
from locomo_kit.llm import ScriptedLLM
from locomo_kit.llm.execute import CallSettings
from locomo_kit.llm.openai_llm import OpenAICompatibleLLM
from locomo_kit.pipeline.judges import add_verdicts, bank_judges, write_judges
from locomo_kit.pipeline.stages import run_judge
from locomo_kit.reports.imported_board import imported_lines, imported_rows
from locomo_kit.reports.judges import shared_judges
from locomo_kit.runs import RunFolder
from locomo_kit.scoring.agreement import cohen_kappa, fleiss_kappa
from locomo_kit.scoring.rules import DEFAULT_BASIS, RULES, polarity
from locomo_kit.settings import Judge

from support.chromium import Opened
from support.claude_mem_standin import serve
from support.llm_standins import openai_completion

ANSWERS = [f"mem0-platform/conv{i}.json" for i in range(10)]
VERDICTS = {p: [f"mem0-platform-verdicts/B_conv{i}_{p}.json" for i in range(10)] for p in ("mem0", "strict")}
ANSWER_MAP = ["--map", "records=", "--map", "conversation=@file", "--map", "question=question", "--map", "answer=answer",
              "--map", "category=category", "--map", "gold=gold", "--system", "mem0-platform"]
VERDICT_MAP = ["--verdict-map", "id=qid", "--verdict-map", "verdict=label", "--verdict-map", "explanation=reasoning",
               "--verdict-label", "CORRECT=correct", "--verdict-label", "WRONG=wrong"]
MAPPING = VerdictMapping.from_options(["id=qid", "verdict=label", "explanation=reasoning"],
                                      ["CORRECT=correct", "WRONG=wrong"])
ORDER = ["conv-26", "conv-30", "conv-41", "conv-42", "conv-43", "conv-44", "conv-47", "conv-48", "conv-49", "conv-50"]


def _qid(qid: str) -> tuple[str, int]:
    conv, index = re.fullmatch(r"conv(\d+)_q(\d+)", qid).groups()
    return ORDER[int(conv)], int(index)


@pytest.fixture(scope="module")
def mem0(tmp_path_factory: pytest.TempPathFactory, dataset_path: Path) -> dict:
    """Mem0 platform's 1,539 answers imported with both verdict sets, as a user runs it."""
    tmp = tmp_path_factory.mktemp("mem0-platform")
    mp = pytest.MonkeyPatch()
    mp.setenv("LOCOMO_OUTPUTS_DIR", str(tmp / "outputs"))
    mp.setenv("CI", "1")
    try:
        files = published_copy(tmp, *ANSWERS, *VERDICTS["mem0"], *VERDICTS["strict"],
                               "mem0-platform-verdicts/summary.json")
        answers, mem0, strict = files[:10], files[10:20], files[20:30]
        assert main(["import", *map(str, answers), *ANSWER_MAP, "--run-id", "mem0-platform",
                     "--verdicts", *map(str, mem0), "--judge-name", "gpt-5 mem0 prompt",
                     "--verdicts", *map(str, strict), "--judge-name", "gpt-5 strict prompt", *VERDICT_MAP]) == 0
        run = RunFolder("mem0-platform", root=tmp / "outputs" / "runs")
        _, matrix = write_judges(run)
    finally:
        mp.undo()
    raw = {p: {_qid(r["qid"]): r for f in fs for r in json.loads(f.read_text())} for p, fs in
           (("mem0", mem0), ("strict", strict))}
    return {"run": run, "matrix": matrix, "raw": raw, "summary": json.loads(files[30].read_text()), "tmp": tmp,
            "files": {"answers": answers, "mem0": mem0, "strict": strict}}


def test_the_producers_accuracies_per_conversation_and_pooled(mem0):
    e = mem0["matrix"]["keys"]["original"]
    per_conv = e["by_conversation"]
    for row in mem0["summary"]["B_cross_conversation"]["per_conversation"]:
        sample = ORDER[int(row["conv"][4:])]
        assert per_conv["gpt-5 mem0 prompt"][sample]["n"] == row["n"]
        assert per_conv["gpt-5 mem0 prompt"][sample]["rate"] == pytest.approx(100 * row["mem0_acc"], abs=0.01)
        assert per_conv["gpt-5 strict prompt"][sample]["rate"] == pytest.approx(100 * row["strict_acc"], abs=0.01)
    assert round(e["j"]["gpt-5 mem0 prompt"]["overall"]["rate"], 1) == 91.0
    assert round(e["j"]["gpt-5 strict prompt"]["overall"]["rate"], 1) == 35.0
    assert e["j"]["gpt-5 mem0 prompt"]["overall"]["k"] == 1401 and e["j"]["gpt-5 strict prompt"]["overall"]["k"] == 538


def test_agreement_and_kappa_equal_a_direct_computation_from_the_files(mem0):
    raw = mem0["raw"]
    qs = sorted(raw["mem0"])
    a = [raw["mem0"][q]["label"] == "CORRECT" for q in qs]
    b = [raw["strict"][q]["label"] == "CORRECT" for q in qs]
    n, agree = len(qs), sum(x == y for x, y in zip(a, b))
    pa, pb = sum(a) / n, sum(b) / n
    expected = pa * pb + (1 - pa) * (1 - pb)
    kappa = (agree / n - expected) / (1 - expected)
    pair = next(p for p in mem0["matrix"]["keys"]["original"]["pairs"]
                if {p["a"], p["b"]} == {"gpt-5 mem0 prompt", "gpt-5 strict prompt"})
    assert pair["n"] == n == 1539 and pair["agreement"]["k"] == agree
    assert pair["agreement"]["rate"] == pytest.approx(100 * agree / n) and pair["kappa"] == pytest.approx(kappa)
    assert pair["kappa_low"] < kappa < pair["kappa_high"]
    differ = {q for q in qs if raw["mem0"][q]["label"] != raw["strict"][q]["label"]}
    split = {(d["sample_id"], d["question_index"]) for d in mem0["matrix"]["keys"]["original"]["disagreements"]}
    assert split == differ and len(differ) == 1539 - agree
    report = (mem0["run"].path / "report.md").read_text()
    assert "## 9. Judges side by side" in report and f"**{len(differ)} questions on which the judges that read the answers" in report
    assert "| rule:f1 | rule | F1 ≥ 0.5 |" in report  # the basis named, never "correct"


def test_the_swing_fleiss_and_both_gold_keys(mem0):
    m = mem0["matrix"]
    assert set(m["keys"]) == {"original", "audited"}
    swing = m["keys"]["original"]["swing"]["overall"]
    assert swing["highest"] == "gpt-5 mem0 prompt" and swing["lowest"] == "gpt-5 strict prompt"
    assert swing["points"] == pytest.approx(100 * (1401 - 538) / 1539)
    fleiss = m["keys"]["original"]["fleiss"]
    assert fleiss["n"] == 1539 and len(fleiss["judges"]) == 5
    audited = {j["name"]: j for j in m["judges"]}["gpt-5 mem0 prompt"]
    assert audited["not_audited"] > 0  # the audit's changed questions: imported sets did not judge them again
    assert m["keys"]["audited"]["j"]["gpt-5 mem0 prompt"]["overall"]["n"] == 1539 - audited["not_audited"]


@pytest.mark.integration  # Chromium
def test_the_explorer_lists_exactly_the_questions_the_two_files_differ_on(mem0, browser):
    raw = mem0["raw"]
    opened = Opened(browser, mem0["run"].path / "report.html")
    page = opened.page
    try:
        assert opened.errors == [] and opened.rows() == 1539
        shown = set()
        for right, wrong, want in (("gpt-5 mem0 prompt", "gpt-5 strict prompt", ("CORRECT", "WRONG")),
                                   ("gpt-5 strict prompt", "gpt-5 mem0 prompt", ("WRONG", "CORRECT"))):
            page.select_option("#f-right", right)
            page.select_option("#f-wrong", wrong)
            ids = set(page.locator("#explorer-rows tr.row").evaluate_all("rows => rows.map(r => r.dataset.id)"))
            expect = {f"{s}:{i}" for (s, i) in raw["mem0"]
                      if (raw["mem0"][(s, i)]["label"], raw["strict"][(s, i)]["label"]) == want}
            assert ids == expect
            shown |= ids
        differ = {f"{s}:{i}" for (s, i) in raw["mem0"] if raw["mem0"][(s, i)]["label"] != raw["strict"][(s, i)]["label"]}
        assert shown == differ
        page.select_option("#f-right", "gpt-5 mem0 prompt")
        page.select_option("#f-wrong", "gpt-5 strict prompt")
        first = page.locator("#explorer-rows tr.row").first
        sid, qi = first.get_attribute("data-id").split(":")
        first.click()
        text = page.locator("#explorer-rows tr.detail-row").inner_text()
        for name, key in (("gpt-5 mem0 prompt", "mem0"), ("gpt-5 strict prompt", "strict")):
            assert f"judge: {name}" in text and raw[key][(sid, int(qi))]["reasoning"][:40] in text
        assert opened.errors == []
    finally:
        page.close()


def _cut(src: Path, dest: Path, edit) -> Path:
    records = json.loads(src.read_text())
    dest.write_text(json.dumps(edit(records)))
    return dest


def test_bad_verdict_files_are_refused_or_listed(mem0, tmp_path, dataset_path):
    run, files = mem0["run"], mem0["files"]
    # a label outside the mapping: refused, naming the label, its count and where it is
    odd = _cut(files["mem0"][0], tmp_path / "B_conv0_odd.json",
               lambda rs: [dict(r, label="PARTIAL") if i < 3 else r for i, r in enumerate(rs)])
    with pytest.raises(VerdictImportError, match=r"3 verdicts have labels outside the mapping .*'PARTIAL' ×3 .*"
                                                 r"--verdict-label"):
        add_verdicts(run, files=[odd, *files["mem0"][1:]], name="odd", mapping=MAPPING, dataset_path=dataset_path)
    # a set that covers part of the answers: added, and what it leaves out counted and listed
    part = add_verdicts(run, files=files["strict"][:3], name="strict, three conversations", mapping=MAPPING,
                        dataset_path=dataset_path)
    assert part.added == 152 + 81 + 152 and part.answers == 1539
    assert sum(x["reason"] == "answer the set leaves out" for x in part.listed) == 1539 - part.added
    listing = json.loads((run.path / "verdicts.json").read_text())["strict, three conversations"]
    assert listing["added"] == part.added and len(listing["listed"]) == 1539 - part.added
    # the same name for other files: refused; the same files again: unchanged
    with pytest.raises(VerdictImportError, match="already holds a verdict set named 'gpt-5 mem0 prompt'"):
        add_verdicts(run, files=files["strict"], name="gpt-5 mem0 prompt", mapping=MAPPING, dataset_path=dataset_path)
    assert add_verdicts(run, files=files["mem0"], name="gpt-5 mem0 prompt", mapping=MAPPING,
                        dataset_path=dataset_path).already
    # a verdict file over another run's answers: its answers are not this run's
    other = _cut(files["answers"][0], tmp_path / "conv0_other.json",
                 lambda rs: [dict(r, answer=r["answer"] + " (another run)", verdict=True) for r in rs])
    with pytest.raises(VerdictImportError, match="judges other answers than this run's: 152 of 152"):
        add_verdicts(run, files=[other], name="other run", dataset_path=dataset_path,
                     mapping=VerdictMapping.from_options(["question=question", "answer=answer", "verdict=verdict"], []))
    # two sets with one name on one command line
    assert main(["judges", str(run.path), "--verdicts", str(files["mem0"][0]), "--judge-name", "x",
                 "--verdicts", str(files["strict"][0]), "--judge-name", "x", *VERDICT_MAP]) == 1


def _judge_app(seen: list[str]) -> FastAPI:
    """An OpenAI-compatible server that labels by a rule: CORRECT when the answer repeats a word of the gold
    (both prompts), WRONG otherwise; the strict prompt also rejects answers longer than eight words."""
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        prompt = (await request.json())["messages"][-1]["content"]
        if "Gold answer: " not in prompt:  # not a judge call (a probe of the server)
            return openai_completion("ok")
        gold = prompt.split("Gold answer: ")[1].split("\n")[0].lower().split()
        answer = prompt.split("Generated answer: ")[1].split("\n\nGive a one-sentence")[0].lower()
        ok = any(w in answer for w in gold)
        if "Grade strictly" in prompt:
            ok = ok and len(answer.split()) <= 8
        seen.append("strict" if "Grade strictly" in prompt else "mem0")
        return openai_completion(json.dumps({"explanation": "rule", "label": "CORRECT" if ok else "WRONG"}))

    return app


def test_a_run_judged_twice_by_the_kit_and_an_imported_set_in_one_matrix(mem0, tmp_path, monkeypatch, dataset_path):
    monkeypatch.setenv("LOCOMO_OUTPUTS_DIR", str(tmp_path / "outputs"))
    answers = mem0["files"]["answers"][:1]
    assert main(["import", str(answers[0]), *ANSWER_MAP, "--run-id", "conv0", "--verdicts",
                 str(mem0["files"]["mem0"][0]), "--judge-name", "gpt-5 mem0 prompt", *VERDICT_MAP]) == 0
    run = RunFolder("conv0", root=tmp_path / "outputs" / "runs")
    seen: list[str] = []
    with serve(_judge_app(seen)) as url:
        for model, protocol in (("local-judge", "mem0"), ("local-judge", "strict"), ("other-judge", "mem0")):
            llm = OpenAICompatibleLLM(model, base_url=f"{url}/v1", sleep=lambda s: None)
            made = run_judge(run, judge=Judge(protocol=protocol, llm=llm, runs=1, calibration_size=0), gold="original",
                             dataset_path=str(dataset_path), calls=CallSettings(progress=False))
            assert len(made) == 152  # another model under the same protocol: a set of its own, judged afresh
    assert seen.count("mem0") == 2 * 152 and seen.count("strict") == 152
    _, m = write_judges(run)
    names = [j["name"] for j in m["judges"]]
    kit = [n for n in names if n.startswith("openai/local-judge")]
    assert len(kit) == 2 and "gpt-5 mem0 prompt" in names and "openai/other-judge mem0 judge-mem0-paraphrase-v1" in names
    kit.append("openai/other-judge mem0 judge-mem0-paraphrase-v1")
    e = m["keys"]["original"]
    assert set(e["fleiss"]["judges"]) >= {*kit, "gpt-5 mem0 prompt"} and e["fleiss"]["n"] == 152
    assert {p["a"] for p in e["pairs"]} | {p["b"] for p in e["pairs"]} >= {*kit, "gpt-5 mem0 prompt"}
    assert set(e["swing"]["overall"]["among"]) == {*kit, "gpt-5 mem0 prompt"}
    rows = [json.loads(line) for line in (run.path / "judgements.jsonl").read_text().splitlines()]
    strict = [r for r in rows if r["protocol"] == "strict"]
    assert sum(r["mean"] for r in strict) == e["j"][next(n for n in kit if " strict " in n)]["overall"]["k"]
    out = main(["judges", "conv0"])
    assert out == 0 and "## The judge matrix" in (run.path / "judges.md").read_text()
    # compare and the leaderboard's imported section: J of each run under the judges they share, and who lacks one
    both = [run, mem0["run"]]
    shared = shared_judges(both)
    assert shared["judges"]["gpt-5 mem0 prompt"]["conv0"]["k"] == sum(
        r["label"] == "CORRECT" for q, r in mem0["raw"]["mem0"].items() if q[0] == "conv-26")
    assert shared["judges"]["gpt-5 mem0 prompt"]["mem0-platform"]["k"] == 1401
    assert set(shared["lacking"]) >= {"gpt-5 mem0 prompt", "rule:f1"} and not shared["lacking"]["gpt-5 mem0 prompt"]
    one = shared_judges(both, judge=kit[0])
    assert one["lacking"] == {kit[0]: ["mem0-platform"]}
    board = "\n".join(imported_lines(imported_rows([str(r.path) for r in both])))
    assert "### J on one footing: the judges these runs share" in board and "| gpt-5 mem0 prompt |" in board
    chosen = "\n".join(imported_lines(imported_rows([str(r.path) for r in both]), judge=kit[0]))
    assert f"### J on one footing: under {kit[0]}" in chosen and f"{kit[0]}: mem0-platform." in chosen
    assert main(["compare", str(run.path), str(mem0["run"].path), "--out", str(tmp_path / "cmp")]) == 0
    compare_md = (tmp_path / "cmp" / "compare.md").read_text()
    assert "## J under the judges the runs share" in compare_md and "| rule:f1 |" in compare_md


def test_the_rules_and_the_statistics_on_small_cases():
    f1, polar, strict = RULES.values()
    assert f1.decide("Likely yes", "Likely no", 3) and not polar.decide("Likely yes", "Likely no", 3)
    assert not f1.decide("three", "3", 2) and strict.decide("three", "3", 2)
    assert polarity("No, she did not.") == "no" and polarity("Yes, Jon and Gina do.") == "yes"
    assert polarity("In the studio") is None
    assert cohen_kappa([True, True, False, False], [True, True, False, False]) == pytest.approx(1.0)
    assert cohen_kappa([True, False, True, False], [True, True, False, False]) == pytest.approx(0.0)
    # Fleiss' kappa: Wikipedia's worked example has 5 categories; two raters on two categories equal Scott's pi
    a, b = [True, True, False, False, True], [True, False, False, False, True]
    p = (sum(a) + sum(b)) / 10
    pi = (sum(x == y for x, y in zip(a, b)) / 5 - (p * p + (1 - p) * (1 - p))) / (1 - (p * p + (1 - p) * (1 - p)))
    assert fleiss_kappa([a, b]) == pytest.approx(pi)


def test_the_judge_bank_as_people_beside_the_rules_and_a_kit_judge(tmp_path, monkeypatch):
    monkeypatch.setenv("LOCOMO_OUTPUTS_DIR", str(tmp_path / "outputs"))
    bank, report_md = published_copy(tmp_path, "judge-bank/final-bank.json", "judge-bank/REPORT.md")
    items = json.loads(bank.read_text())["items"]
    candidates = {(it["question"], it["candidateAnswer"]): it["intendedClass"] for it in items}

    def reply(system: str, prompt: str) -> str:  # accepts correct and vague answers, rejects specific-wrong ones
        answer = prompt.split("Generated answer: ")[1].split("\n\nGive a one-sentence")[0]
        question = prompt.split("Question: ")[1].split("\nGold answer: ")[0]
        label = "WRONG" if candidates[(question, answer)] == "specific-wrong" else "CORRECT"
        return json.dumps({"explanation": "scripted", "label": label})

    path, m = bank_judges(bank, llm=ScriptedLLM(reply, model="scripted"), protocol="mem0", runs=3)
    people = m["keys"]["original"]["people"]
    assert people["human"] == "human" and people["classes"] == {c: 80 for c in people["classes"]}
    rows = {r["judge"]: r for r in people["rows"]}
    kit = rows["fake/scripted mem0 judge-mem0-paraphrase-v1 ×3"]
    assert kit["acceptance"]["correct"]["k"] == 80 and kit["acceptance"]["specific-wrong"]["k"] == 0
    assert kit["acceptance"]["vague-topical-wrong"]["k"] == 80 and kit["agreement"]["k"] == 160
    assert kit["acceptance"]["vague-topical-wrong"]["low"] > 95
    # the rules are judges against people too, measured on the same 240 answers
    f1 = rows["rule:f1"]
    direct = sum((it["intendedClass"] == "correct") == RULES["rule:f1"].decide(it["candidateAnswer"],
                                                                               it["referenceAnswer"], int(it["category"]))
                 for it in items)
    assert f1["agreement"]["k"] == direct and f1["n"] == 240
    md = path.read_text()
    assert "| published: mem0 | 78.3 [72.7, 83.1] |" in md and "| published: strict-dial | 87.9" in md
    assert "Against people (human" in md
    # the same folder again: the kit judge's set is kept, nothing is asked again
    _, again = bank_judges(bank)
    assert {r["judge"] for r in again["keys"]["original"]["people"]["rows"]} == set(rows)
    assert report_md.is_file()


def test_peoples_labels_imported_by_mapping_are_the_judge_human(mem0, tmp_path, dataset_path):
    """Any (conversation, question, answer, verdict) file: here conv-26's answers labelled with one set's verdicts
    and a class, imported by mapping under the name human."""
    answers = json.loads(mem0["files"]["answers"][0].read_text())
    raw = mem0["raw"]["mem0"]
    labels = [{"conversation": "conv-26", "question": a["question"], "answer": a["answer"],
               "ok": raw[_qid(a["qid"])]["label"] == "CORRECT",
               "kind": "correct" if raw[_qid(a["qid"])]["label"] == "CORRECT" else "specific-wrong"} for a in answers]
    path = tmp_path / "labels.json"
    path.write_text(json.dumps(labels))
    mapping = VerdictMapping.from_options(["conversation=conversation", "question=question", "answer=answer",
                                           "verdict=ok", "class=kind"], [])
    added = add_verdicts(mem0["run"], files=[path], name="human", mapping=mapping, dataset_path=dataset_path)
    assert added.added == 152
    _, m = write_judges(mem0["run"])
    people = m["keys"]["original"]["people"]
    rows = {r["judge"]: r for r in people["rows"]}
    same = rows["gpt-5 mem0 prompt"]  # the labels are that set's verdicts: full agreement on the 152
    assert same["n"] == 152 and same["agreement"]["k"] == 152 and same["kappa"] == pytest.approx(1.0)
    assert same["acceptance"]["correct"]["rate"] == 100.0 and same["acceptance"]["specific-wrong"]["k"] == 0
    assert people["best"]["judge"] == "gpt-5 mem0 prompt" and people["best"]["clears"]
    assert "**gpt-5 mem0 prompt agrees best with people**" in (mem0["run"].path / "judges.md").read_text()


def test_every_report_shows_its_answerers_no_memory_floor(report_runs):
    report = (report_runs.default.path / "report.md").read_text()
    floor = report.split("**No-memory floor.**")[1].split("\n\n", 2)
    table = floor[1]
    assert "| category | n | no memory | this run |" in table and "| overall | 152 |" in table
    rows = {cells[0]: cells for line in table.splitlines()[2:]
            for cells in [[c.strip() for c in line.strip().strip("|").split("|")]]}
    assert set(rows) == {"1 multi-hop", "2 temporal", "3 open-domain", "4 single-hop", "overall"}
    assert float(rows["overall"][2]) < float(rows["overall"][3])  # the memory helps this run above its floor
    assert "## 8. Judges side by side" in report and "| rule:f1 | rule | F1 ≥ 0.5 |" in report


def test_the_default_binary_basis_is_the_rule_that_agrees_best_with_people(tmp_path):
    (bank,) = published_copy(tmp_path, "judge-bank/final-bank.json")
    items = json.loads(bank.read_text())["items"]
    agreement = {name: sum((it["intendedClass"] == "correct") == rule.decide(it["candidateAnswer"], it["referenceAnswer"],
                                                                             int(it["category"])) for it in items)
                 for name, rule in RULES.items()}
    best = max(agreement.values())
    assert agreement == {"rule:f1": 205, "rule:f1-polarity": 208, "rule:f1-strict": 208}  # docs/scoring.md
    simplest_best = next(name for name in RULES if agreement[name] == best)  # RULES: simplest first
    assert DEFAULT_BASIS.name == simplest_best and DEFAULT_BASIS.label == "F1 ≥ 0.5, yes/no polarity"


def test_the_leaderboard_shows_imported_runs_under_one_chosen_judge(mem0, tmp_path, monkeypatch, capsys):
    """`leaderboard --imported … --judge NAME`: J under that judge for every imported run that has it, the runs that
    lack it named, on the page and in the json; a name no run has is refused before any work, naming their sets."""
    monkeypatch.setenv("LOCOMO_OUTPUTS_DIR", str(tmp_path / "outputs"))
    monkeypatch.setenv("LOCOMO_EMBEDDER", "hashing")
    monkeypatch.setenv("CI", "1")
    assert main(["import", str(mem0["files"]["answers"][1]), *ANSWER_MAP, "--run-id", "conv1-strict", "--verdicts",
                 str(mem0["files"]["strict"][1]), "--judge-name", "gpt-5 strict prompt", *VERDICT_MAP]) == 0
    runs = ",".join([str(mem0["run"].path), str(tmp_path / "outputs" / "runs" / "conv1-strict")])
    argv = ["leaderboard", "--systems", "dense", "--sample", "conv-26", "--sessions", "2", "--imported", runs]
    name = "gpt-5 mem0 prompt"
    assert main(argv + ["--judge", name, "--out", str(tmp_path / "board")]) == 0
    md = (tmp_path / "board" / "leaderboard.md").read_text()
    section = md.split("## Answered elsewhere, scored here")[1].split("## Published")[0]
    footing = section.split(f"### J on one footing: under {name}")[1]
    assert "| judge | mem0-platform | conv1-strict |" in footing
    assert f"| {name} | 91.0 [89.5, 92.4] | – |" in footing  # the producer's pooled 91.0%, none for the other run
    assert f"Runs without a judge's verdicts: {name}: conv1-strict." in footing
    assert "gpt-5 strict prompt" not in footing  # one judge, not every shared one
    board = json.loads((tmp_path / "board" / "leaderboard.json").read_text())
    chosen = board["imported_judge"]
    assert chosen["name"] == name and chosen["lacking"] == ["conv1-strict"] and list(chosen["j"]) == ["mem0-platform"]
    assert chosen["j"]["mem0-platform"]["k"] == 1401 and chosen["j"]["mem0-platform"]["n"] == 1539
    assert [r["run_id"] for r in board["answered_elsewhere"]] == ["mem0-platform", "conv1-strict"]
    # without --judge: every judge they share, and no chosen one in the json
    assert main(argv + ["--out", str(tmp_path / "board2")]) == 0
    assert "### J on one footing: the judges these runs share" in (tmp_path / "board2" / "leaderboard.md").read_text()
    assert json.loads((tmp_path / "board2" / "leaderboard.json").read_text())["imported_judge"] is None
    capsys.readouterr()
    # a name no imported run has (a typo): refused before any system runs, naming each run's verdict sets
    assert main(argv + ["--judge", "gpt-5 mem0 promt", "--out", str(tmp_path / "board3")]) == 1
    out, err = capsys.readouterr()
    assert "no imported run has a verdict set named 'gpt-5 mem0 promt'" in err
    assert "mem0-platform: gpt-5 mem0 prompt, gpt-5 strict prompt" in err and "conv1-strict: gpt-5 strict prompt" in err
    assert "== dense ==" not in out and not (tmp_path / "board3").exists()
    assert main(["leaderboard", "--systems", "dense", "--judge", name]) == 1
    assert "pass the runs with --imported RUN" in capsys.readouterr().err
