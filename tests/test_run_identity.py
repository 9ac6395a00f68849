"""One run is one configuration, and a run that failed never looks like a result.

Each test is one of the failures a new user met: reports describing another configuration,
failed stages exiting 0 over an old report, a different Worker on the same URL reusing old
results, answering a sample never ingested, unchecked arguments.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from locomo_kit.cli import main
from locomo_kit.worker import embedded
from locomo_kit.worker.embedded import EmbeddedWorker

from support.claude_mem_standin import serve
from support.llm_standins import Script, anthropic_app


@pytest.fixture(autouse=True)
def isolated(offline_outputs_dir):
    return offline_outputs_dir


def reports_in(out: str) -> list[str]:
    return re.findall(r"^report:\s+(\S+)", out, flags=re.M)


def test_each_top_k_is_its_own_run_with_its_own_report(capsys):
    outs = []
    for k in ("4", "8", "4"):
        assert main(["run", "--sample", "conv-30", "--top-k", k]) == 0
        outs.append(capsys.readouterr().out)
    paths = [reports_in(o)[0] for o in outs]
    assert paths[0] == paths[2] and paths[0] != paths[1]
    for path, k in zip(paths, (4, 8, 4)):
        text = Path(path).read_text()
        assert f"| kit retrieval: top_k | {k} |" in text and f"top_k {k}" in text.split("## Run facts")[0]
        manifest = json.loads((Path(path).parent / "manifest.json").read_text())
        assert manifest["config"]["top_k"] == k and manifest["answer"]["top_k"] == k
        answers = [json.loads(l) for l in (Path(path).parent / "answers.jsonl").read_text().splitlines()]
        assert {a["top_k"] for a in answers} == {k} and len(answers) == 81
    assert "0 questions done, 81 already done" in outs[2]  # the same configuration resumes its own run
    assert "0 sessions done, 19 already done" in outs[1]  # and every run reuses one ingestion
    folders = sorted(p.name for p in Path(paths[0]).parents[1].iterdir())
    assert len(folders) == 3 and "conv-30-transcript-embedded-hashing" in folders  # two runs, one ingestion


def _auth_rejected():
    return Script([(401, {"type": "error", "error": {"type": "authentication_error",
                                                     "message": "invalid x-api-key"}})])


def test_a_rejected_key_exits_nonzero_with_the_reason_and_no_report(monkeypatch, capsys):
    assert main(["run", "--sample", "conv-30"]) == 0  # an earlier, good run of another configuration
    capsys.readouterr()
    script = _auth_rejected()
    with serve(anthropic_app(script)) as url:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-rejected")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
        code = main(["run", "--sample", "conv-30", "--paid", "--yes"])
    out, err = capsys.readouterr()
    assert code == 1 and "invalid x-api-key" in err
    assert "official F1" not in out and "report:" not in out
    assert len(script.requests) <= 4  # stopped before answering, not after 81 doomed calls
    assert not list(Path(monkeypatch_outputs()).glob("runs/*claude-opus*/report.md"))


def test_failed_answers_exit_nonzero_with_the_first_reason_and_no_report(capsys):
    """The server accepts the preflight, then rejects every question: no report, exit 1, the reason."""
    from support.llm_standins import openai_app, openai_completion

    class RejectAfterPreflight(Script):
        def next(self):
            if len(self.requests) == 1:
                return 200, openai_completion("OK")
            return 400, {"error": {"message": "context too long", "type": "invalid_request_error"}}

    assert main(["run", "--sample", "conv-30"]) == 0
    capsys.readouterr()
    with serve(openai_app(RejectAfterPreflight([]))) as url:
        code = main(["run", "--sample", "conv-30", "--answer-model", "openai/local", "--llm-base-url", url + "/v1",
                     "--retries", "0"])
    out, err = capsys.readouterr()
    assert code == 1
    assert "official F1" not in out and "report:" not in out
    assert "answer FAILED: 0 questions done, 0 already done, 81 failed" in out
    assert "context too long" in err and "(and 80 more)" in err
    assert not list(Path(monkeypatch_outputs()).glob("runs/*-local-*/report.md"))


def monkeypatch_outputs() -> str:
    import os

    return os.environ["LOCOMO_OUTPUTS_DIR"]


def test_partial_answers_are_reported_as_partial_and_exit_nonzero(monkeypatch, capsys):
    """Every 10th call fails: the report says so at its top, the command exits 1."""
    from support.llm_standins import openai_app, openai_completion

    calls = {"n": 0}

    class Flaky(Script):
        def next(self):
            calls["n"] += 1
            if calls["n"] % 10 == 0:
                return 400, {"error": {"message": "context too long", "type": "invalid_request_error"}}
            return 200, openai_completion("Caroline")

    with serve(openai_app(Flaky([]))) as url:
        code = main(["run", "--sample", "conv-30", "--answer-model", "openai/local", "--llm-base-url", url + "/v1"])
    out, err = capsys.readouterr()
    assert code == 1 and "context too long" in err and "PARTIAL: official F1" in out
    text = Path(reports_in(out)[0]).read_text()
    head = text.split("## Run facts")[0]
    assert "**PARTIAL RESULTS: 73 of 81 questions were answered; 8 failed" in head
    assert "context too long" in head


def _run_then_replace_the_worker(tmp_path, monkeypatch, capsys, extra_args: list[str]) -> tuple[str, str, EmbeddedWorker]:
    """A full run of conv-30 against one Worker, then another Worker (empty database, ``extra_args``) on the
    same port: (url, the run's output, the started second Worker)."""
    first = EmbeddedWorker(tmp_path / "a.db", embedder="hashing")
    url = first.start()
    try:
        assert main(["run", "--sample", "conv-30", "--worker-url", url]) == 0
    finally:
        first.stop()
    out = capsys.readouterr().out
    monkeypatch.setattr(embedded, "free_port", lambda: first.port)
    second = EmbeddedWorker(tmp_path / "b.db", embedder="hashing", extra_args=extra_args)
    second.start()
    return url, out, second


def test_a_different_worker_on_the_same_url_never_reuses_old_results(tmp_path, monkeypatch, capsys):
    # the same port, an empty database and other settings
    url, first_out, second = _run_then_replace_the_worker(tmp_path, monkeypatch, capsys, ["--w-recency", "0"])
    report = Path(reports_in(first_out)[0])
    before = report.read_text()
    try:
        assert main(["run", "--sample", "conv-30", "--worker-url", url]) == 1
        out, err = capsys.readouterr()
        assert "19 already done" not in out and "ingest" not in out  # stopped before any work
        assert "another Worker" in err and "w_recency" in err and "--run-id" in err
        assert report.read_text() == before  # the old report is left as it was, not rewritten as new
        # given its own run, the new Worker is ingested again (it holds nothing) and answers
        assert main(["run", "--sample", "conv-30", "--worker-url", url, "--run-id", "recency0"]) == 0
        assert "ingest ok: 19 sessions done, 0 already done" in capsys.readouterr().out
    finally:
        second.stop()


def test_a_worker_restarted_empty_is_ingested_again_and_old_answers_are_not_reused(tmp_path, monkeypatch, capsys):
    url, _, second = _run_then_replace_the_worker(tmp_path, monkeypatch, capsys, [])  # same settings, empty database
    try:
        assert main(["run", "--sample", "conv-30", "--worker-url", url]) == 1
        out, err = capsys.readouterr()
        assert re.search(r"holds none of locomo-eval-conv-30's \d+ observations", out) and "ingest ok: 19 sessions done, 0 already done" in out
        assert "conv-30 ingested again since these answers" in err
    finally:
        second.stop()


def test_answering_a_sample_never_ingested_is_an_error(capsys):
    assert main(["answer", "--sample", "conv-30"]) == 1
    err = capsys.readouterr().err
    assert "conv-30 was never ingested" in err and "locomo-kit ingest --sample conv-30" in err


@pytest.mark.parametrize("args", [["--top-k", "0"], ["--top-k", "-5"], ["--top-k", "100000"], ["--judge-runs", "0"],
                                  ["--top-k", "eight"]])
def test_out_of_range_arguments_are_refused_before_any_work(args, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["run", "--sample", "conv-30", *args])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert args[0] in err and ("must be from" in err or "not an integer" in err)
    assert not Path(monkeypatch_outputs()).exists()


def test_full_context_without_an_llm_is_a_one_line_error(capsys):
    assert main(["answer", "--sample", "conv-30", "--source", "full-context"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "full-context answering needs an LLM answerer" in err


def test_library_checks_ranges_too():
    from locomo_kit.settings import Judge, Retrieval

    with pytest.raises(ValueError, match="top_k must be an integer from 1 to 100"):
        Retrieval(top_k=0)
    with pytest.raises(ValueError, match="judge runs must be an integer from 1 to 50"):
        Judge("anthropic/claude-sonnet-4-6", runs=0)


def test_money_is_spent_only_when_asked(monkeypatch, capsys):
    """With a key set, the defaults of `answer`, `score` and the library stay offline."""
    import inspect

    from locomo_kit.pipeline import stages as pipeline

    script = Script([(500, {})])
    with serve(anthropic_app(script)) as url:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-would-spend")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
        assert main(["ingest", "--sample", "conv-30"]) == 0
        assert main(["answer", "--sample", "conv-30"]) == 0
        assert main(["score", "--sample", "conv-30"]) == 0
    assert script.requests == []
    from locomo_kit.settings import Answerer, Judge

    for stage in (pipeline.run_answer, pipeline.run_all):
        assert inspect.signature(stage).parameters["answerer"].default is None
    assert inspect.signature(pipeline.run_all).parameters["judge"].default is None
    assert inspect.signature(pipeline.run_judge).parameters["judge"].default is None
    assert Answerer().model == "extractive" and Judge().model is None and not Judge().active


def test_where_a_worker_runs_is_not_part_of_its_identity():
    from locomo_kit.worker.identity import identity_changes, worker_identity

    a = worker_identity("embedded", "http://127.0.0.1:1", {"name": "memworker", "version": "1",
                        "settings": {"port": 1, "parent_pid": 10, "db_path": "/a", "w_recency": 0.2}})
    b = worker_identity("embedded", "http://127.0.0.1:2", {"name": "memworker", "version": "1",
                        "settings": {"port": 2, "parent_pid": 11, "db_path": "/b", "w_recency": 0.2}})
    assert identity_changes(a, b) == []
    c = worker_identity("embedded", "x", {"name": "memworker", "version": "1", "settings": {"w_recency": 0.0}})
    assert identity_changes(a, c) == ["setting w_recency 0.2 → 0.0"]


def test_memories_formed_by_another_worker_version_are_not_reused(capsys):
    from locomo_kit.systems.runner import resolve_system

    assert main(["ingest", "--sample", "conv-30"]) == 0
    folder = resolve_system().ingestion("conv-30")
    manifest_path = folder.path / "manifest.json"

    def record(**changes):  # what the ingestion says about the Worker that formed its memories
        m = json.loads(manifest_path.read_text())
        worker = m["ingest"]["worker"]
        for key, value in changes.items():
            if key in ("version", "name"):
                worker[key] = value
            else:
                worker["settings"][key] = value
        manifest_path.write_text(json.dumps(m))

    record(speaker_boost=0.9)  # a search setting: the same memories serve
    assert main(["ingest", "--sample", "conv-30"]) == 0
    assert "19 already done" in capsys.readouterr().out
    record(version="0.1.0", dedup_threshold=0.5)  # how the memories were formed
    assert main(["ingest", "--sample", "conv-30"]) == 1
    err = capsys.readouterr().err
    assert "formed by another Worker (version 0.1.0 → " in err and "setting dedup_threshold 0.5 → 0.85" in err
    assert "locomo-kit ingest --sample conv-30 --force" in err
    assert main(["ingest", "--sample", "conv-30", "--force"]) == 0
    assert "19 sessions done, 0 already done" in capsys.readouterr().out
    assert main(["ingest", "--sample", "conv-30"]) == 0  # recorded anew by this Worker
