"""Each third-party memory system's own Python environment, built by the kit on first use and cached.

A system's packages (and their pins) never enter the kit's own environment: the kit builds a virtual
environment per system under ``$LOCOMO_SYSTEMS_CACHE`` (default ``~/.cache/locomo-kit/systems``), named
``<system>-<version>``, once, under a file lock, in a temporary folder renamed into place when complete.
The recipe (its pip steps and extra files) is recorded beside it: a changed recipe builds it again.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

MARKER = ".complete"


class EnvironmentBuildError(RuntimeError):
    """A system's environment could not be built (no venv module, pip failed, a file is missing)."""


@dataclass(frozen=True)
class EnvironmentSpec:
    """How to build one system's environment.

    ``steps`` are ``pip install`` argument lists run in order; ``constraints`` (pip constraint lines)
    apply to every step; ``finish(env_dir)`` adds what pip cannot (e.g. a model folder).
    """

    system: str
    version: str
    steps: tuple[tuple[str, ...], ...]
    constraints: tuple[str, ...] = ()
    finish: Callable[[Path], None] | None = field(default=None, compare=False)
    finish_id: str = ""  # names what ``finish`` does, so that changing it changes the recipe

    @property
    def recipe(self) -> dict:
        return {"system": self.system, "version": self.version, "steps": [list(s) for s in self.steps],
                "constraints": list(self.constraints), "finish": self.finish_id,
                "python": f"{sys.version_info.major}.{sys.version_info.minor}"}

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


def _run(cmd: list[str], spec: EnvironmentSpec, timeout: float = 1800) -> None:
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise EnvironmentBuildError(f"{spec.system}: `{' '.join(cmd)}` ran over {timeout:.0f} s") from exc
    if proc.returncode != 0:
        tail = "\n".join(line for line in proc.stdout.splitlines() if "is ignored" not in line)[-3000:]
        raise EnvironmentBuildError(f"building the {spec.system} environment: `{' '.join(cmd)}` failed "
                                    f"({proc.returncode}):\n{tail}")


def _build(spec: EnvironmentSpec, tmp: Path) -> None:
    _run([sys.executable, "-m", "venv", str(tmp / "venv")], spec, timeout=300)
    python = str(env_python(tmp))
    pip = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-input"]
    if spec.constraints:
        (tmp / "constraints.txt").write_text("".join(line + "\n" for line in spec.constraints))
        pip += ["-c", str(tmp / "constraints.txt")]
    for step in spec.steps:
        _run(pip + list(step), spec)
    if spec.finish is not None:
        spec.finish(tmp)


def ensure_environment(spec: EnvironmentSpec) -> Path:
    """The folder of ``spec``'s environment, built first if missing or built from another recipe."""
    final = env_dir(spec)
    if is_built(spec):
        return final
    with _locked(final):
        if is_built(spec):  # another process built it while we waited
            return final
        _log(f"building the {spec.system} {spec.version} environment in {final} (once; a few minutes)")
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=final.parent))
        try:
            start = time.monotonic()
            _build(spec, tmp)
            built_in = round(time.monotonic() - start, 1)
            (tmp / MARKER).write_text(json.dumps({"recipe_hash": spec.recipe_hash, "recipe": spec.recipe,
                                                  "built_in_s": built_in}, indent=1))
            if final.exists():  # built from an older recipe, or left incomplete by a killed build
                shutil.rmtree(final)
            os.rename(tmp, final)
            _log(f"{spec.system} environment ready in {built_in} s")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def package_version(env: Path, distribution: str) -> str:
    """The installed version of ``distribution`` inside the built environment ``env``."""
    proc = subprocess.run([str(env_python(env)), "-c", "import importlib.metadata as m, sys; "
                           "print(m.version(sys.argv[1]))", distribution], capture_output=True, text=True)
    if proc.returncode != 0:
        raise EnvironmentBuildError(f"{distribution} is not installed in {env}: {proc.stderr.strip()[-500:]}")
    return proc.stdout.strip()
