"""The kit's cached environments for other people's systems, with real venvs, real pip and real npm: built in
their final folder so that every console script works (``venv/bin/pip`` and an installed package's script),
with the Python version a spec names (or a clear error saying how to get it), with pinned npm packages in a
folder of their own; an environment built by an earlier kit (in a temporary folder, renamed) gets working
scripts; an interrupted build is built again; building says what it does and how long it took."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from locomo_kit.systems.environments import (
    MARKER,
    EnvironmentBuildError,
    EnvironmentSpec,
    ensure_environment,
    env_dir,
    env_python,
    find_python,
    npm_dir,
    repair_scripts,
)


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("LOCOMO_SYSTEMS_CACHE", str(tmp_path / "systems"))
    return tmp_path / "systems"


def hello_package(root: Path) -> Path:
    """A tiny local package with a console script."""
    pkg = root / "hello-pkg"
    (pkg / "hello_locomo").mkdir(parents=True)
    (pkg / "hello_locomo" / "__init__.py").write_text("def main():\n    print('hello from', __file__)\n")
    (pkg / "pyproject.toml").write_text(textwrap.dedent("""\
        [build-system]
        requires = ["setuptools"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "hello-locomo"
        version = "1.0"
        [project.scripts]
        hello-locomo = "hello_locomo:main"
        """))
    return pkg


def run(cmd: list[str]) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except OSError as exc:  # a script whose interpreter (its shebang) does not exist
        return subprocess.CompletedProcess(cmd, 127, "", str(exc))


def test_console_scripts_work_where_the_environment_stays(cache, tmp_path, capsys):
    spec = EnvironmentSpec("toy", "1.0", steps=((str(hello_package(tmp_path)),),))
    env = ensure_environment(spec)
    pip = run([str(env / "venv" / "bin" / "pip"), "--version"])
    assert pip.returncode == 0, pip.stderr
    assert str(env / "venv") in pip.stdout
    script = run([str(env / "venv" / "bin" / "hello-locomo")])
    assert script.returncode == 0, script.stderr
    assert script.stdout.startswith("hello from " + str(env))
    assert json.loads((env / MARKER).read_text())["in_place"] is True
    said = capsys.readouterr().err
    assert f"building the toy 1.0 environment in {env}" in said and "pip install " in said
    assert "toy environment ready in" in said


def test_an_environment_built_elsewhere_and_moved_gets_working_scripts(cache):
    spec = EnvironmentSpec("toy", "1.0", steps=())
    elsewhere = cache / ".toy-1.0.tmp-abc"
    elsewhere.mkdir(parents=True)
    subprocess.run([sys.executable, "-m", "venv", str(elsewhere / "venv")], check=True, timeout=300)
    (elsewhere / MARKER).write_text(json.dumps({"recipe_hash": spec.recipe_hash, "recipe": spec.recipe}))
    os.rename(elsewhere, env_dir(spec))  # what kits before this one did
    pip = env_dir(spec) / "venv" / "bin" / "pip"
    broken = run([str(pip), "--version"])
    assert broken.returncode != 0, "a moved venv's pip should name the folder it was built in"
    ensure_environment(spec)
    assert run([str(pip), "--version"]).returncode == 0
    assert json.loads((env_dir(spec) / MARKER).read_text())["scripts_repaired"] >= 1
    assert repair_scripts(env_dir(spec)) == 0  # nothing left to repair


def test_an_interrupted_build_is_built_again(cache, capsys):
    spec = EnvironmentSpec("toy", "1.0", steps=())
    (env_dir(spec) / "venv").mkdir(parents=True)  # a build killed before its marker was written
    env = ensure_environment(spec)
    assert env_python(env).exists()
    assert "an interrupted build" in capsys.readouterr().err


def test_a_python_version_not_on_this_machine_is_a_clear_error(cache, monkeypatch, tmp_path):
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "no-pyenv"))
    with pytest.raises(EnvironmentBuildError, match=r"Python 3\.99 is needed.*pyenv install 3\.99.*LOCOMO_PYTHON_3_99"):
        find_python("3.99")
    with pytest.raises(EnvironmentBuildError, match=r"Python 3\.99 is needed"):
        ensure_environment(EnvironmentSpec("toy", "1.0", steps=(), python="3.99"))
    assert not env_dir(EnvironmentSpec("toy", "1.0", steps=(), python="3.99")).exists()
    with pytest.raises(EnvironmentBuildError, match="major.minor"):
        find_python("3")


def test_the_kits_own_python_and_an_override(monkeypatch):
    own = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert find_python(own) == Path(sys.executable)
    monkeypatch.setenv("LOCOMO_PYTHON_3_99", sys.executable)  # an override that is not 3.99 is not taken
    monkeypatch.setenv("PYENV_ROOT", "/nonexistent")
    with pytest.raises(EnvironmentBuildError):
        find_python("3.99")


def another_python() -> str | None:
    for version in ("3.12", "3.13"):
        try:
            find_python(version)
            return version
        except EnvironmentBuildError:
            continue
    return None


def test_an_environment_with_the_python_version_the_spec_names(cache):
    version = another_python()
    if version is None:
        pytest.skip("neither Python 3.12 nor 3.13 is on this machine (pyenv install 3.12)")
    spec = EnvironmentSpec("toy312", "1.0", steps=(), python=version)
    env = ensure_environment(spec)
    out = run([str(env_python(env)), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
    assert out.stdout.strip() == version
    assert run([str(env / "venv" / "bin" / "pip"), "--version"]).returncode == 0
    assert spec.recipe["python"] == version


def test_npm_packages_must_be_pinned(cache):
    spec = EnvironmentSpec("toynpm", "1.0", steps=(), npm=("@modelcontextprotocol/server-memory@^2026.8.31",))
    with pytest.raises(EnvironmentBuildError, match="pinned to an exact version"):
        ensure_environment(spec)
    assert not env_dir(spec).exists()


@pytest.mark.integration
def test_an_npm_package_in_a_folder_of_its_own(cache, capsys):
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed")
    spec = EnvironmentSpec("toynpm", "1.0", steps=(), npm=("@modelcontextprotocol/server-memory@2026.8.31",))
    env = ensure_environment(spec)
    manifest = npm_dir(env) / "node_modules" / "@modelcontextprotocol" / "server-memory" / "package.json"
    assert json.loads(manifest.read_text())["version"] == "2026.8.31"
    assert json.loads((npm_dir(env) / "package.json").read_text())["dependencies"] == {
        "@modelcontextprotocol/server-memory": "2026.8.31"}
    assert (npm_dir(env) / "node_modules" / ".bin" / "mcp-server-memory").exists()
    assert "npm install" in capsys.readouterr().err
    assert spec.recipe["npm"] == ["@modelcontextprotocol/server-memory@2026.8.31"]
