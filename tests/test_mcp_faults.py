"""Faults of an MCP memory server, through the kit's commands, with the tiny notes server the tests ship
(``tests/fixtures/mcp/tiny_notes_server.py``, written with the official SDK): a write key that repeats (419
writes acknowledged, 2 held), a server that acknowledges every write and drops every other one, a write tool
that answers isError on one call in ten, a server that crashes at session 3, a search that hangs. Each ends in
the right outcome with the server's own stderr, nothing is counted that was not stored, and a resumed
ingestion sends again only what failed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from locomo_kit.cli import main
from locomo_kit.dataset import get_conversation, load_dataset
from locomo_kit.runs import ingestion_folder

from support.mcp_profiles import tiny_profile
from support.runs import set_outputs

pytestmark = pytest.mark.integration


@pytest.fixture
def outputs(tmp_path, monkeypatch):
    return set_outputs(monkeypatch, tmp_path / "outputs")


@pytest.fixture(scope="module")
def conv26(dataset_path):
    return get_conversation(load_dataset(dataset_path), "conv-26")


def _folder(out: str):
    path = next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("run folder: "))
    return ingestion_folder(Path(path).name)


def _server_file(folder, suffix: str) -> Path:
    return folder.path / "data" / f"notes.json{suffix}"


def _writes(folder) -> list[str]:
    path = _server_file(folder, ".writes")
    return path.read_text().split() if path.exists() else []


def _held(folder) -> int:
    path = folder.path / "data" / "notes.json"
    return len(json.loads(path.read_text())) if path.exists() else 0


def _turns(conv, sessions) -> list[str]:
    return [t.dia_id for s in conv.sessions if s.number in sessions for t in s.turns]


def test_a_write_key_that_repeats_419_acknowledged_2_held(outputs, tmp_path, capsys):
    system = f"mcp:{tiny_profile(tmp_path, key='{speaker}', name='tiny-keyed')}"
    lost = "holds 2 of the 419 memories it acknowledged for conv-26 (lost during ingestion"
    assert main(["ingest", "--sample", "conv-26", "--system", system]) == 1
    captured = capsys.readouterr()
    assert lost in captured.err and "LOST WRITES" in captured.out
    assert _held(_folder(captured.out)) == 2  # the server's own file: the count is what it stores
    assert main(["verify", "--sample", "conv-26", "--system", system]) == 1
    assert lost in capsys.readouterr().err
    assert main(["run", "--sample", "conv-26", "--system", system, "--limit", "3"]) == 1
    captured = capsys.readouterr()
    assert "PARTIAL: official F1" in captured.out and lost in captured.err


def test_a_server_that_drops_every_other_write(outputs, tmp_path, capsys, conv26):
    system = f"mcp:{tiny_profile(tmp_path, fault='drop-every-other', name='tiny-drops')}"
    assert main(["ingest", "--sample", "conv-26@s3", "--system", system]) == 1
    captured = capsys.readouterr()
    folder = _folder(captured.out)
    sent = len(_turns(conv26, {1, 2, 3}))
    check = folder.manifest()["held_check"]
    assert check["acknowledged"] == sent and check["held"] == _held(folder) == (sent + 1) // 2
    assert f"holds {check['held']} of the {sent} memories it acknowledged" in captured.err
    assert "the count fell short of the writes in session(s) 1-3" in captured.err
    # the server's stderr says which writes it dropped (kept with its logs)
    log = next((folder.path / "server-logs").glob("*.stderr.log")).read_text()
    assert "tiny: dropped the write of D1:2" in log


def test_a_write_tool_that_fails_one_call_in_ten_then_a_resume_sends_only_what_failed(outputs, tmp_path, capsys,
                                                                                      conv26):
    system = f"mcp:{tiny_profile(tmp_path, fault='error-10pct', name='tiny-errors')}"
    assert main(["ingest", "--sample", "conv-26@s4", "--system", system]) == 1
    captured = capsys.readouterr()
    folder = _folder(captured.out)
    records = [r for r in folder.records("ingest.jsonl") if r.get("kind") == "session"]
    failed = {r["session"] for r in records if r["status"] == "failed"}
    assert failed and len(failed) < 4 or failed == {1, 2, 3, 4}
    for r in records:
        if r["status"] == "failed":
            assert r["observations"] == 0  # nothing counted for a failed session
            assert "the tool remember failed (isError)" in r["error"] and "the tiny server refuses to write D" in r["error"]
            assert "the end of the server's stderr" in r["error"] and "tiny: refused the write of D" in r["error"]
    assert not (folder.manifest().get("held_check") or {}).get("lost")  # failed sessions are not counted

    # each resume sends again only the sessions that failed before it (a session may fail again, on another key)
    for _ in range(6):
        sent, before = len(_writes(folder)), len(list(folder.records("ingest.jsonl")))
        code = main(["ingest", "--sample", "conv-26@s4", "--system", system])
        capsys.readouterr()
        assert set(_writes(folder)[sent:]) <= set(_turns(conv26, failed)), "it wrote turns of sessions that went in"
        new = list(folder.records("ingest.jsonl"))[before:]
        assert {r["session"] for r in new} == failed, f"it sent {[r['session'] for r in new]}, not {sorted(failed)}"
        failed = {r["session"] for r in new if r["status"] == "failed"}
        if code == 0:
            break
    assert code == 0 and not failed
    check = folder.manifest()["held_check"]
    assert check["held"] == check["acknowledged"] == _held(folder) == len(_turns(conv26, {1, 2, 3, 4}))


def test_a_server_that_crashes_at_session_3_stops_the_ingestion_then_resumes(outputs, tmp_path, capsys, conv26):
    system = f"mcp:{tiny_profile(tmp_path, fault='crash-session-3', name='tiny-crash')}"
    assert main(["ingest", "--sample", "conv-26@s4", "--system", system]) == 1
    captured = capsys.readouterr()
    assert "INGESTION STOPPED" in captured.out and "its MCP server stopped" in captured.out
    assert "tiny: crashing at the write of D3:1" in captured.out  # the server's own stderr
    assert "not attempted: 1" in captured.out
    folder = _folder(captured.out)
    records = [r for r in folder.records("ingest.jsonl") if r.get("kind") == "session"]
    assert [(r["session"], r["status"], r["observations"]) for r in records][2] == (3, "failed", 0)
    first = _writes(folder)

    assert main(["ingest", "--sample", "conv-26@s4", "--system", system]) == 0
    captured = capsys.readouterr()
    assert "already done: 2" in captured.out
    assert _writes(folder)[len(first):] == _turns(conv26, {3, 4})
    check = folder.manifest()["held_check"]
    assert check["held"] == check["acknowledged"] == len(_turns(conv26, {1, 2, 3, 4}))


def test_a_search_that_hangs_fails_each_question_with_the_servers_stderr(outputs, tmp_path, capsys):
    system = f"mcp:{tiny_profile(tmp_path, fault='hang-search', name='tiny-hangs', extra_server='call_timeout = 3')}"
    assert main(["run", "--sample", "conv-26@s2", "--system", system, "--limit", "2"]) == 1
    captured = capsys.readouterr()
    assert "did not answer recall within 3 s" in captured.out + captured.err
    assert "tiny: hangs on the search" in captured.out + captured.err
    assert "official F1" not in captured.out  # nothing answered: no result printed
