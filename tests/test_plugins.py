"""A memory system outside the kit, installed the way a user installs a package, runs through `run`, `verify`,
`leaderboard` and the adapter contract with no file of the kit edited: found by its entry point
(``locomo_kit.systems``) or by module path, its options from ``--system-option``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from locomo_kit.systems import create, registry
from locomo_kit.testing.system_contract import SystemContract

PLUGIN = Path(__file__).parent / "fixtures" / "overlap_plugin"


@pytest.fixture(scope="session")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plugin installed by pip into a folder of its own (on PYTHONPATH for the commands below)."""
    root = tmp_path_factory.mktemp("plugin")
    source = shutil.copytree(PLUGIN, root / "src")  # a build writes beside its sources: never in the repository
    site = root / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                           "--target", str(site), str(source)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return site


def kit(site: Path, outputs: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(site), "LOCOMO_OUTPUTS_DIR": str(outputs), "CI": "1"}
    return subprocess.run([sys.executable, "-m", "locomo_kit", *argv], capture_output=True, text=True, env=env,
                          timeout=600)


def answers(outputs: Path, run_id: str) -> list[dict]:
    return [json.loads(line) for line in (outputs / "runs" / run_id / "answers.jsonl").read_text().splitlines()]


def run_id_of(stdout: str, outputs: Path) -> str:
    report = next(line.split()[-1] for line in stdout.splitlines() if line.startswith("report:"))
    return Path(report).parent.name


def test_systems_lists_the_entry_point_with_its_origin_and_options(plugin_site, tmp_path):
    proc = kit(plugin_site, tmp_path, "systems")
    assert proc.returncode == 0, proc.stderr
    block = proc.stdout[proc.stdout.index("overlap:"):]
    assert "from: entry point of overlap-memory 0.1.0" in block
    assert "option min_overlap (int, default 1)" in block


def test_run_and_verify_by_entry_point_and_an_option_that_changes_behaviour_and_run_id(plugin_site, tmp_path, dataset_path):
    base = ["--sample", "conv-26", "--system", "overlap", "--limit", "20"]
    first = kit(plugin_site, tmp_path, "run", *base)
    assert first.returncode == 0, first.stderr[-3000:]
    strict = kit(plugin_site, tmp_path, "run", *base, "--system-option", "min_overlap=3")
    assert strict.returncode in (0, 1), strict.stderr[-3000:]  # 1 only when a stricter search finds nothing at all
    loose_id, strict_id = run_id_of(first.stdout, tmp_path), run_id_of(strict.stdout, tmp_path)
    assert loose_id.startswith("conv-26-overlap-0.1.0-") and strict_id != loose_id
    loose_used = sum(a["memories_used"] for a in answers(tmp_path, loose_id))
    strict_used = sum(a["memories_used"] for a in answers(tmp_path, strict_id))
    assert strict_used < loose_used
    ingestions = sorted(p.name for p in (tmp_path / "runs").iterdir() if not (p / "answers.jsonl").exists())
    assert len(ingestions) == 2, ingestions  # each setting has its own ingestion, so neither is taken for the other
    manifest = json.loads((tmp_path / "runs" / strict_id / "manifest.json").read_text())
    assert manifest["config"]["system_options"] == {"min_overlap": 3}
    verify = kit(plugin_site, tmp_path, "verify", "--sample", "conv-26", "--system", "overlap",
                 "--system-option", "min_overlap=3")
    assert verify.returncode == 0, verify.stderr
    bad = kit(plugin_site, tmp_path, "run", *base, "--system-option", "min_overlap=many")
    assert bad.returncode == 1 and "option min_overlap is int, not 'many'" in bad.stderr
    unknown = kit(plugin_site, tmp_path, "run", *base, "--system-option", "colour=red")
    assert unknown.returncode == 1 and "overlap takes no option colour" in unknown.stderr


def test_by_module_path_and_on_the_leaderboard(plugin_site, tmp_path, dataset_path):
    by_path = kit(plugin_site, tmp_path, "run", "--sample", "conv-30", "--limit", "5", "--system",
                  "overlap_memory.adapter:OverlapMemory")
    assert by_path.returncode == 0, by_path.stderr[-3000:]
    board = kit(plugin_site, tmp_path, "leaderboard", "--systems", "bm25,overlap", "--sample", "conv-30",
                "--limit", "10")
    assert board.returncode == 0, board.stderr[-3000:]
    folder = next((tmp_path / "leaderboards").iterdir())
    rows = json.loads((folder / "leaderboard.json").read_text())["rows"]
    assert [r["system"].split()[0] for r in rows] == ["bm25", "overlap"]


def test_an_unknown_name_says_how_systems_are_found():
    with pytest.raises(ValueError, match="entry point in locomo_kit.systems, or --system package.module:Class"):
        registry.spec("no-such-system")
    with pytest.raises(ValueError, match="cannot be imported"):
        registry.resolve("no_such_package.adapter:Thing")


class TestOverlapContract(SystemContract):
    """The plugin passes the same contract as the kit's own adapters, created by its entry-point name."""

    @pytest.fixture(scope="class")
    @classmethod
    def system(cls, plugin_site, tmp_path_factory):
        sys.path.insert(0, str(plugin_site))
        try:
            with create("overlap", tmp_path_factory.mktemp("overlap")) as s:
                yield s
        finally:
            sys.path.remove(str(plugin_site))
