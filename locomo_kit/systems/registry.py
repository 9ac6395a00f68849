"""Memory systems by name, imported only when asked for (the way inspect_ai resolves ``provider/model``).

``resolve("bm25")`` imports ``locomo_kit.systems.bm25`` and returns its class; a system whose
package is missing raises :class:`~locomo_kit.systems.base.MissingDependency` with the exact pip
command, before anything is imported. ``create(name, store, **options)`` builds an instance.

A system is found by its registered name, by an entry point in the group ``locomo_kit.systems`` that
any installed package declares (``mysystem = mypackage.adapter:MySystem``), or by a module path
(``--system mypackage.adapter:MySystem``): no file of the kit is edited to add one.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from locomo_kit.systems.base import MemorySystem, MissingDependency
from locomo_kit.systems.options import checked_options

DEFAULT_SYSTEM = "memworker"
ENTRY_POINT_GROUP = "locomo_kit.systems"
BUILT_IN = "built in"
WORKER_SYSTEMS = ("memworker", "claude-mem")  # spoken to over the claude-mem Worker HTTP API


@dataclass(frozen=True)
class SystemSpec:
    """Where a system's adapter lives. ``requires``: import names that must be importable first;
    ``pip``: the command that installs them (what a user is told when one is missing)."""

    name: str
    module: str
    attr: str
    description: str = ""
    requires: tuple[str, ...] = ()
    pip: str | None = None
    install: tuple[str, ...] = ()  # requirements the kit installs itself on first use (pip, this environment)
    origin: str = BUILT_IN  # or "entry point of <distribution> <version>", or "module path"
    family: bool = False  # ``name`` is a prefix and ``attr`` a function of the full name that returns the class
    members: str | None = None  # a family's "module:function" that lists the names it ships (without the prefix)


SYSTEMS: dict[str, SystemSpec] = {}
FAMILIES: dict[str, SystemSpec] = {}  # by prefix: "mcp:" -> every mcp:NAME


def register(spec: SystemSpec) -> None:
    """Add (or replace) a system by name (a family by its prefix)."""
    (FAMILIES if spec.family else SYSTEMS)[spec.name] = spec


for _spec in (
    SystemSpec("memworker", "locomo_kit.systems.workers", "MemworkerSystem",
               "the kit's reference Worker, embedded (or at --worker-url)"),
    SystemSpec("claude-mem", "locomo_kit.systems.workers", "ClaudeMemSystem",
               "a claude-mem Worker at --worker-url (its HTTP API)"),
    SystemSpec("bm25", "locomo_kit.systems.bm25", "BM25System",
               "BM25 (bm25s) over single turns with their session dates",
               requires=("bm25s",), pip="pip install 'bm25s==0.3.16'", install=("bm25s==0.3.16",)),
    SystemSpec("dense", "locomo_kit.systems.dense", "DenseSystem",
               "MiniLM (int8 ONNX) cosine over single turns with their session dates"),
    SystemSpec("mempalace", "locomo_kit.systems.mempalace", "MemPalaceSystem",
               "MemPalace 3.11.0 in its own cached environment"),
    SystemSpec("mem0", "locomo_kit.systems.mem0", "Mem0System",
               "Mem0 open source 2.2.1 in its own cached environment"),
    SystemSpec("mcp:", "locomo_kit.systems.mcp.adapter", "system_class",
               "an MCP memory server by profile: mcp:NAME (shipped) or mcp:path/to/profile.toml", family=True,
               members="locomo_kit.systems.mcp.profiles:shipped_names"),
):
    register(_spec)


def plugin_specs() -> dict[str, SystemSpec]:
    """The systems installed packages declare as entry points of ``locomo_kit.systems`` (nothing imported)."""
    found = {}
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        module, _, attr = ep.value.partition(":")
        dist = f"{ep.dist.name} {ep.dist.version}" if ep.dist else "an installed package"
        found[ep.name] = SystemSpec(ep.name, module.strip(), attr.strip(), f"{ep.value}",
                                    origin=f"entry point of {dist}")
    return found


def names() -> list[str]:
    """Every system known by name: the built-in ones, then those of installed packages' entry points."""
    return list(SYSTEMS) + [n for n in plugin_specs() if n not in SYSTEMS]


def family_members() -> dict[str, list[str]]:
    """Per family prefix, the full names of the members it ships (``{"mcp:": ["mcp:basic-memory", ...]}``)."""
    out = {}
    for prefix, family in FAMILIES.items():
        listed: list[str] = []
        if family.members:
            module, _, attr = family.members.partition(":")
            listed = list(getattr(importlib.import_module(module), attr)())
        out[prefix] = [prefix + name for name in listed]
    return out


