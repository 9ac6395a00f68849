"""Each third-party memory system's own Python environment, built by the kit on first use and cached.

A system's packages (and their pins) never enter the kit's own environment: the kit builds a virtual
environment per system under ``$LOCOMO_SYSTEMS_CACHE`` (default ``~/.cache/locomo-kit/systems``), named
``<system>-<version>``, once, under a file lock, in its final folder (so every console script's shebang
names a folder that stays), with the Python version the spec names (found on this machine) and, for a
system published on npm, its pinned npm packages in ``npm/`` beside the venv. The recipe (Python, pip
steps, npm packages, extra files) is written to the ``.complete`` marker last, atomically: a folder
without it is an interrupted build, removed and built again; a changed recipe builds it again.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from locomo_kit.paths import write_atomic

MARKER = ".complete"


class EnvironmentBuildError(RuntimeError):
    """A system's environment could not be built (no venv module, pip failed, a file is missing)."""


@dataclass(frozen=True)
class EnvironmentSpec:
    """How to build one system's environment.

    ``steps`` are ``pip install`` argument lists run in order; ``constraints`` (pip constraint lines)
    apply to every step; ``finish(env_dir)`` adds what pip cannot (e.g. a model folder).
    ``python``: the ``major.minor`` Python the venv is made with (None: the kit's own), found on this
    machine by :func:`find_python`. ``npm``: exact ``name@version`` packages installed with npm into
    ``<env>/npm`` (:func:`npm_dir`).
    """

    system: str
    version: str
    steps: tuple[tuple[str, ...], ...]
    constraints: tuple[str, ...] = ()
    finish: Callable[[Path], None] | None = field(default=None, compare=False)
    finish_id: str = ""  # names what ``finish`` does, so that changing it changes the recipe
    python: str | None = None
    npm: tuple[str, ...] = ()

    @property
    def python_version(self) -> str:
        return self.python or f"{sys.version_info.major}.{sys.version_info.minor}"

    @property
    def recipe(self) -> dict:
        recipe = {"system": self.system, "version": self.version, "steps": [list(s) for s in self.steps],
                  "constraints": list(self.constraints), "finish": self.finish_id, "python": self.python_version}
        if self.npm:  # only when used: the recipes (and cached builds) of pip-only systems stay as they were
            recipe["npm"] = list(self.npm)
        return recipe

    @property
    def recipe_hash(self) -> str:
        return hashlib.sha256(json.dumps(self.recipe, sort_keys=True).encode()).hexdigest()[:16]


