"""Real MCP servers through the kit (installed by the kit itself from npm and PyPI on first use, cached under
~/.cache/locomo-kit/systems, so a second run is fast): the shipped profiles pass the adapter contract (the
official memory server only through the kit's keyword fusion: asked the questions themselves it fails, as
it should); a profile a user writes for a server the kit does not ship (a tiny server written with the SDK)
runs through ``locomo-kit run``; a tool's isError is a failed call with its message; a server that cannot
start is one clear error with its stderr; the version comes from the package, not serverInfo."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from locomo_kit.cli import main
from locomo_kit.systems import create
from locomo_kit.systems.base import MemorySystemError, SystemUnavailable
from locomo_kit.testing.system_contract import SystemContract, contract_conversations

from support.mcp_profiles import tiny_profile

pytestmark = pytest.mark.integration
SESSIONS = 3


def require_npm() -> None:
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("node and npm are needed for the official memory server")


class TestServerMemoryThroughKeywordFusion(SystemContract):
    query_strategy = "keywords"  # its search_nodes matches the whole query as one substring

    @pytest.fixture(scope="class")
    @classmethod
    def system(cls, tmp_path_factory):
        require_npm()
        with create("mcp:server-memory", tmp_path_factory.mktemp("server-memory")) as s:
            yield s

    def test_the_questions_themselves_find_nothing(self, system, conversations):
        contract = SystemContract()
        with pytest.raises(AssertionError, match=r"(?s)found the evidence of only 0 of 8 .*MISS asked 'When did Caroline"):
            contract.test_search_answers_locomo_questions(system, conversations)

    def test_version_from_the_package_not_server_info(self, system, conversations):
        system.held(conversations[0].sample_id)  # starts the conversation's server
        assert system.identity().version == "2026.8.31"
        assert system.health().capabilities["server_info"]["version"] != "2026.8.31"  # it says 0.6.3
        assert len(system.identity().settings["profile_sha256"]) == 64


class TestBasicMemory(SystemContract):
    @pytest.fixture(scope="class")
    @classmethod
    def system(cls, tmp_path_factory):
        with create("mcp:basic-memory", tmp_path_factory.mktemp("basic-memory")) as s:
            yield s


class TestMemPalaceMCP(SystemContract):
    @pytest.fixture(scope="class")
    @classmethod
    def system(cls, tmp_path_factory):
        with create("mcp:mempalace", tmp_path_factory.mktemp("mempalace-mcp")) as s:
            yield s


def test_a_tool_error_is_a_failed_call_with_its_message(tmp_path):
    with create(f"mcp:{tiny_profile(tmp_path)}", tmp_path / "store") as system:
        from locomo_kit.systems.mcp.profiles import ToolCall

        with pytest.raises(MemorySystemError, match=r"the tool explode failed \(isError\): .*the tiny server refuses c1"):
            system._tool("c1", ToolCall("explode", {"conversation": "{conversation}"}), {})


def test_a_server_that_cannot_start_is_one_clear_error_with_its_stderr(tmp_path):
    crash = '["{python}", "-c", "import sys; sys.stderr.write(\'tiny: no config file here\\\\n\'); sys.exit(3)"]'
    with pytest.raises(SystemUnavailable) as info:
        with create(f"mcp:{tiny_profile(tmp_path, crash)}", tmp_path / "store"):
            pass
    message = str(info.value)
    assert "did not start" in message and "tiny: no config file here" in message
    # once from its stderr (the command line that quotes the same words is named once too)
    assert message.count("did not start") == 1 and message.count("the end of its stderr") == 1
    assert "ExceptionGroup" not in message and "Traceback" not in message
    assert len(message.splitlines()) < 20


def test_a_server_that_never_answers_is_stopped_after_its_start_timeout(tmp_path):
    silent = '["{python}", "-c", "import time; time.sleep(600)"]'
    path = tiny_profile(tmp_path, silent)
    path.write_text(path.read_text().replace("start_timeout = 60", "start_timeout = 3"))
    with pytest.raises(SystemUnavailable, match=r"gave no answer to the MCP handshake.*3 s"):
        with create(f"mcp:{path}", tmp_path / "store"):
            pass


@pytest.fixture
def small_data(tmp_path, monkeypatch, dataset_path) -> Path:
    """conv-26 cut to its first sessions, as LOCOMO_DATA_DIR."""
    raw = json.loads(Path(dataset_path).read_text())
    sample = next(s for s in raw if s["sample_id"] == "conv-26")
    keep = {k: v for k, v in sample["conversation"].items()
            if not (m := re.match(r"session_(\d+)", k)) or int(m.group(1)) <= SESSIONS}
    data = tmp_path / "data"
    data.mkdir()
    (data / "locomo10.json").write_text(json.dumps([{**sample, "conversation": keep} if s is sample else s
                                                    for s in raw]))
    audit = Path(dataset_path).with_name("locomo-audit-errors.json")
    if audit.exists():
        shutil.copy(audit, data / audit.name)
    monkeypatch.setenv("LOCOMO_DATA_DIR", str(data))
    monkeypatch.setenv("LOCOMO_OUTPUTS_DIR", str(tmp_path / "outputs"))
    monkeypatch.setenv("CI", "1")
    return data


def test_a_user_profile_runs_through_run_and_the_leaderboard(small_data, tmp_path, capsys):
    profile = tiny_profile(tmp_path)
    assert main(["run", "--sample", "conv-26", "--system", f"mcp:{profile}", "--limit", "10"]) == 0
    out = capsys.readouterr().out
    report = Path(re.findall(r"^report:\s+(\S+)", out, flags=re.M)[0])
    assert report.parent.name.startswith("conv-26-mcp-tiny-notes-2.3.0-p")
    manifest = json.loads((report.parent / "manifest.json").read_text())
    assert manifest["system"]["name"] == f"mcp:{profile}" and manifest["system"]["version"] == "2.3.0"
    answers = [json.loads(line) for line in (report.parent / "answers.jsonl").read_text().splitlines()]
    assert len(answers) == 10 and any(r["source_turns"] for a in answers for r in a["retrieved"])
    out_dir = tmp_path / "board"
    assert main(["leaderboard", "--systems", f"bm25,mcp:{profile}", "--sample", "conv-26", "--limit", "10",
                 "--out", str(out_dir)]) == 0
    board = json.loads((out_dir / "leaderboard.json").read_text())
    row = next(r for r in board["rows"] if r.get("run_id") == report.parent.name)  # the run above, reused
    assert f"mcp:{profile}" in json.dumps(row) and row["questions"] == 10


def test_keywords_strategy_is_labelled_as_the_kits_fusion(small_data, capsys):
    require_npm()
    assert main(["run", "--sample", "conv-26", "--system", "mcp:server-memory", "--query-strategy", "keywords",
                 "--limit", "10"]) == 0
    out = capsys.readouterr().out
    report = Path(re.findall(r"^report:\s+(\S+)", out, flags=re.M)[0])
    manifest = json.loads((report.parent / "manifest.json").read_text())
    assert manifest["answer"]["retrieval"].startswith("kit-side keyword fusion over mcp:server-memory's search")
    assert "not mcp:server-memory's own retrieval" in report.read_text()


def test_contract_conversations_fixture_is_the_shipped_one():
    assert [c.sample_id for c in contract_conversations()] == ["conv-26", "conv-30"]