def is_module_path(name: str) -> bool:
    """``package.module:Class``."""
    module, sep, attr = name.partition(":")
    return bool(sep and module and attr.isidentifier() and all(p.isidentifier() for p in module.split(".")))


def spec(name: str) -> SystemSpec:
    if name in SYSTEMS:
        return SYSTEMS[name]
    family = next((f for prefix, f in FAMILIES.items() if name.startswith(prefix)), None)
    if family is not None:
        return family
    plugins = plugin_specs()
    if name in plugins:
        return plugins[name]
    if is_module_path(name):
        module, _, attr = name.partition(":")
        return SystemSpec(name, module, attr, f"{attr} from {module}", origin="module path")
    raise ValueError(f"unknown memory system {name!r}; known: {', '.join(names() + [prefix + 'NAME' for prefix in FAMILIES])} (or an installed package's "
                     f"entry point in {ENTRY_POINT_GROUP}, or --system package.module:Class)")


def resolve(name: str) -> type[MemorySystem]:
    """The adapter class of ``name`` (its module imported now, not before)."""
    s = spec(name)
    missing = [m for m in s.requires if importlib.util.find_spec(m) is None]
    if missing and s.install and os.environ.get("LOCOMO_NO_AUTO_INSTALL") != "1":
        _install(s)
        missing = [m for m in s.requires if importlib.util.find_spec(m) is None]
    if missing:
        command = f"{sys.executable} -m {s.pip}" if s.pip and s.pip.startswith("pip ") else s.pip
        raise MissingDependency(f"the {name} system needs {', '.join(missing)}, which is not installed: run "
                                f"`{command}`", s.pip)
    try:
        module = importlib.import_module(s.module)
    except ModuleNotFoundError as exc:
        if exc.name == s.module or s.module.startswith(f"{exc.name}."):
            where = "is not part of this install" if s.origin == BUILT_IN else "cannot be imported (is its package installed?)"
            raise ValueError(f"the {name} system's adapter ({s.module}) {where}") from None
        raise MissingDependency(f"the {name} system needs the module {exc.name}, which is not installed"
                                + (f": run `{s.pip}`" if s.pip else ""), s.pip) from exc
    cls = getattr(module, s.attr, None)
    if cls is None:
        raise ValueError(f"{s.module} has no {s.attr} (the {name} system's adapter class)")
    if s.family:
        cls = cls(name)
    if not (isinstance(cls, type) and issubclass(cls, MemorySystem)):
        raise TypeError(f"{s.module}.{s.attr} is not a MemorySystem")
    return cls


def _install(s: SystemSpec) -> None:
    """Install ``s.install`` into this environment (the first use of the system), saying so; a failure
    (no network, no pip) is reported by the caller with the command to run by hand."""
    print(f"locomo-kit: the {s.name} system needs {', '.join(s.install)}: installing it into {sys.prefix} "
          f"(first use; LOCOMO_NO_AUTO_INSTALL=1 to refuse)", file=sys.stderr, flush=True)
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *s.install], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        tail = [line for line in proc.stderr.splitlines() if "is ignored" not in line][-5:]
        print("locomo-kit: pip failed: " + " | ".join(tail), file=sys.stderr)
    importlib.invalidate_caches()


def create(name: str, store: Path, **options: Any) -> MemorySystem:
    """An instance of ``name`` storing under ``store`` (nothing is started until ``open()``), with ``options``
    checked and typed by what it declares."""
    cls = resolve(name)
    return cls(store, **checked_options(name, cls, options))


def system_name(system: str | None, worker_url: str | None) -> str:
    """The system a command means: ``--system`` when given, else claude-mem for a ``--worker-url``
    other than ``embedded`` (today's meaning of that option), else memworker."""
    if system:
        spec(system)
        if system == "claude-mem" and (not worker_url or worker_url == "embedded"):
            raise ValueError("--system claude-mem needs --worker-url (the Worker's base URL, e.g. "
                             "http://127.0.0.1:37777)")
        if system not in WORKER_SYSTEMS and worker_url and worker_url != "embedded":
            raise ValueError(f"--worker-url is for the Worker systems ({', '.join(WORKER_SYSTEMS)}); {system} runs "
                             "without one")
        return system
    return "claude-mem" if worker_url and worker_url != "embedded" else DEFAULT_SYSTEM


def is_worker(name: str) -> bool:
    return name in WORKER_SYSTEMS
