"""An MCP memory server described by a profile (TOML): how to install and start it, how one conversation
is kept apart, which tool writes, searches, counts and forgets, with which arguments, and how its results
are read. ``mcp:NAME`` names a profile shipped with the kit (``shipped/NAME.toml``); ``mcp:PATH`` (ending
in ``.toml``) any other. docs/mcp.md describes every key; :func:`load_profile` checks them all, and
every template, before anything is installed or started.

Templates are strings with ``{variable}`` fields (Python's ``str.format``; ``{{`` for a brace). A string
that is exactly one field (``"{limit}"``, ``"{ids}"``) keeps the variable's own type (a number, a list).
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from string import Formatter
from typing import Any

PREFIX = "mcp:"
SHIPPED = Path(__file__).resolve().parent / "shipped"
SDK_PIN = "mcp==2.3.0"  # the official MCP Python SDK the kit's client host speaks through

# the variables each template may use
SERVER_VARS = ("env", "python", "npm", "data", "home", "conversation")
CONVERSATION_VARS = ("conversation", "data")
TURN_VARS = CONVERSATION_VARS + ("session", "date", "day", "dia_id", "speaker", "text", "line")
SESSION_VARS = CONVERSATION_VARS + ("session", "date", "day", "session_file", "session_text")
SEARCH_VARS = CONVERSATION_VARS + ("query", "limit")
FORGET_VARS = CONVERSATION_VARS + ("ids",)
RESULT_KINDS = ("structured", "json-text", "text")
SCORE_ORDERS = ("higher", "lower", "none")
SESSION_FORMATS = ("lines", "exchange-transcript")


class ProfileError(ValueError):
    """A profile that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class ToolCall:
    """A tool and its argument templates."""

    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    ignore_error: str | None = None  # a tool error matching this pattern is not a failure (e.g. "already exists")


@dataclass(frozen=True)
class ResultMap:
    """How a tool's result becomes a list of items and each item a memory.

    ``kind``: ``structured`` (the result's structured content), ``json-text`` (its text content parsed
    as JSON) or ``text`` (its text content, each match of ``pattern``, a regex with named groups, is an
    item). ``items``: dotted path to the list inside the JSON (empty: the JSON is the list). ``text``,
    ``id``, ``turn``, ``score``, ``total``: dotted paths inside an item (``total``: inside the whole
    result, a count). ``turn_pattern``: a regex whose first group is the LoCoMo turn id in ``turn``.
    ``none_if``: a regex on the result's text meaning "nothing held here yet" (no items, not an error).
    """

    kind: str = "structured"
    items: str = ""
    pattern: str | None = None
    text: str = "text"
    id: str | None = None
    turn: str | None = None
    turn_pattern: str | None = None
    score: str | None = None
    score_order: str = "none"
    total: str | None = None
    none_if: str | None = None


@dataclass(frozen=True)
class Profile:
    name: str
    path: Path
    sha256: str
    description: str
    package: str  # the npm package or Python distribution whose installed version names the system
    pip: tuple[str, ...] = ()
    python: str | None = None
    npm: tuple[str, ...] = ()
    kit_environment: str | None = None  # "mempalace": the kit's own environment of that system
    command: tuple[str, ...] = ()
    server_env: dict[str, str] = field(default_factory=dict)
    home_links: dict[str, str] = field(default_factory=dict)
    per_conversation: bool = False  # one server process (and its own files) per conversation
    start_timeout: float = 120.0
    call_timeout: float = 300.0
    conversation: ToolCall | None = None  # called once per conversation before its first write
    write: ToolCall = field(default_factory=lambda: ToolCall(""))
    write_each: str = "turn"  # turn | session
    session_file: str = "{conversation}/session-{session:02d}.txt"
    session_format: str = "lines"
    search: ToolCall = field(default_factory=lambda: ToolCall(""))
    search_results: ResultMap = field(default_factory=ResultMap)
    query_max_chars: int | None = None
    count: ToolCall | None = None
    count_results: ResultMap = field(default_factory=ResultMap)
    forget: ToolCall | None = None
    forget_removes: tuple[str, ...] = ()  # data folders removed after the conversation's server stops
    keyword_fusion: bool = True  # False: the kit's keyword fusion is meaningless for this server
    offline: tuple[str, ...] = ()  # what was switched off or substituted offline (every label says it)

    @property
    def system_name(self) -> str:
        return f"{PREFIX}{self.name}"

    @property
    def pinned_version(self) -> str:
        """The version the profile pins for its package (npm ``name@1.2.3``, pip ``name==1.2.3``)."""
        for spec in self.npm:
            name, _, version = spec.rpartition("@")
            if name == self.package:
                return version
        for spec in self.pip:
            name, _, version = spec.partition("==")
            if _canonical(name.split("[")[0]) == _canonical(self.package):
                return version
        return ""


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def shipped_names() -> list[str]:
    return sorted(p.stem for p in SHIPPED.glob("*.toml"))


