"""--system and --source oracle through the CLI: runs named by system and version, reports and
manifests that say what produced them, the index reused by a later command, clear errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from locomo_kit.cli import main
from locomo_kit.systems import registry
from locomo_kit.systems.base import MissingDependency
from locomo_kit.systems.registry import SystemSpec


@pytest.fixture(autouse=True)
def isolated(own_outputs, dataset_path):
    return own_outputs


def report_of(out: str) -> Path:
    return Path(re.findall(r"^report:\s+(\S+)", out, flags=re.M)[0])


def test_bm25_run_names_the_system_and_reuses_its_index(capsys, tmp_path):
    assert main(["run", "--sample", "conv-30", "--system", "bm25"]) == 0
    out = capsys.readouterr().out
    report = report_of(out)
    assert report.parent.name.startswith("conv-30-bm25-0.3.16-extractive-b1000-")
    # the console names what bm25 stores (turns), and no Worker's queue or index wait
    assert "turns stored per session: min" in out
    assert "observations" not in out and "read-your-writes" not in out
    text = report.read_text()
    head = text.split("## 1.")[0]
    assert "bm25 0.3.16, extractive, context budget 1,000 tokens" in head
    assert "| memory system | bm25 0.3.16 (in-process) |" in head and "| system option `k1` (bm25's own) | 1.5 |" in head
    assert "INCOMPLETE" not in head
    manifest = json.loads((report.parent / "manifest.json").read_text())
    assert manifest["system"]["name"] == "bm25" and manifest["system"]["version"] == "0.3.16"
    assert manifest["system"]["settings"]["b"] == 0.75 and manifest["config"]["system"] == "bm25-0.3.16"
    answers = [json.loads(line) for line in (report.parent / "answers.jsonl").read_text().splitlines()]
    assert len(answers) == 81 and all(a["status"] == "ok" for a in answers)
    for a in answers:  # the kit cut bm25's results to the budget, best first
        assert sum((len(r["content"]) + 3) // 4 for r in a["retrieved"]) <= 1000
        assert all(r["source_turns"] for r in a["retrieved"])
    store = tmp_path / "outputs" / "runs" / "conv-30-bm25-0.3.16" / "memories.sqlite"
    assert store.is_file()
    # a second process: nothing ingested again, the same answers from the stored index
    assert main(["ingest", "--sample", "conv-30", "--system", "bm25"]) == 0
    assert "0 sessions done, 19 already done" in capsys.readouterr().out
    assert main(["answer", "--sample", "conv-30", "--system", "bm25", "--run-id", "again",
                 "--ingest-id", "conv-30-bm25-0.3.16"]) == 0
    capsys.readouterr()
    again = [json.loads(line) for line in
             (tmp_path / "outputs" / "runs" / "again" / "answers.jsonl").read_text().splitlines()]
    assert [a["retrieved"] for a in again] == [a["retrieved"] for a in answers]
    assert main(["verify", "--sample", "conv-30", "--system", "bm25"]) == 0
    assert "conv-30 in bm25 0.3.16: 369 memories" in capsys.readouterr().out
    assert main(["report", "--sample", "conv-30", "--system", "bm25"]) == 0


def test_oracle_source_answers_from_the_evidence_turns_only(capsys, tmp_path):
    assert main(["run", "--sample", "conv-30", "--source", "oracle"]) == 0
    out = capsys.readouterr().out
    assert "nothing is ingested" in out
    report = report_of(out)
    text = report.read_text().split("## 1.")[0]
    assert "oracle" in report.parent.name and "**oracle source**" in text
    assert "evidence recall is 1 by construction" in text
    answers = [json.loads(line) for line in (report.parent / "answers.jsonl").read_text().splitlines()]
    for a in answers:
        turns = [t for r in a["retrieved"] for t in r["source_turns"]]
        assert set(turns) <= set(a["evidence"]) and a["source"] == "oracle"
    assert not (tmp_path / "outputs" / "runs" / "conv-30-transcript-embedded-minilm").exists()


def test_answer_before_ingest_says_what_to_run(capsys):
    assert main(["answer", "--sample", "conv-30", "--system", "bm25"]) == 1
    err = capsys.readouterr().err
    assert "never ingested into bm25" in err and "locomo-kit ingest --sample conv-30 --system bm25" in err


@pytest.mark.parametrize("argv, message", [
    (["--system", "nosuch"], "unknown memory system 'nosuch'"),
    (["--system", "claude-mem"], "--system claude-mem needs --worker-url"),
    (["--system", "bm25", "--worker-url", "http://127.0.0.1:9"], "--worker-url is for the Worker systems"),
])
def test_bad_system_options_are_clear_errors(argv, message, capsys):
    assert main(["run", "--sample", "conv-30", *argv]) == 1
    assert message in capsys.readouterr().err


def test_a_missing_extra_is_answered_with_the_pip_command(monkeypatch, capsys):
    monkeypatch.setitem(registry.SYSTEMS, "needs-pkg", SystemSpec(
        "needs-pkg", "locomo_kit.systems.bm25", "BM25System", requires=("no_such_module_xyz",),
        pip="pip install 'no-such-module-xyz==1.0'"))
    with pytest.raises(MissingDependency) as info:
        registry.resolve("needs-pkg")
    assert info.value.pip_command == "pip install 'no-such-module-xyz==1.0'"
    assert main(["run", "--sample", "conv-30", "--system", "needs-pkg"]) == 1
    assert "pip install 'no-such-module-xyz==1.0'" in capsys.readouterr().err


def test_the_registry_imports_a_system_only_when_asked():
    import subprocess
    import sys

    code = ("import sys, locomo_kit, locomo_kit.pipeline.stages, locomo_kit.cli; "
            "assert 'bm25s' not in sys.modules and 'locomo_kit.systems.dense' not in sys.modules; "
            "from locomo_kit.systems import resolve; resolve('bm25'); assert 'locomo_kit.systems.bm25' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_an_ingestion_is_reused_only_while_the_system_holds_it(tmp_path, capsys):
    import locomo_kit as lk
    from locomo_kit.worker.identity import WorkerMismatch

    folder, summary = lk.ingest("conv-30", system="bm25")
    assert summary.succeeded and len(summary.ingested) == 19
    assert lk.ingest("conv-30", system="bm25")[1].skipped == 19  # idempotent: nothing sent again
    (folder.path / "memories.sqlite").unlink()  # the store is gone: ingested again, and said so
    for extra in ("-wal", "-shm"):
        (folder.path / f"memories.sqlite{extra}").unlink(missing_ok=True)
    _, again = lk.ingest("conv-30", system="bm25")
    assert len(again.ingested) == 19 and "holds none of conv-30's 369 memories" in again.notes[0]
    # another setting is another ingestion (its own folder), never the first one's memories
    tuned, other = lk.ingest("conv-30", system=lk.SystemSpec("bm25", options={"k1": 1.2}))
    assert tuned.path != folder.path and len(other.ingested) == 19
    assert lk.ingest("conv-30", system="bm25")[1].skipped == 19
    # a store formed with other settings than recorded is refused, saying how to start again
    (folder.path / "manifest.json").write_text((folder.path / "manifest.json").read_text().replace('"k1": 1.5', '"k1": 1.2'))
    with pytest.raises(WorkerMismatch, match="formed by another bm25 .*setting k1 1.2 → 1.5.*--force"):
        lk.ingest("conv-30", system="bm25")
    _, forced = lk.ingest("conv-30", system="bm25", force=True)
    assert len(forced.ingested) == 19


def test_dense_run_names_the_system_and_stores_its_vectors(capsys, tmp_path):
    import sqlite3

    assert main(["run", "--sample", "conv-30", "--system", "dense"]) == 0
    report = report_of(capsys.readouterr().out)
    assert report.parent.name.startswith("conv-30-dense-1.0.0-extractive-b1000-")
    head = report.read_text().split("## 1.")[0]
    assert "dense 1.0.0, extractive" in head and "| memory system | dense 1.0.0 (in-process) |" in head
    manifest = json.loads((report.parent / "manifest.json").read_text())
    assert manifest["system"]["settings"]["similarity"] == "cosine"
    store = tmp_path / "outputs" / "runs" / "conv-30-dense-1.0.0" / "memories.sqlite"
    with sqlite3.connect(store) as db:
        rows, vectors = db.execute("SELECT COUNT(*), SUM(LENGTH(vector)) FROM memories").fetchone()
    assert rows == 369 and vectors == 369 * 384 * 4  # one float32 MiniLM vector per turn


def test_system_settings_name_their_own_run():
    import locomo_kit as lk

    default = lk.run_config("conv-30", system="bm25")
    tuned = lk.run_config("conv-30", system=lk.SystemSpec("bm25", options={"k1": 1.2}))
    assert default.run_id() != tuned.run_id() and "k1" in tuned.label()
    spec = lk.SystemSpec("bm25", options={"k1": 1.2}, ingest_id="bm25-k1")
    folder, _ = lk.ingest("conv-30", system=spec)
    run, summary = lk.answer("conv-30", system=spec)
    assert summary.outcome.ok and run.run_id == tuned.run_id()
    assert run.manifest()["system"]["settings"]["k1"] == 1.2
    for text in ("k1=1.2", '{"k1": 1.2}', " k1 = 1.2 "):  # as `papermill -p system_options …` passes it
        assert lk.run_config("conv-30", system=lk.SystemSpec("bm25", options=text)).run_id() == tuned.run_id()
    with pytest.raises(ValueError, match="not a JSON object"):
        lk.run_config("conv-30", system=lk.SystemSpec("bm25", options="{k1: 1.2"))
    with pytest.raises(ValueError, match="takes NAME=VALUE"):
        lk.run_config("conv-30", system=lk.SystemSpec("bm25", options="k1"))


def test_the_notebooks_take_the_system_options(tmp_path):
    import papermill

    import locomo_kit as lk

    out = tmp_path / "qa.ipynb"
    notebooks = Path(__file__).resolve().parents[1] / "notebooks"
    papermill.execute_notebook(str(notebooks / "03_qa.ipynb"), str(out), kernel_name="python3", progress_bar=False,
                               cwd=str(notebooks), parameters={"sample": "conv-30", "system": "bm25", "system_options": {"k1": 1.2}})
    tuned = lk.run_config("conv-30", system=lk.SystemSpec("bm25", options={"k1": 1.2}))
    run = lk.RunFolder(tuned.run_id())
    assert run.exists() and run.manifest()["config"]["system_options"] == {"k1": 1.2}
    assert run.manifest()["system"]["settings"]["k1"] == 1.2


def test_a_store_emptied_since_its_ingestion_is_not_answered_from(tmp_path, dataset_path):
    """Every session recorded ingested, but the system now holds nothing (a Worker restarted on an empty
    store): answering stops and says to ingest again, for every system alike."""
    from locomo_kit.dataset import get_conversation, load_dataset
    from locomo_kit.ingestion import NotIngested, check_answerable
    from locomo_kit.runs import RunFolder

    conv = get_conversation(load_dataset(dataset_path), "conv-30")
    folder = RunFolder("emptied", root=tmp_path)
    for s in conv.sessions:
        folder.append("ingest.jsonl", {"kind": "session", "sample_id": conv.sample_id, "session": s.number,
                                       "mode": "turns", "status": "ok", "observations": len(s.turns)})
    with registry.create("bm25", tmp_path / "store") as system:
        with pytest.raises(NotIngested, match=r"holds nothing of it now .* recorded 19 of its sessions as ingested"
                                              r".*locomo-kit ingest --sample conv-30 --system bm25"):
            check_answerable(system, folder, [conv])
