"""``locomo-kit systems``: every memory system the kit can run, where it comes from, its options, and whether
it is ready."""

from __future__ import annotations

import argparse
import importlib.util

from locomo_kit.cli.common import int_in, system_options
from locomo_kit.pipeline.check import check_system
from locomo_kit.settings import SystemSpec
from locomo_kit.systems.base import MissingDependency
from locomo_kit.systems.registry import family_members, names, resolve, spec


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("systems", help="list the memory systems, where each comes from, its options and readiness",
                       description="List every memory system --system accepts: the built-in ones, those installed "
                       "packages declare as entry points (group locomo_kit.systems), and how to name any other by "
                       "module path (--system package.module:Class); each with its options (--system-option "
                       "NAME=VALUE) and whether it can run now.")
    p.set_defaults(func=handle)
    actions = p.add_subparsers(dest="action", metavar="check")
    c = actions.add_parser("check", help="try one system on the first sessions of a conversation and name known "
                           "mistakes (the first step after writing a profile or an adapter)",
                           description="Try SYSTEM on the first sessions of one conversation, in a store of its own: "
                           "show the rendered arguments of the first writes (MCP profiles), what it acknowledged, what "
                           "it holds, the raw result of a count on an empty and a filled store, of a search by a stored "
                           "turn's own words and by one LoCoMo question, and how each result was read (text, id, turn, "
                           "score); then each known mistake in one line with its fix. Exit 1 when one is found.")
    c.add_argument("system", metavar="SYSTEM", help="a name (bm25, memworker…), mcp:PROFILE.toml, an entry point or "
                   "package.module:Class")
    c.add_argument("--sample", default="conv-26", help="the conversation tried (conv-26)")
    c.add_argument("--sessions", dest="check_sessions", type=int_in(1, 35), default=2,
                   help="how many of its first sessions are written (2)")
    c.add_argument("--system-option", action="append", metavar="NAME=VALUE", default=None,
                   help="one of the system's options (repeatable; `locomo-kit systems` lists them)")
    c.set_defaults(func=handle_check)


def handle_check(args: argparse.Namespace) -> int:
    check = check_system(SystemSpec(name=args.system, options=system_options(args)), sample=args.sample,
                         sessions=args.check_sessions, log=print)
    return 0 if check.ok else 1


def describe(name: str) -> list[str]:
    s = spec(name)
    lines = [f"{name}: {s.description}", f"  from: {s.origin} ({s.module}:{s.attr})"]
    missing = [m for m in s.requires if importlib.util.find_spec(m) is None]
    try:
        cls = resolve(name) if not missing else None
    except (MissingDependency, ValueError, TypeError) as exc:
        return lines + [f"  ready: no: {exc}"]
    if cls is not None and cls.description():
        lines[0] = f"{name}: {cls.description()}"
        if s.family:
            lines[1] = f"  from: {s.origin} ({name.removeprefix(s.name)} of the family {s.name}NAME)"
    if cls is None:
        lines.append(f"  ready: installed on first use ({s.pip or ', '.join(missing)})")
        return lines
    lines.append(f"  ready: {cls.readiness()}")
    if cls.worker_records:  # a claude-mem Worker API: configured by its URL and mode
        lines.append("  options: --worker-url, --mode, --session-timeout (a Worker's own settings are its configuration)")
        return lines
    if not cls.system_options:
        lines.append("  options: none")
    for option in cls.system_options:
        lines.append(f"  option {option.describe()}")
    return lines


def handle(args: argparse.Namespace) -> int:
    for name in names() + [member for members in family_members().values() for member in members]:
        print("\n".join(describe(name)))
    print("any other MCP server: --system mcp:path/to/profile.toml (docs/mcp.md)")
    print("any other: --system package.module:Class (a MemorySystem subclass; docs/systems.md)")
    return 0
