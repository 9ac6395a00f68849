"""MCP profiles without a server: the shipped ones load, a bad profile is one clear error naming the file and
the key, templates keep their types, results are read as each profile says, and ``mcp:NAME`` resolves
through the registry with the profile's hash in the run id."""

from __future__ import annotations

from pathlib import Path

import pytest

from locomo_kit.systems import registry, runner
from locomo_kit.systems.mcp.profiles import SHIPPED, ProfileError, ResultMap, load_profile, render, shipped_names
from locomo_kit.systems.mcp.results import items_of, memory_fields

TINY = """
name = "tiny"
[install]
package = "mcp"
pip = ["mcp==2.3.0"]
[server]
command = ["{python}", "server.py"]
[write]
tool = "remember"
arguments = { conversation = "{conversation}", key = "{dia_id}", text = "{line}" }
[search]
tool = "recall"
arguments = { conversation = "{conversation}", query = "{query}", limit = "{limit}" }
items = "result"
id = "key"
turn = "key"
[count]
tool = "count"
arguments = { conversation = "{conversation}" }
total = "result"
[forget]
tool = "forget"
arguments = { conversation = "{conversation}" }
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "my.toml"
    path.write_text(text)
    return path


def test_shipped_profiles_load():
    assert {"server-memory", "basic-memory", "mempalace"} <= set(shipped_names())
    memory = load_profile("mcp:server-memory")
    assert memory.npm == ("@modelcontextprotocol/server-memory@2026.8.31",) and memory.pinned_version == "2026.8.31"
    basic = load_profile("mcp:basic-memory")
    assert basic.python == "3.12" and basic.pinned_version == "0.24.1"
    assert basic.search_results.score_order == "lower"
    assert load_profile("mcp:mempalace").kit_environment == "mempalace"
    assert all(SHIPPED.joinpath(f"{n}.toml").is_file() for n in shipped_names())


def test_a_user_profile_by_path(tmp_path):
    profile = load_profile(f"mcp:{write(tmp_path, TINY)}")
    assert profile.name == "tiny" and profile.pinned_version == "2.3.0" and len(profile.sha256) == 64


@pytest.mark.parametrize("change, message", [
    (("[forget]\ntool = \"forget\"", "[forget]\nfoo = 1"), r"\[forget\]: unknown key\(s\) foo"),
    (("{dia_id}", "{turn_number}"), r"write.arguments.key: unknown variable \{turn_number\}.*\{dia_id\}"),
    (("mcp==2.3.0", "mcp>=2"), r"install.pip: pin every requirement"),
    (("[server]\ncommand", "[server]\nnot_command"), r"\[server\]: unknown key\(s\) not_command"),
    (("items = \"result\"", "items = \"result\"\nresults = \"xml\""), r"search.results: must be one of"),
    (("package = \"mcp\"", ""), r"install.package: missing"),
])
def test_a_bad_profile_names_the_file_and_the_key(tmp_path, change, message):
    path = write(tmp_path, TINY.replace(*change))
    with pytest.raises(ProfileError, match=message) as info:
        load_profile(f"mcp:{path}")
    assert str(path) in str(info.value)


def test_not_toml_and_missing_profiles(tmp_path):
    with pytest.raises(ProfileError, match="not valid TOML"):
        load_profile(f"mcp:{write(tmp_path, 'name = ')}")
    with pytest.raises(ProfileError, match=r"no MCP profile at .*nowhere.toml"):
        load_profile("mcp:nowhere.toml")
    with pytest.raises(ProfileError, match=r"no shipped MCP profile 'nope'.*mcp:server-memory"):
        registry.resolve("mcp:nope")


def test_templates_keep_types_and_fill_strings():
    out = render({"q": "{query}", "n": "{limit}", "ids": "{ids}", "t": "{conversation} {dia_id}"},
                 {"query": "who?", "limit": 7, "ids": ["a", "b"], "conversation": "conv-26", "dia_id": "D1:3"})
    assert out == {"q": "who?", "n": 7, "ids": ["a", "b"], "t": "conv-26 D1:3"}


def test_results_structured_json_text_and_regex():
    structured = {"structured": {"entities": [{"name": "D1:3", "observations": ["[8 May 2023] Caroline: hi"]}]}}
    items, _ = items_of(structured, ResultMap(items="entities", text="observations", id="name", turn="name"), "x")
    assert memory_fields(items[0], ResultMap(text="observations", id="name", turn="name")) == {
        "text": "[8 May 2023] Caroline: hi", "id": "D1:3", "turn": "D1:3", "score": None}
    as_text = {"text": ['{"results": [{"title": "conv-26 D2:8", "content": "x", "score": -2.5}], "total": 9}']}
    rmap = ResultMap(kind="json-text", items="results", text="content", turn="title", turn_pattern=r"(D\d+:\d+)$",
                     score="score", total="total")
    items, total = items_of(as_text, rmap, "x")
    assert total == 9 and memory_fields(items[0], rmap)["turn"] == "D2:8"
    regex = ResultMap(kind="text", pattern=r"^(?P<turn>D\d+:\d+) (?P<text>.+)$", turn="turn")
    items, _ = items_of({"text": ["D1:1 hello\nD1:2 there"]}, regex, "x")
    assert [memory_fields(i, regex)["turn"] for i in items] == ["D1:1", "D1:2"]
    with pytest.raises(Exception, match="no structured content"):
        items_of({"text": ["plain"]}, ResultMap(), "x")
    gone = ResultMap(kind="json-text", items="drawers", total="total", none_if="database missing")
    assert items_of({"text": ['{"error": "Chroma database missing"}']}, gone, "x") == ([], 0)


def test_mcp_names_resolve_with_the_profile_hash_in_the_run_id(tmp_path):
    cls = registry.resolve("mcp:server-memory")
    assert cls.name == "mcp:server-memory" and cls.unit == "turns" and cls.declared_version() == "2026.8.31"
    tag = runner.system_tag("mcp:server-memory")
    assert tag == f"mcp-server-memory-2026.8.31-p{load_profile('mcp:server-memory').sha256[:8]}"
    first = runner.system_tag(f"mcp:{write(tmp_path, TINY)}")
    changed = TINY.replace('limit = "{limit}"', "limit = 5")
    second = runner.system_tag(f"mcp:{write(tmp_path, changed)}")
    assert first != second and first.startswith("mcp-tiny-2.3.0-p")
    assert registry.resolve("mcp:mempalace").unit == "transcript"
    assert registry.resolve("mcp:mempalace").declared_version() == "3.11.0"


def test_systems_lists_every_shipped_profile_with_its_own_description_and_readiness(tmp_path, monkeypatch, capsys):
    from locomo_kit.cli import main

    monkeypatch.setenv("LOCOMO_SYSTEMS_CACHE", str(tmp_path / "systems"))  # nothing built there
    assert main(["systems"]) == 0
    out = capsys.readouterr().out
    for name in shipped_names():
        block = out[out.index(f"mcp:{name}: "):]
        block = block[:block.index("\n  options:")]
        assert load_profile(f"mcp:{name}").description in block.splitlines()[0]
        assert f"from: built in ({name} of the family mcp:NAME)" in block
        assert "ready: its environment is built on first use, into " + str(tmp_path / "systems") in block
    assert "--system mcp:path/to/profile.toml" in out
