"""``locomo-kit systems check SYSTEM``: a shipped system passes; systems and profiles broken in one known way each
are named in one line with the fix: writes that collide (a repeated write key), a count that fails on an empty
store, turn ids that are not LoCoMo's, a text pattern whose groups match nothing. For text results the
pattern's named groups are the default paths."""

from __future__ import annotations

import pytest

from locomo_kit.cli import main
from locomo_kit.pipeline.check import check_system

from support.mcp_profiles import tiny_profile
from support.runs import set_outputs


@pytest.fixture(autouse=True)
def outputs(tmp_path, monkeypatch):
    return set_outputs(monkeypatch, tmp_path / "outputs")


def test_a_shipped_system_shows_each_step_and_finds_no_mistake(capsys):
    assert main(["systems", "check", "bm25"]) == 0
    out = capsys.readouterr().out
    for line in ("it stores what it is given", "count on an empty store: 0", "session 1 (18 turns): acknowledged 18",
                 "count on the filled store: 35", "held 35 of the 35 writes it acknowledged",
                 "search by a stored turn's own words (D1:12)", "search by a LoCoMo question (evidence D1:3)",
                 "turn D1:3 (placed by system)", "no known mistake found"):
        assert line in out, line


def test_a_repeated_key_is_named_with_both_numbers(capsys):
    assert main(["systems", "check", "support.broken_systems:OneKeyPerSpeaker"]) == 1
    out = capsys.readouterr().out
    assert "MISTAKE: writes collide: it acknowledged 35 writes and holds 2." in out


def test_a_count_that_fails_on_an_empty_store_is_named_with_its_fix():
    check = check_system("support.broken_systems:CountFailsWhenEmpty")
    assert any(m.startswith("the count fails on an empty store (not JSON: 'No matching context found')")
               and "none_if" in m for m in check.mistakes), check.mistakes


@pytest.mark.integration
def test_an_mcp_profile_whose_write_key_repeats_shows_its_writes_and_the_cause(tmp_path, capsys):
    profile = tiny_profile(tmp_path, key="{speaker}", name="tiny-keyed")
    assert main(["systems", "check", f"mcp:{profile}"]) == 1
    out = capsys.readouterr().out
    assert 'write remember({"conversation": "conv-26", "key": "Caroline", "text": "[8 May 2023] Caroline: Hey Mel!' in out
    assert 'raw count({"conversation": "conv-26"}) -> {"text": ["0"]' in out
    assert "MISTAKE: writes collide: it acknowledged 35 writes and holds 2. No argument of [write] names {dia_id}" in out
    assert "MISTAKE: turn ids that are not LoCoMo's (Caroline, Melanie)" in out


TEXT_SEARCH = '''[search]
tool = "recall"
arguments = {{ conversation = "{{conversation}}", query = "{{query}}", limit = "{{limit}}" }}
results = "text"
pattern = {pattern}
'''


def _text_profile(tmp_path, name: str, pattern: str):
    path = tiny_profile(tmp_path, name=name)
    text = path.read_text()
    start, end = text.index("[search]"), text.index("[count]")
    path.write_text(text[:start] + TEXT_SEARCH.format(pattern=pattern) + text[end:])
    return path


@pytest.mark.integration
def test_text_results_read_the_patterns_named_groups_and_an_unbound_group_is_named(tmp_path):
    # the groups id, turn and score are read without id = "id", turn = "turn", score = "score" written
    good = _text_profile(tmp_path, "tiny-text", r"""'"key": "(?P<turn>D\d+:\d+)",\s*"text": "(?P<text>(?:[^"\\]|\\.)*)",\s*"score": (?P<score>\d+)'""")
    check = check_system(f"mcp:{good}")
    assert check.ok, check.mistakes
    assert any("turn D1:3 (placed by system); score" in line for line in check.lines), check.lines
    # a group that never matches is named
    bad = _text_profile(tmp_path, "tiny-text-unbound", r"""'"text": "(?P<text>(?:[^"\\]|\\.)*)"(?P<turn>NEVER)?'""")
    check = check_system(f"mcp:{bad}")
    assert any(m.startswith("the [search] pattern's group(s) turn matched nothing in any result") for m in check.mistakes), \
        check.mistakes