def cache_root() -> Path:
    env = os.environ.get("LOCOMO_SYSTEMS_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "locomo-kit" / "systems"


def env_dir(spec: EnvironmentSpec) -> Path:
    return cache_root() / f"{spec.system}-{spec.version}"


def env_python(path: Path) -> Path:
    return path / "venv" / "bin" / "python"


def npm_dir(path: Path) -> Path:
    """Where an environment's npm packages are installed (``node_modules/`` and ``node_modules/.bin/``)."""
    return path / "npm"


_VERSION = re.compile(r"^\d+\.\d+$")
_PINNED_NPM = re.compile(r"^(@[a-z0-9][\w.-]*/)?[a-z0-9][\w.-]*@\d+\.\d+\.\d+[\w.+-]*$")


def find_python(version: str) -> Path:
    """A Python ``version`` (``"3.12"``) on this machine: the kit's own when it is that version, else
    ``$LOCOMO_PYTHON_3_12``, ``python3.12`` on PATH, or the newest pyenv build of it (``$PYENV_ROOT`` or
    ``~/.pyenv``); each candidate is run to check its version. Raises :class:`EnvironmentBuildError`
    naming the version and how to get it."""
    if not _VERSION.match(version):
        raise EnvironmentBuildError(f"a Python version is major.minor (e.g. 3.12), not {version!r}")
    if f"{sys.version_info.major}.{sys.version_info.minor}" == version:
        return Path(sys.executable)
    override = f"LOCOMO_PYTHON_{version.replace('.', '_')}"
    candidates: list[str] = [os.environ[override]] if os.environ.get(override) else []
    on_path = shutil.which(f"python{version}")
    if on_path:
        candidates.append(on_path)
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    builds = sorted(pyenv.glob(f"{version}.*/bin/python{version}"),
                    key=lambda p: [int(x) if x.isdigit() else 0 for x in p.parts[-3].split(".")], reverse=True)
    candidates += [str(p) for p in builds]
    for candidate in candidates:
        try:
            proc = subprocess.run([candidate, "-c", "import sys, venv, ensurepip; "
                                   "print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if proc.returncode == 0 and proc.stdout.strip() == version:
            return Path(candidate)
    raise EnvironmentBuildError(
        f"Python {version} is needed, and none was found on this machine (looked at ${override}, python{version} "
        f"on PATH and {pyenv}/{version}.*): install it (`pyenv install {version}`, or your distribution's "
        f"python{version} with its venv module) or set {override}=/path/to/python{version}")


def _log(msg: str) -> None:
    print(f"locomo-kit: {msg}", file=sys.stderr, flush=True)


def is_built(spec: EnvironmentSpec) -> bool:
    try:
        return json.loads((env_dir(spec) / MARKER).read_text()).get("recipe_hash") == spec.recipe_hash
    except (OSError, ValueError):
        return False


@contextmanager
def _locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _run(cmd: list[str], spec: EnvironmentSpec, timeout: float = 1800, cwd: Path | None = None) -> None:
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout,
                              cwd=cwd)
    except subprocess.TimeoutExpired as exc:
        raise EnvironmentBuildError(f"{spec.system}: `{' '.join(cmd)}` ran over {timeout:.0f} s") from exc
    if proc.returncode != 0:
        tail = "\n".join(line for line in proc.stdout.splitlines() if "is ignored" not in line)[-3000:]
        raise EnvironmentBuildError(f"building the {spec.system} environment: `{' '.join(cmd)}` failed "
                                    f"({proc.returncode}):\n{tail}")
    _log(f"  {' '.join(cmd[2:] if cmd[1:2] == ['-m'] else cmd)}: {time.monotonic() - start:.1f} s")


def _build(spec: EnvironmentSpec, env: Path) -> None:
    python = find_python(spec.python_version)
    _run([str(python), "-m", "venv", str(env / "venv")], spec, timeout=300)
    # --no-compile: a host compiles what it imports on its first start and keeps it (hosts write bytecode); pip
    # would compile every file on one core (the Mem0 environment: 15,000, most never imported)
    pip = [str(env_python(env)), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-input",
           "--no-compile"]
    if spec.constraints:
        (env / "constraints.txt").write_text("".join(line + "\n" for line in spec.constraints))
        pip += ["-c", str(env / "constraints.txt")]
    for step in spec.steps:
        _run(pip + list(step), spec)
    if spec.npm:
        _npm_install(spec, env)
    if spec.finish is not None:
        spec.finish(env)


def _npm_install(spec: EnvironmentSpec, env: Path) -> None:
    """The pinned npm packages into ``npm/`` (its own package.json and lock file), nothing global."""
    bad = [p for p in spec.npm if not _PINNED_NPM.match(p)]
    if bad:
        raise EnvironmentBuildError(f"{spec.system}: npm packages must be pinned to an exact version "
                                    f"(name@1.2.3): {', '.join(bad)}")
    npm = shutil.which("npm")
    if npm is None:
        raise EnvironmentBuildError(f"{spec.system} is an npm package, and npm is not on PATH: install Node.js "
                                    "(20 or newer) with npm")
    folder = npm_dir(env)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "package.json").write_text(json.dumps({"name": f"locomo-kit-{spec.system}", "private": True}))
    _run([npm, "install", "--no-audit", "--no-fund", "--save-exact", *spec.npm], spec,
         cwd=folder)


def _write_marker(env: Path, record: dict) -> None:
    write_atomic(env / MARKER, json.dumps(record, indent=1))


def repair_scripts(env: Path) -> int:
    """Point the console scripts of a venv built elsewhere and moved here (builds before this one were
    made in a temporary folder and renamed) at this venv's Python; returns how many were rewritten."""
    bin_dir = env / "venv" / "bin"
    fixed = 0
    for script in sorted(bin_dir.iterdir()) if bin_dir.is_dir() else []:
        if script.is_symlink() or not script.is_file():
            continue
        try:
            with open(script, "rb") as fh:
                first = fh.readline()
        except OSError:
            continue
        interpreter = first[2:].strip().decode(errors="replace") if first.startswith(b"#!") else ""
        found = re.search(r"/venv/bin/(python[\d.]*)$", interpreter)
        if found and not os.path.exists(interpreter) and (bin_dir / found.group(1)).exists():
            rest = script.read_bytes()[len(first):]
            script.write_bytes(f"#!{bin_dir / found.group(1)}\n".encode() + rest)
            fixed += 1
    return fixed


def ensure_environment(spec: EnvironmentSpec) -> Path:
    """The folder of ``spec``'s environment, built first if missing or built from another recipe."""
    final = env_dir(spec)
    if is_built(spec):
        _repair_once(final)
        return final
    with _locked(final):
        if is_built(spec):  # another process built it while we waited
            return final
        if final.exists():  # built from an older recipe, or left incomplete by a killed build
            _log(f"removing {final} (an interrupted build or another recipe)")
            shutil.rmtree(final)
        what = [f"Python {spec.python_version} venv"] + [f"pip install {' '.join(s)}" for s in spec.steps]
        what += [f"npm install {' '.join(spec.npm)}"] if spec.npm else []
        what += [spec.finish_id] if spec.finish_id else []
        _log(f"building the {spec.system} {spec.version} environment in {final} (once; a few minutes): "
             + "; ".join(what))
        final.mkdir(parents=True)
        start = time.monotonic()
        try:
            _build(spec, final)
            built_in = round(time.monotonic() - start, 1)
            _write_marker(final, {"recipe_hash": spec.recipe_hash, "recipe": spec.recipe, "built_in_s": built_in,
                                  "in_place": True})
        except BaseException:
            shutil.rmtree(final, ignore_errors=True)
            raise
        _log(f"{spec.system} environment ready in {built_in} s ({final})")
    return final


def _repair_once(env: Path) -> None:
    """An environment built by an earlier kit (in a temporary folder, renamed) gets working scripts."""
    try:
        marker = json.loads((env / MARKER).read_text())
    except (OSError, ValueError):
        return
    if marker.get("in_place"):
        return
    with _locked(env):
        fixed = repair_scripts(env)
        _write_marker(env, {**marker, "in_place": True, "scripts_repaired": fixed})
    if fixed:
        _log(f"{env}: {fixed} console scripts pointed at this venv's Python (built by an earlier kit elsewhere)")


def package_version(env: Path, distribution: str) -> str:
    """The installed version of ``distribution`` inside the built environment ``env``."""
    proc = subprocess.run([str(env_python(env)), "-c", "import importlib.metadata as m, sys; "
                           "print(m.version(sys.argv[1]))", distribution], capture_output=True, text=True)
    if proc.returncode != 0:
        raise EnvironmentBuildError(f"{distribution} is not installed in {env}: {proc.stderr.strip()[-500:]}")
    return proc.stdout.strip()
