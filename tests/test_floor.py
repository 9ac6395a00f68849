"""An LLM answerer's no-memory floor, against an OpenAI-compatible stand-in on loopback: every question asked with
the answer prompt and an empty context, shown per category in the report, measured once per answerer (a second run
makes no floor call), and a failed floor call keeps the run incomplete until a rerun makes exactly those calls."""

from __future__ import annotations

import json
import statistics
import threading
import time
from pathlib import Path

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from locomo_kit.cli import main
from locomo_kit.dataset import Question, questions, select
from locomo_kit.pipeline.stages import run_report
from locomo_kit.qa.answering import ANSWER_MAX_TOKENS
from locomo_kit.qa.context import format_context
from locomo_kit.qa.prompts import ANSWER_SYSTEM, answer_user_prompt
from locomo_kit.runs import RunFolder
from locomo_kit.scoring.locomo_f1 import locomo_f1

from support.claude_mem_standin import serve
from support.llm_standins import openai_completion

EMPTY = format_context([]) + "\n\nQuestion: "


def floor_reply(question: str) -> str:
    """What the stand-in answers with no memory: a year to questions about time, else that it does not know."""
    return "2023" if question.startswith("When") else "No information available"


class FloorServer:
    """An OpenAI-compatible chat server that records every request; with no memory in the prompt it answers by
    :func:`floor_reply`, or 500 for the questions ``fail`` picks; with memories it answers from them."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.fail = lambda question: False

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def chat(request: Request):
            body = await request.json()
            self.requests.append(body)
            content = body["messages"][-1]["content"]
            if not content.startswith(EMPTY):
                return openai_completion("7 May 2023")
            question = content[len(EMPTY):].split("\n")[0]
            if self.fail(question):
                return JSONResponse({"error": {"message": "stand-in outage"}}, 500)
            return openai_completion(floor_reply(question))

        return app

    def floor_requests(self) -> list[dict]:
        return [b for b in self.requests if b["messages"][-1]["content"].startswith(EMPTY)]


def floor_table(report: str) -> dict[str, list[str]]:
    table = report.split("**No-memory floor.**")[1].split("| category | n | no memory | this run |")[1].split("\n\n")[0]
    return {cells[0]: cells[1:] for line in table.strip().splitlines()[1:]
            for cells in [[c.strip() for c in line.strip().strip("|").split("|")]]}


@pytest.fixture
def conv30(dataset) -> list[Question]:
    return questions(select(dataset, "conv-30")[0], False)


def test_an_llm_answerers_floor_is_measured_once_with_no_memory_and_shown_per_category(own_outputs, conv30, capsys):
    server = FloorServer()
    with serve(server.app()) as url:
        argv = ["run", "--sample", "conv-30", "--system", "bm25", "--answer-model", "openai/local",
                "--answer-base-url", f"{url}/v1"]
        assert main(argv) == 0
        out = capsys.readouterr().out
        floor = server.floor_requests()
        # every question once, with the answer prompt and no memory at all
        assert sorted(b["messages"][-1]["content"] for b in floor) == sorted(
            answer_user_prompt(q.question, format_context([])) for q in conv30)
        assert all(b["messages"][0] == {"role": "system", "content": ANSWER_SYSTEM} and b["max_tokens"] == ANSWER_MAX_TOKENS
                   and "- [" not in b["messages"][-1]["content"] for b in floor)
        assert "no-memory floor: 81 calls to openai/local still needed (0 already done)" in out
        assert "no-memory floor ok: 81 question(s) of openai/local with an empty context: 81 answered now" in out
        run = RunFolder(next(p.name for p in (own_outputs / "runs").iterdir() if "bm25" in p.name and "b1000" in p.name))
        rows = floor_table((run.path / "report.md").read_text())
        # per category, the official F1 of what the answerer said with no memory, as computed here from the dataset
        assert set(rows) == {f"{c} {q.category_name}" for c, q in {q.category: q for q in conv30}.items()} | {"overall"}
        for cat in sorted({q.category for q in conv30}):
            qs = [q for q in conv30 if q.category == cat]
            name = qs[0].category_name
            expected = 100 * statistics.mean(locomo_f1(floor_reply(q.question), q.answer, cat) for q in qs)
            n, no_memory, _ = rows[f"{cat} {name}"]
            assert int(n) == len(qs) and float(no_memory) == pytest.approx(expected, abs=0.05)
        assert rows["overall"][0] == "81" and float(rows["2 temporal"][1]) > 0  # "2023" earns a part of some dates
        assert len(list((own_outputs / "floors").glob("llm-openai-local-conv-30-*.json"))) == 1
        # the same answerer in another run (another budget): the floor from the cache, no call at all
        assert main(argv + ["--context-budget", "500"]) == 0
        assert "no-memory floor ok: 81 question(s) of openai/local with an empty context: 0 answered now, 0 already in " \
               "this run, 81 from the floor cache, 0 failed" in capsys.readouterr().out
        assert len(server.floor_requests()) == 81
        other = RunFolder(next(p.name for p in (own_outputs / "runs").iterdir() if "b500" in p.name))
        assert {r["source"] for r in other.records("floor.jsonl")} == {"floor cache"}
        assert floor_table((other.path / "report.md").read_text())["overall"][:2] == rows["overall"][:2]
        # another model on the same server is another answerer: measured afresh
        assert main(argv[:6] + ["openai/other"] + argv[7:]) == 0
        assert len(server.floor_requests()) == 2 * 81
    # a run answered before the floor was measured says so, and how to measure it
    manifest = json.loads(run.manifest_path.read_text())
    del manifest["answer"]["floor"]
    run.manifest_path.write_text(json.dumps(manifest))
    run_report(run)
    assert "**No-memory floor.** Not measured: the answers of openai/local were made before" in (
        run.path / "report.md").read_text()


def test_a_failed_floor_call_keeps_the_run_incomplete_and_a_rerun_makes_exactly_those(own_outputs, conv30, capsys):
    server = FloorServer()
    server.fail = lambda question: question.startswith("When")
    failing = sum(q.question.startswith("When") for q in conv30)
    assert 0 < failing < 81
    with serve(server.app()) as url:
        argv = ["run", "--sample", "conv-30", "--system", "bm25", "--answer-model", "openai/local",
                "--answer-base-url", f"{url}/v1", "--retries", "0", "--run-id", "floor-outage"]
        assert main(argv) == 1
        captured = capsys.readouterr()
        assert "PARTIAL: official F1" in captured.out
        assert f"no-memory floor INCOMPLETE: 81 question(s) of openai/local with an empty context: {81 - failing} " \
               f"answered now, 0 already in this run, 0 from the floor cache, {failing} failed" in captured.out
        assert f"answer: no-memory floor: {failing} of 81 empty-context call(s) failed" in captured.err
        assert f"no-memory floor: {failing} question(s) have no floor answer" in captured.err
        run = RunFolder("floor-outage")
        report = (run.path / "report.md").read_text()
        assert f"**Incomplete no-memory floor: {failing} question(s) have no floor answer" in report.split("## ")[0]
        assert f"**The floor is incomplete: {failing} question(s) have no floor answer**" in report
        assert floor_table(report)["overall"][0] == str(81 - failing)
        assert not list((own_outputs / "floors").glob("llm-*.json"))  # a floor with holes is never cached
        failed = [r for r in run.records("floor.jsonl") if r["status"] == "failed"]
        assert len(failed) == failing and all("500" in r["error"] or "outage" in r["error"] for r in failed)
        # the server is back: the rerun asks exactly the failed questions, and the run is complete
        server.fail = lambda question: False
        before = len(server.floor_requests())
        assert main(argv) == 0
        assert len(server.floor_requests()) - before == failing
        assert f"no-memory floor ok: 81 question(s) of openai/local with an empty context: {failing} answered now, " \
               f"{81 - failing} already in this run, 0 from the floor cache, 0 failed" in capsys.readouterr().out
    report = (run.path / "report.md").read_text()
    assert "Incomplete no-memory floor" not in report and "The floor is incomplete" not in report
    assert floor_table(report)["overall"][0] == "81"
    assert len(list((own_outputs / "floors").glob("llm-openai-local-conv-30-*.json"))) == 1
    cached = json.loads(next((own_outputs / "floors").glob("llm-*.json")).read_text())
    assert len(cached["questions"]) == 81 and cached["prompt_version"] == "answer-v1"


def test_the_floor_key_follows_the_answerer_and_its_prompt(dataset):
    from locomo_kit.llm.fake import ScriptedLLM
    from locomo_kit.qa.answering import AnswerConfig
    from locomo_kit.qa.floor import conversation_floor

    conv = select(dataset, "conv-30")[0]
    memory = AnswerConfig(source="memory", answer_model="fake/a")
    keys = {conversation_floor(conv, llm=ScriptedLLM(["x"], model=m), config=c).key
            for m, c in (("a", memory), ("b", memory), ("a", AnswerConfig(source="full-context", answer_model="fake/a")),
                         ("a", AnswerConfig(source="memory", answer_model="fake/a", limit=5)))}
    assert len(keys) == 4  # the model, the prompt (full context: another system text and version), the questions
    same = {conversation_floor(conv, llm=ScriptedLLM(["x"], model="a"), config=c).key
            for c in (memory, AnswerConfig(source="oracle", answer_model="fake/a"),
                      AnswerConfig(source="memory", answer_model="fake/a", top_k=3, context_budget=200))}
    assert len(same) == 1  # the memory system and how much it retrieves do not change what no memory scores
    full = conversation_floor(conv, llm=ScriptedLLM(["x"], model="a"),
                              config=AnswerConfig(source="full-context", answer_model="fake/a"))
    assert full.requests[0].messages[0]["content"].startswith("\n\nQuestion: ")  # no conversation at all
    assert isinstance(full.path, Path) and full.path.name.startswith("llm-fake-a-conv-30-")


def test_runs_of_one_answerer_at_once_measure_its_floor_once(own_outputs, dataset):
    """Two runs (a leaderboard's parallel jobs) needing the same answerer's floor at the same time: one measures,
    the other waits and takes it from the cache."""
    from locomo_kit.llm.execute import CallSettings
    from locomo_kit.llm.fake import ScriptedLLM
    from locomo_kit.qa.answering import AnswerConfig
    from locomo_kit.qa.floor import measure_llm_floor

    def slow(system: str, prompt: str) -> str:
        time.sleep(0.05)
        return "No information available"

    llm = ScriptedLLM(slow, model="s")
    config = AnswerConfig(source="memory", answer_model="fake/s", limit=5)
    conv = select(dataset, "conv-30")
    done = {}

    def measure(name: str) -> None:
        done[name] = measure_llm_floor(RunFolder(name), llm=llm, answer=config, conversations=conv,
                                       calls=CallSettings(concurrency=1, progress=False, log=lambda line: None))

    threads = [threading.Thread(target=measure, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(llm.calls) == 5 and all(format_context([]) in c["messages"][0]["content"] for c in llm.calls)
    assert sorted((s.answered, s.already, s.reused) for s in done.values()) == [(0, 0, 5), (5, 0, 0)]
