"""Profiles for the tiny MCP notes server (``tests/fixtures/mcp/tiny_notes_server.py``): a server the kit does
not ship, written with the official SDK, with faults to inject."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "mcp"


def tiny_profile(tmp_path: Path, command: str | None = None, extra_server: str = "", *, fault: str = "",
                 key: str = "{dia_id}", name: str = "tiny-notes") -> Path:
    """A profile for the tiny notes server (``fault``: its $TINY_FAULT; ``key``: the write key's template)."""
    server = FIXTURES / "tiny_notes_server.py"
    cmd = command or f'["{{python}}", "{server}"]'
    path = tmp_path / f"{name}.toml"
    path.write_text(f"""
name = "{name}"
description = "a server the kit does not ship"
[install]
package = "mcp"
pip = ["mcp==2.3.0"]
[server]
command = {cmd}
env = {{ TINY_NOTES = "{{data}}/notes.json", TINY_FAULT = "{fault}" }}
start_timeout = 60
{extra_server}
[write]
tool = "remember"
arguments = {{ conversation = "{{conversation}}", key = "{key}", text = "{{line}}" }}
[search]
tool = "recall"
arguments = {{ conversation = "{{conversation}}", query = "{{query}}", limit = "{{limit}}" }}
items = "result"
text = "text"
id = "key"
turn = "key"
score = "score"
score_order = "higher"
[count]
tool = "count"
arguments = {{ conversation = "{{conversation}}" }}
total = "result"
[forget]
tool = "forget"
arguments = {{ conversation = "{{conversation}}" }}
""")
    return path
