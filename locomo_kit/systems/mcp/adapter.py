"""An MCP memory server as a memory system, driven by its profile (:mod:`locomo_kit.systems.mcp.profiles`).

The kit builds two cached environments: the server's own (its pip packages with the Python the profile
names, its pinned npm package, or one of the kit's peer environments) and the MCP client's (the official
``mcp`` SDK, pinned), so that the server's packages and the client's never meet. A host process in the
client environment (``mcp_host.py``) starts the server over stdio, makes the MCP handshake and calls its
tools; this adapter renders each call's arguments from the profile and reads the results. A result with
``isError`` is a failed call carrying the tool's message; every error carries the end of the server's
stderr. The system's version is its package's (npm ``package.json``, Python metadata), never the
``serverInfo`` the server announces; the profile's sha256 is in the identity and names the runs.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path
from typing import Any, ClassVar

from locomo_kit.dataset import Conversation, Session
from locomo_kit.paths import write_atomic
from locomo_kit.systems.base import (
    Health,
    Identity,
    Memory,
    MemorySystem,
    MemorySystemError,
    SearchResult,
    SessionIngest,
    SystemUnavailable,
)
from locomo_kit.systems.environments import (
    EnvironmentBuildError,
    EnvironmentSpec,
    ensure_environment,
    env_dir,
    env_python,
    is_built,
    npm_dir,
    package_version,
)
from locomo_kit.systems.host_process import SystemHost, SystemHostError
from locomo_kit.systems.mcp.profiles import PREFIX, SDK_PIN, Profile, ResultMap, ToolCall, load_profile, render
from locomo_kit.systems.mcp.results import items_of, memory_fields
from locomo_kit.systems.mempalace import render_session
from locomo_kit.systems.peer_host import LabelledIdentity, call, host_env
from locomo_kit.systems.specs import MEMPALACE_ENV
from locomo_kit.systems.turn_text import TurnLocator, conversation_lines, session_day, turn_line

HOST_SCRIPT = Path(__file__).resolve().parent / "mcp_host.py"
CLIENT_ENV = EnvironmentSpec(system="mcp-client", version=SDK_PIN.split("==")[1], steps=((SDK_PIN,),))
KIT_ENVIRONMENTS = {"mempalace": MEMPALACE_ENV}
SHARED = "shared"  # the host's key of a server shared by every conversation


def server_environment(profile: Profile) -> EnvironmentSpec:
    """The environment the server runs in (built by the kit on first use, cached). A server that needs nothing but
    the MCP SDK the kit's client speaks through runs in the client's environment: the same packages, built once."""
    if profile.kit_environment:
        return KIT_ENVIRONMENTS[profile.kit_environment]
    if profile.pip == CLIENT_ENV.steps[0] and not profile.npm and profile.python in (None, CLIENT_ENV.python_version):
        return CLIENT_ENV
    return EnvironmentSpec(system=f"mcp-{profile.name}", version=profile.pinned_version or "unpinned",
                           steps=(profile.pip,) if profile.pip else (), python=profile.python, npm=profile.npm)


def system_class(name: str) -> type["MCPSystem"]:
    """The memory system ``mcp:NAME`` (a class of its own per profile: its name, unit and version are the
    profile's, known before anything starts)."""
    profile = load_profile(name)
    return type(f"MCPSystem[{profile.name}]", (MCPSystem,), {
        "name": name, "profile": profile, "unit": "turns" if profile.write_each == "turn" else "transcript",
        "keyword_fusion": profile.keyword_fusion, "__module__": __name__})


def _safe(conversation_id: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", conversation_id or ""):
        raise MemorySystemError(f"not a usable conversation id: {conversation_id!r}")
    return conversation_id


class MCPSystem(MemorySystem):
    """A memory server spoken to over MCP, as its profile says (see :func:`system_class`)."""

    profile: ClassVar[Profile]
    keeps_turn_ids = True  # from the turn field the profile names, else found by the text the kit rendered
    own_budget = False

    def __init__(self, store: Path, **options: Any) -> None:
        if options:
            raise ValueError(f"{self.name} takes no option {', '.join(sorted(options))} (its profile says how it "
                             "runs)")
        super().__init__(store, **options)
        self._host: SystemHost | None = None
        self._env: Path | None = None
        self._version: str | None = None
        self._server_info: dict[str, Any] = {}
        self._client: dict[str, Any] = {}
        self._opened: set[str] = set()
        self._running: set[str] = set()
        self._locators: dict[str, TurnLocator] = {}
        self.calls: list[dict[str, Any]] | None = None  # a list: every tool call, its arguments and raw result go in

    # -- what names the system before it starts --------------------------------------------------
    @classmethod
    def description(cls) -> str:
        return cls.profile.description

    @classmethod
    def readiness(cls) -> str:
        missing = [spec for spec in (server_environment(cls.profile), CLIENT_ENV) if not is_built(spec)]
        if not missing:
            return f"ready (its environment: {env_dir(server_environment(cls.profile))})"
        return "its environment is built on first use, into " + " and ".join(str(env_dir(s)) for s in missing)

    @classmethod
    def declared_version(cls) -> str | None:
        kit_env = KIT_ENVIRONMENTS.get(cls.profile.kit_environment or "")
        return cls.profile.pinned_version or (kit_env.version if kit_env else None)

    @classmethod
    def run_tag(cls) -> str | None:
        version = cls.declared_version()
        return f"mcp-{cls.profile.name}" + (f"-{version}" if version else "") + f"-p{cls.profile.sha256[:8]}"

    @property
    def data(self) -> Path:
        return self.store / "data"

    # -- life cycle ------------------------------------------------------------------------------
    def open(self) -> None:
        if self._host is not None:
            return
        p = self.profile
        try:
            self._env = ensure_environment(server_environment(p))
            client = ensure_environment(CLIENT_ENV)
        except EnvironmentBuildError as exc:
            raise SystemUnavailable(f"{self.name}: its environment could not be built: {exc}") from exc
        self._version = self._package_version()
        self.data.mkdir(parents=True, exist_ok=True)
        home = self.store / "home"
        home.mkdir(parents=True, exist_ok=True)
        try:
            self._host = SystemHost(self.name, env_python(client), str(HOST_SCRIPT),
                                    {"log_dir": str(self.store / "server-logs")}, env=host_env(home), cwd=home,
                                    start_timeout=120.0, call_timeout=p.call_timeout + 60)
        except SystemHostError as exc:
            raise SystemUnavailable(str(exc)) from exc
        self._client = self._host.info
        if not p.per_conversation:
            try:
                self._start(SHARED, None)
            except MemorySystemError as exc:  # a server that cannot start: nothing can be done with it
                self.close()
                raise SystemUnavailable(str(exc)) from None

    def close(self) -> None:
        if self._host is not None:
            self._host.close(timeout=60)
            self._host = None
            self._opened.clear()
            self._running.clear()

    def _package_version(self) -> str:
        p, env = self.profile, self._env
        assert env is not None
        if p.npm:
            manifest = npm_dir(env) / "node_modules" / p.package / "package.json"
            try:
                return str(json.loads(manifest.read_text())["version"])
            except (OSError, ValueError, KeyError) as exc:
                raise SystemUnavailable(f"{self.name}: no version in {manifest} ({exc}): is {p.package} among the "
                                        f"profile's npm packages?") from exc
        try:
            return package_version(env, p.package)
        except EnvironmentBuildError as exc:
            raise SystemUnavailable(f"{self.name}: {exc}") from exc

    def _server_vars(self, conversation: str | None) -> dict[str, Any]:
        assert self._env is not None
        out = {"env": str(self._env), "python": str(env_python(self._env)), "npm": str(npm_dir(self._env)),
               "data": str(self.data), "home": str(self.store / "home")}
        if conversation is not None:
            out["conversation"] = conversation
        return out

    def _start(self, key: str, conversation: str | None) -> None:
        p = self.profile
        variables = self._server_vars(conversation)
        home = Path(render(p.server_env.get("HOME", "{home}"), variables))
        for rel, target in p.home_links.items():
            _link(home / rel, Path(render(target, variables)))
        if conversation is not None:
            (self.data / conversation).mkdir(parents=True, exist_ok=True)
        env = host_env(home, {k: str(render(v, variables)) for k, v in p.server_env.items()})
        command = [str(render(part, variables)) for part in p.command]
        # ``seconds``: the host's own limit; ``timeout``: how long the kit waits for the host
        info = call(self._host, self.name, "start", key=key, command=command, env=env, cwd=str(home),
                    seconds=p.start_timeout, timeout=p.start_timeout + 60)
        if "error" in info:
            raise MemorySystemError(f"{self.name}: {info['error']}")
        self._server_info = info
        self._running.add(key)

    def _key(self, conversation: str) -> str:
        if not self.profile.per_conversation:
            return SHARED
        key = _safe(conversation)
        if key not in self._running:
            self._start(key, key)
        return key

    def _tool(self, conversation: str, tool: ToolCall, variables: dict[str, Any]) -> dict | None:
        """Call ``tool`` for ``conversation``; a result with ``isError`` raises :class:`MemorySystemError`
        with the tool's message (None when it matches the profile's ``ignore_error``)."""
        key = self._key(conversation)
        arguments = render(tool.arguments, {"conversation": conversation, "data": str(self.data), **variables})
        result = call(self._host, self.name, "call", key=key, tool=tool.tool, arguments=arguments,
                      seconds=self.profile.call_timeout, timeout=self.profile.call_timeout + 60)
        if self.calls is not None:  # what `locomo-kit systems check` shows
            self.calls.append({"tool": tool.tool, "arguments": arguments, "result": result})
        if "error" in result:
            if result.get("gone"):  # the server is gone: nothing more can be done with it now
                self._running.discard(key)
                raise SystemUnavailable(f"{self.name}: its MCP server stopped: {result['error']}")
            raise MemorySystemError(f"{self.name}: {result['error']}")
        if result.get("is_error"):
            message = "\n".join(result.get("text") or []) or "(no message)"
            if tool.ignore_error and re.search(tool.ignore_error, message):
                return None
            stderr = result.get("stderr") or ""
            raise MemorySystemError(f"{self.name}: the tool {tool.tool} failed (isError): {message[:1500]}"
                                    + (f"\nthe end of the server's stderr:\n{stderr}" if stderr else ""))
        return result

    def _open_conversation(self, conversation: str) -> None:
        if conversation in self._opened:
            return
        if self.profile.conversation is not None:
            self._tool(conversation, self.profile.conversation, {})
        self._opened.add(conversation)

    # -- identity and health ---------------------------------------------------------------------
    def identity(self) -> Identity:
        p = self.profile
        settings: dict[str, Any] = {
            "profile": p.name, "profile_sha256": p.sha256,
            "profile_path": None if p.path.is_relative_to(Path(__file__).resolve().parent) else str(p.path),
            "install": {"pip": list(p.pip), "python": p.python, "npm": list(p.npm), "kit_environment": p.kit_environment},
            "write": f"{p.write.tool} per {p.write_each}", "search": p.search.tool,
            "one_conversation_apart": "one server process per conversation" if p.per_conversation
            else "arguments of one shared server",
            "mcp_client": f"{self._client.get('sdk', 'mcp')} {self._client.get('sdk_version', SDK_PIN.split('==')[1])}",
            "switched_off_offline": list(p.offline),
        }
        if p.offline:
            settings["label"] = "offline: " + "; ".join(p.offline)
        return LabelledIdentity(self.name, self._version or self.declared_version(), settings, url="subprocess")

    def health(self) -> Health:
        if self._host is None or not self._host.alive():
            return Health(False, f"{self.name}: its MCP client host is not running (open() the system)")
        return Health(True, "", {"semantic_search": "as the server does it", "server_info": self._server_info
                                 .get("server_info"), "tools": self._server_info.get("tools")})

    # -- ingestion -------------------------------------------------------------------------------
    def _remember(self, conversation: Conversation) -> None:
        cid = conversation.sample_id
        if cid in self._locators:
            return
        lines = conversation_lines(conversation)
        write_atomic(self._lines_file(cid), json.dumps(lines, ensure_ascii=False))
        self._locators[cid] = TurnLocator(lines)

    def _lines_file(self, conversation_id: str) -> Path:
        return self.store / "turn-lines" / f"{conversation_id}.json"

    def _locator(self, conversation_id: str) -> TurnLocator | None:
        if conversation_id not in self._locators:
            try:
                lines = json.loads(self._lines_file(conversation_id).read_text())
            except (OSError, ValueError):
                return None
            self._locators[conversation_id] = TurnLocator([tuple(x) for x in lines])
        return self._locators[conversation_id]

    def ingest_session(self, conversation: Conversation, session: Session) -> SessionIngest:
        cid = _safe(conversation.sample_id)
        self._remember(conversation)
        self._open_conversation(cid)
        p = self.profile
        base = {"session": session.number, "date": session.date_time, "day": session_day(session)}
        if p.write_each == "session":
            text = (render_session(conversation, session) if p.session_format == "exchange-transcript"
                    else "\n".join(turn_line(session, t) for t in session.turns) + "\n")
            path = self.data / "sessions" / render(p.session_file, {"conversation": cid, **base})
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                write_atomic(path, text)
            before = self.held(cid)
            self._tool(cid, p.write, {**base, "session_file": str(path), "session_text": text})
            held = self.held(cid)
            # the server acknowledges a session write without a count: what the conversation gained is what it took
            return SessionIngest(held, f"{p.write.tool} of {path.name}; the conversation holds {held} memories",
                                 acknowledged=max(0, held - before))
        for turn in session.turns:
            self._tool(cid, p.write, {**base, "dia_id": turn.dia_id, "speaker": turn.speaker, "text": turn.text,
                                      "line": turn_line(session, turn)})
        return SessionIngest(len(session.turns), f"{len(session.turns)} turns written with {p.write.tool}")

    # -- count and forget ------------------------------------------------------------------------
    def _listing(self, conversation_id: str) -> tuple[int, list[str]]:
        p = self.profile
        assert p.count is not None
        result = self._tool(conversation_id, p.count, {})
        if result is None:
            return 0, []
        items, total = items_of(result, p.count_results, f"{self.name} {p.count.tool}")
        ids = [str(memory_fields(item, p.count_results)["id"]) for item in items
               if memory_fields(item, p.count_results)["id"] is not None]
        return (total if total is not None else len(items)), ids

    def held(self, conversation_id: str) -> int:
        cid = _safe(conversation_id)
        self._open_conversation(cid)
        return self._listing(cid)[0]

    def forget(self, conversation_id: str) -> int:
        cid = _safe(conversation_id)
        self._open_conversation(cid)
        p = self.profile
        held, ids = self._listing(cid)
        if p.forget is not None:
            self._tool(cid, p.forget, {"ids": ids})
        self._opened.discard(cid)
        if p.forget_removes:
            call(self._host, self.name, "stop", key=cid)
            self._running.discard(cid)
            for folder in p.forget_removes:
                target = Path(render(folder, {"data": str(self.data), "conversation": cid})).resolve()
                if not target.is_relative_to(self.data.resolve()):
                    raise MemorySystemError(f"{self.name}: forget.remove {folder!r} points outside its data folder")
                shutil.rmtree(target, ignore_errors=True)
        shutil.rmtree(self.data / "sessions" / cid, ignore_errors=True)
        self._locators.pop(cid, None)
        self._lines_file(cid).unlink(missing_ok=True)
        return held

    # -- search ----------------------------------------------------------------------------------
    def search(self, conversation_id: str, query: str, top_k: int,
               context_budget: int | None = None) -> SearchResult:
        cid = _safe(conversation_id)
        self._open_conversation(cid)
        p = self.profile
        if p.query_max_chars:
            query = query[:p.query_max_chars]
        start = time.perf_counter()
        result = self._tool(cid, p.search, {"query": query, "limit": top_k})
        latency = (time.perf_counter() - start) * 1000
        items, _ = items_of(result or {}, p.search_results, f"{self.name} {p.search.tool}")
        locator = self._locator(cid)
        memories = [self._memory(item, p.search_results, locator) for item in items]
        memories = [m for m in memories if m.text.strip()][:top_k]
        return SearchResult(memories, latency, queries=[query])

    def _memory(self, item: Any, rmap: ResultMap, locator: TurnLocator | None) -> Memory:
        f = memory_fields(item, rmap)
        turns: list[str] = []
        meta: dict[str, Any] = {}
        if f["turn"]:
            turns, meta["placed_by"] = [f["turn"]], "system"
        elif locator is not None:
            turns = locator.turns_of(f["text"])
            meta["placed_by"] = "text" if turns else "none"  # the kit's match of the text it rendered
        score = f["score"]
        if score is not None:
            meta["server_score"] = score
            if rmap.score_order == "lower":  # the kit's scores are higher-is-better
                score = -score
            elif rmap.score_order == "none":
                score = None
        session = int(turns[0].split(":")[0].removeprefix("D")) if turns and turns[0].startswith("D") else None
        return Memory(text=f["text"], source_turns=turns, score=score, id=f["id"], session=session, metadata=meta)


def _link(link: Path, target: Path) -> None:
    """``link`` (inside a server's HOME) pointing at ``target``."""
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() and link.readlink() != target:
        link.unlink()
    if not link.is_symlink():
        if link.exists():
            raise MemorySystemError(f"{link} exists and is not the kit's link to {target}: remove it")
        link.symlink_to(target, target_is_directory=target.is_dir())


__all__ = ["CLIENT_ENV", "MCPSystem", "PREFIX", "server_environment", "system_class"]