def profile_path(name: str) -> Path:
    """The file ``mcp:NAME`` names: a shipped profile, or a path to a ``.toml`` file."""
    ref = name.removeprefix(PREFIX)
    if ref.endswith(".toml") or "/" in ref:
        path = Path(ref).expanduser()
        if not path.is_file():
            raise ProfileError(f"no MCP profile at {path}: give the path of a .toml profile (docs/mcp.md), or one "
                               f"of the shipped ones: {', '.join(PREFIX + n for n in shipped_names())}")
        return path.resolve()
    path = SHIPPED / f"{ref}.toml"
    if not path.is_file():
        raise ProfileError(f"no shipped MCP profile {ref!r}: the kit ships "
                           f"{', '.join(PREFIX + n for n in shipped_names())}; for another server write a profile "
                           f"and pass --system mcp:path/to/profile.toml (docs/mcp.md)")
    return path


def load_profile(name: str) -> Profile:
    """The profile ``name`` (``mcp:server-memory``, ``mcp:./my.toml``), checked: a bad one raises
    :class:`ProfileError` naming the file and the key."""
    path = profile_path(name)
    raw = path.read_bytes()
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ProfileError(f"{path}: not valid TOML: {exc}") from None
    return _Reader(path, data).profile(hashlib.sha256(raw).hexdigest())


