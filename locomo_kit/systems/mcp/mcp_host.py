"""MCP client host: runs in the kit's MCP client environment (stdlib + the official ``mcp`` SDK), driven by the
kit over JSON lines (``hostloop``); never imported by the kit.

It starts MCP servers over stdio (``start``: one per key, e.g. one per conversation), makes the real MCP
handshake (``initialize``, ``tools/list``) and calls their tools (``call``), answering with the raw result
(``is_error``, text contents, structured content): the kit maps it. Every error names the server and
carries the end of the server's own stderr (kept in ``<log_dir>/<key>.stderr.log``), once, as one line of
cause: a server that exits at start is "did not start", not an exception group.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import importlib.metadata
import os
import sys
import threading
from pathlib import Path

if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)  # this folder holds the kit's own modules, not the SDK's
from hostloop import serve

STDERR_TAIL = 2000


def _leaf(exc: BaseException) -> BaseException:
    """The first real cause inside (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _describe(exc: BaseException) -> str:
    leaf = _leaf(exc)
    text = str(leaf).strip()
    return f"{type(leaf).__name__}: {text}" if text else type(leaf).__name__


def _closed(exc: BaseException) -> bool:
    """Whether ``exc`` says the connection to the server is closed (its process is gone)."""
    from mcp.types import CONNECTION_CLOSED  # deferred: the SDK lives only in the host's environment

    return getattr(_leaf(exc), "code", None) == CONNECTION_CLOSED


class Server:
    """One MCP server process and its client session, alive inside the host's event loop."""

    def __init__(self, key: str, log: Path):
        self.key, self.log = key, log
        self.session = None
        self.stop_event: asyncio.Event | None = None
        self.done: concurrent.futures.Future | None = None
        self.label = key

    def stderr_tail(self) -> str:
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(line for line in text.splitlines() if line.strip())[-STDERR_TAIL:]

    def error(self, doing: str, cause: str) -> RuntimeError:
        tail = self.stderr_tail()
        return RuntimeError(f"the MCP server {self.label} {doing}: {cause}"
                            + (f"\nthe end of its stderr ({self.log}):\n{tail}" if tail else
                               f" (its stderr, {self.log}, is empty)"))


def open_system(settings: dict):
    from mcp import ClientSession, StdioServerParameters  # deferred: the SDK lives only in the host's environment
    from mcp.client.stdio import stdio_client  # deferred: the SDK (heavy, its own environment)

    log_dir = Path(settings["log_dir"])
    log_dir.mkdir(parents=True, exist_ok=True)
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True, name="mcp-loop").start()
    servers: dict[str, Server] = {}

    async def keep(server: Server, params, ready: concurrent.futures.Future, timeout: float) -> None:
        server.stop_event = asyncio.Event()
        with open(server.log, "a", encoding="utf-8") as errlog:
            try:
                async with stdio_client(params, errlog=errlog) as (read, write):
                    async with ClientSession(read, write) as session:
                        init = await asyncio.wait_for(session.initialize(), timeout)
                        tools = await asyncio.wait_for(session.list_tools(), timeout)
                        server.session = session
                        info = init.server_info
                        ready.set_result({"server_info": {"name": info.name, "version": info.version},
                                          "protocol_version": init.protocol_version,
                                          "tools": sorted(t.name for t in tools.tools)})
                        await server.stop_event.wait()
            except BaseException as exc:
                errlog.flush()
                if not ready.done():
                    if isinstance(_leaf(exc), (TimeoutError, asyncio.TimeoutError)):
                        ready.set_exception(server.error("gave no answer to the MCP handshake",
                                                         f"nothing within {timeout:.0f} s; it was stopped"))
                    else:
                        ready.set_exception(server.error("did not start", _describe(exc)))
            finally:
                server.session = None

    def start(key: str, command: list[str], env: dict[str, str], cwd: str | None = None,
              seconds: float = 120.0) -> dict:
        timeout = seconds
        if key in servers and servers[key].session is not None:
            raise ValueError(f"an MCP server is already running under {key!r}")
        server = Server(key, log_dir / f"{key}.stderr.log")
        server.label = f"`{' '.join(command)}` ({key})"
        params = StdioServerParameters(command=command[0], args=list(command[1:]), env=env, cwd=cwd)
        ready: concurrent.futures.Future = concurrent.futures.Future()
        server.done = asyncio.run_coroutine_threadsafe(keep(server, params, ready, timeout), loop)
        try:
            info = ready.result(timeout + 30)
        except concurrent.futures.TimeoutError:
            server.done.cancel()
            return {"error": str(server.error("gave no answer to the MCP handshake",
                                              f"nothing within {timeout:.0f} s; it was stopped"))}
        except RuntimeError as exc:  # the server's own failure: one message, no host traceback
            return {"error": str(exc)}
        servers[key] = server
        return info

    def call(key: str, tool: str, arguments: dict, seconds: float = 300.0) -> dict:
        timeout = seconds
        server = servers.get(key)
        if server is None or server.session is None:
            raise RuntimeError(f"no MCP server is running under {key!r}" + (
                f"; the end of its stderr:\n{server.stderr_tail()}" if server else ""))
        future = asyncio.run_coroutine_threadsafe(
            asyncio.wait_for(server.session.call_tool(tool, arguments), timeout), loop)
        try:
            result = future.result(timeout + 30)
        except BaseException as exc:
            if isinstance(_leaf(exc), (TimeoutError, asyncio.TimeoutError, concurrent.futures.TimeoutError)):
                return {"error": str(server.error(f"did not answer {tool} within {timeout:.0f} s", "no result"))}
            if _closed(exc):  # the server went away (it crashed or exited): it is no longer running
                servers.pop(key, None)
                if server.stop_event is not None:
                    loop.call_soon_threadsafe(server.stop_event.set)
                return {"error": str(server.error(f"closed the connection while calling {tool}", _describe(exc))),
                        "gone": True}
            return {"error": str(server.error(f"failed calling {tool}", _describe(exc)))}
        texts = [c.text for c in (getattr(result, "content", None) or []) if getattr(c, "type", "") == "text"]
        return {"is_error": bool(getattr(result, "is_error", False)), "text": texts,
                "structured": getattr(result, "structured_content", None),
                "stderr": server.stderr_tail() if getattr(result, "is_error", False) else ""}

    def stop(key: str) -> bool:
        server = servers.pop(key, None)
        if server is None:
            return False
        if server.stop_event is not None:
            loop.call_soon_threadsafe(server.stop_event.set)
        if server.done is not None:
            try:
                server.done.result(60)
            except BaseException:
                pass
        return True

    def running() -> list[str]:
        return sorted(k for k, s in servers.items() if s.session is not None)

    def stderr(key: str) -> str:
        server = servers.get(key)
        return server.stderr_tail() if server else ""

    atexit.register(lambda: [stop(key) for key in list(servers)])
    info = {"sdk": "mcp", "sdk_version": importlib.metadata.version("mcp"), "python": sys.version.split()[0],
            "pid": os.getpid()}
    return info, {"start": start, "call": call, "stop": stop, "running": running, "stderr": stderr}


if __name__ == "__main__":
    serve(open_system)