class _Reader:
    """Reads one profile's tables, every error naming the file and the key."""

    def __init__(self, path: Path, data: dict):
        self.path, self.data = path, data

    def fail(self, key: str, problem: str) -> ProfileError:
        return ProfileError(f"{self.path}: {key}: {problem} (docs/mcp.md lists every key)")

    def table(self, key: str, required: bool = True) -> dict | None:
        value = self.data.get(key)
        if value is None:
            if required:
                raise self.fail(f"[{key}]", "missing")
            return None
        if not isinstance(value, dict):
            raise self.fail(key, "must be a table")
        return value

    def known(self, key: str, table: dict, allowed: tuple[str, ...]) -> None:
        unknown = sorted(set(table) - set(allowed))
        if unknown:
            raise self.fail(f"[{key}]", f"unknown key(s) {', '.join(unknown)} (known: {', '.join(allowed)})")

    def string(self, key: str, table: dict, name: str, default: str | None = None, choices=None) -> str | None:
        value = table.get(name, default)
        if value is not None and not isinstance(value, str):
            raise self.fail(f"{key}.{name}", "must be a string")
        if choices and value not in choices:
            raise self.fail(f"{key}.{name}", f"must be one of {', '.join(choices)}, not {value!r}")
        return value

    def strings(self, key: str, table: dict, name: str) -> tuple[str, ...]:
        value = table.get(name, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(f"{key}.{name}", "must be a list of strings")
        return tuple(value)

    def templates(self, key: str, value: Any, variables: tuple[str, ...]) -> None:
        """Every field of every string in ``value`` is one of ``variables``."""
        if isinstance(value, dict):
            for k, v in value.items():
                self.templates(f"{key}.{k}", v, variables)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                self.templates(f"{key}[{i}]", v, variables)
        elif isinstance(value, str):
            try:
                fields = [f for _, f, _, _ in Formatter().parse(value) if f is not None]
            except ValueError as exc:
                raise self.fail(key, f"not a valid template {value!r}: {exc} (write {{{{ for a brace)") from None
            for f in fields:
                base = re.split(r"[.\[]", f, maxsplit=1)[0]
                if base not in variables:
                    raise self.fail(key, f"unknown variable {{{f}}} in {value!r}; here you can use "
                                         + ", ".join("{" + v + "}" for v in variables))

    def call(self, key: str, table: dict | None, variables: tuple[str, ...], extra: tuple[str, ...] = ()
             ) -> ToolCall | None:
        if table is None:
            return None
        self.known(key, table, ("tool", "arguments", "ignore_error") + extra)
        tool = self.string(key, table, "tool")
        if not tool:
            raise self.fail(f"{key}.tool", "missing: the name of the MCP tool to call")
        arguments = table.get("arguments", {})
        if not isinstance(arguments, dict):
            raise self.fail(f"{key}.arguments", "must be a table of the tool's arguments")
        self.templates(f"{key}.arguments", arguments, variables)
        ignore = self.string(key, table, "ignore_error")
        if ignore:
            self.regex(f"{key}.ignore_error", ignore)
        return ToolCall(tool, arguments, ignore)

    def regex(self, key: str, pattern: str) -> re.Pattern:
        try:
            return re.compile(pattern)
        except re.error as exc:
            raise self.fail(key, f"not a valid regular expression: {exc}") from None

    def results(self, key: str, table: dict) -> ResultMap:
        kind = self.string(key, table, "results", "structured", RESULT_KINDS)
        pattern = self.string(key, table, "pattern")
        if kind == "text":
            if not pattern:
                raise self.fail(f"{key}.pattern", "results = \"text\" needs a regex with named groups (text, id, "
                                                  "turn, score)")
            if "text" not in self.regex(f"{key}.pattern", pattern).groupindex:
                raise self.fail(f"{key}.pattern", "needs a named group (?P<text>...)")
        none_if = self.string(key, table, "none_if")
        if none_if:
            self.regex(f"{key}.none_if", none_if)
        turn_pattern = self.string(key, table, "turn_pattern")
        if turn_pattern and self.regex(f"{key}.turn_pattern", turn_pattern).groups < 1:
            raise self.fail(f"{key}.turn_pattern", "needs one group: the turn id (e.g. \"(D\\\\d+:\\\\d+)\")")
        # for text results the pattern's named groups are the default paths (an item is the groups' dict)
        groups = set(self.regex(f"{key}.pattern", pattern).groupindex) if kind == "text" and pattern else set()
        default = {name: name if name in groups else None for name in ("id", "turn", "score")}
        return ResultMap(kind=kind or "structured", items=self.string(key, table, "items", "") or "",
                         pattern=pattern, text=self.string(key, table, "text", "text") or "text",
                         id=self.string(key, table, "id", default["id"]),
                         turn=self.string(key, table, "turn", default["turn"]),
                         turn_pattern=turn_pattern,
                         score=self.string(key, table, "score", default["score"]),
                         score_order=self.string(key, table, "score_order", "none", SCORE_ORDERS) or "none",
                         total=self.string(key, table, "total"), none_if=none_if)

    def profile(self, sha256: str) -> Profile:
        top = ("name", "description", "keyword_fusion", "offline", "install", "server", "conversation", "write",
               "search", "count", "forget")
        self.known("profile", self.data, top)
        name = self.string("name", self.data, "name") or self.path.stem
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
            raise self.fail("name", f"letters, digits, '.', '_' and '-' only, not {name!r}")
        install = self.table("install")
        self.known("install", install, ("package", "pip", "python", "npm", "kit_environment"))
        pip, npm = self.strings("install", install, "pip"), self.strings("install", install, "npm")
        kit_env = self.string("install", install, "kit_environment", choices=(None, "mempalace"))
        if sum(bool(x) for x in (pip, npm, kit_env)) != 1:
            raise self.fail("[install]", "give exactly one of pip (a list of requirements), npm (a list of "
                                         "name@version) or kit_environment")
        for req in pip:
            if not re.fullmatch(r"[A-Za-z0-9][\w.\-\[\],]*==[\w.+!-]+", req):
                raise self.fail("install.pip", f"pin every requirement to one version (name==1.2.3), not {req!r}")
        python = self.string("install", install, "python")
        if python and not re.fullmatch(r"\d+\.\d+", python):
            raise self.fail("install.python", f"a major.minor version such as \"3.12\", not {python!r}")
        package = self.string("install", install, "package")
        if not package:
            raise self.fail("install.package", "missing: the npm package or Python distribution whose installed "
                                               "version names the system (never the server's serverInfo)")

        server = self.table("server")
        self.known("server", server, ("command", "env", "home_links", "per_conversation", "start_timeout",
                                      "call_timeout"))
        command = self.strings("server", server, "command")
        if not command:
            raise self.fail("server.command", "missing: the command that starts the server over stdio")
        per_conversation = bool(server.get("per_conversation", False))
        server_vars = SERVER_VARS if per_conversation else tuple(v for v in SERVER_VARS if v != "conversation")
        self.templates("server.command", list(command), server_vars)
        env = server.get("env", {})
        links = server.get("home_links", {})
        for key, value in (("server.env", env), ("server.home_links", links)):
            if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
                raise self.fail(key, "must be a table of strings")
            self.templates(key, value, server_vars)
        timeouts = {}
        for key in ("start_timeout", "call_timeout"):
            value = server.get(key, 120.0 if key == "start_timeout" else 300.0)
            if not isinstance(value, (int, float)) or value <= 0:
                raise self.fail(f"server.{key}", "must be a number of seconds above 0")
            timeouts[key] = float(value)

        write = self.table("write")
        each = self.string("write", write, "each", "turn", ("turn", "session"))
        write_call = self.call("write", write, TURN_VARS if each == "turn" else SESSION_VARS,
                               extra=("each", "session_file", "session_format"))
        session_file = self.string("write", write, "session_file", "{conversation}/session-{session:02d}.txt")
        self.templates("write.session_file", session_file, SESSION_VARS)
        session_format = self.string("write", write, "session_format", "lines", SESSION_FORMATS)

        search = self.table("search")
        search_call = self.call("search", search, SEARCH_VARS,
                                extra=("query_max_chars",) + tuple(ResultMap.__dataclass_fields__) + ("results",))
        query_max = search.get("query_max_chars")
        if query_max is not None and (not isinstance(query_max, int) or query_max < 1):
            raise self.fail("search.query_max_chars", "must be a whole number above 0")

        count = self.table("count")
        count_call = self.call("count", count, CONVERSATION_VARS,
                               extra=tuple(ResultMap.__dataclass_fields__) + ("results",))
        count_results = self.results("count", count)
        forget = self.table("forget", required=False) or {}
        self.known("forget", forget, ("tool", "arguments", "ignore_error", "remove"))
        forget_call = self.call("forget", forget, FORGET_VARS, extra=("remove",)) if forget.get("tool") else None
        removes = self.strings("forget", forget, "remove")
        self.templates("forget.remove", list(removes), ("data", "conversation"))
        if forget_call is None and not removes:
            raise self.fail("[forget]", "give a tool (its arguments may use {ids}: the ids [count] lists) or "
                                        "remove (data folders deleted once the conversation's server stopped)")
        if removes and not per_conversation:
            raise self.fail("forget.remove", "only for per_conversation servers (a shared server keeps its files "
                                             "open)")
        conversation = self.call("conversation", self.table("conversation", required=False), CONVERSATION_VARS)
        keyword_fusion = self.data.get("keyword_fusion", True)
        if not isinstance(keyword_fusion, bool):
            raise self.fail("keyword_fusion", "must be true or false")
        return Profile(
            name=name, path=self.path, sha256=sha256, description=self.string("description", self.data,
                                                                                "description", "") or "",
            package=package, pip=pip, python=python, npm=npm, kit_environment=kit_env, command=command,
            server_env=dict(env), home_links=dict(links), per_conversation=per_conversation,
            start_timeout=timeouts["start_timeout"], call_timeout=timeouts["call_timeout"],
            conversation=conversation, write=write_call, write_each=each or "turn",
            session_file=session_file or "", session_format=session_format or "lines",
            search=search_call, search_results=self.results("search", search), query_max_chars=query_max,
            count=count_call, count_results=count_results, forget=forget_call, forget_removes=removes,
            keyword_fusion=keyword_fusion, offline=self.strings("profile", self.data, "offline"))


def render(template: Any, variables: dict[str, Any]) -> Any:
    """``template`` with its fields filled (a string that is one field keeps the value's type)."""
    if isinstance(template, dict):
        return {k: render(v, variables) for k, v in template.items()}
    if isinstance(template, list):
        return [render(v, variables) for v in template]
    if isinstance(template, str):
        whole = re.fullmatch(r"\{([A-Za-z_]\w*)\}", template)
        if whole and whole.group(1) in variables:
            return variables[whole.group(1)]
        return template.format_map(variables)
    return template
