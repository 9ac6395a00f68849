"""What must not change for users when the code moves: the command line, the notebooks' parameters, the
run ids, the run folder's files and records, the LLM cache keys, the ``LOCOMO_*`` variables and what the
docs tell adapter authors to import.

Each is compared with a snapshot in ``tests/fixtures/pins/``, written before the package was reorganised.
A deliberate change rewrites the snapshot with ``LOCOMO_UPDATE_PINS=1 pytest tests/test_pins.py`` and
says why in its commit.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
PINS = ROOT / "tests" / "fixtures" / "pins"


def check(name: str, value: Any) -> None:
    path = PINS / f"{name}.json"
    text = json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    if os.environ.get("LOCOMO_UPDATE_PINS"):
        PINS.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"no snapshot {path}: write it with LOCOMO_UPDATE_PINS=1"
    assert json.loads(path.read_text()) == json.loads(text), f"{name} changed (see {path})"


def _actions(parser: argparse.ArgumentParser) -> dict[str, Any]:
    out: dict[str, Any] = {"description": parser.description, "options": [], "commands": {}}
    for action in parser._actions:  # argparse has no public walk of its actions
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                out["commands"][name] = {"help": helps.get(name), **_actions(sub)}
            continue
        if isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            out["options"].append({"options": sorted(action.option_strings)})
            continue
        out["options"].append({
            "options": sorted(action.option_strings) or [action.dest], "dest": action.dest,
            "default": repr(action.default) if not callable(action.default) else "<callable>",
            "help": action.help, "choices": list(action.choices) if action.choices else None,
            "type": getattr(action.type, "__name__", None), "nargs": action.nargs, "required": action.required,
            "metavar": action.metavar, "kind": type(action).__name__,
        })
    out["options"].sort(key=lambda o: o["options"])
    return out


def test_every_command_option_default_and_help(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOCOMO_WORKER_URL", raising=False)
    from locomo_kit.cli import build_parser

    check("cli", _actions(build_parser()))


def test_the_notebooks_parameters_cells_byte_for_byte() -> None:
    cells = {}
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = json.loads(path.read_text())
        params = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
        cells[path.name] = ["".join(c["source"]) for c in params]
    check("notebook_parameters", cells)


CONFIGS: dict[str, dict[str, Any]] = {
    "make run": {"context_budget": 1000},
    "top-k 8": {"top_k": 8},
    "bm25": {"system": "bm25", "context_budget": 1000},
    "dense": {"system": "dense", "context_budget": 1000},
    "oracle": {"source": "oracle"},
    "keywords": {"context_budget": 1000, "query_strategy": "keywords"},
    "limit 5": {"context_budget": 1000, "limit": 5},
    "two sessions": {"sample": "conv-26@s2", "context_budget": 1000},
    "claude-mem": {"worker_url": "http://127.0.0.1:37777", "context_budget": 1000},
    "turns": {"mode": "turns", "top_k": 8},
    "all": {"sample": "all", "context_budget": 500},
}


def test_run_ids_hash_included() -> None:
    import locomo_kit as lk

    ids = {}
    for name, options in CONFIGS.items():
        options = dict(options)
        top_k = options.pop("top_k", 100 if options.get("context_budget") else 8)
        system = lk.SystemSpec(name=options.pop("system", None), worker_url=options.pop("worker_url", "embedded"),
                               mode=options.pop("mode", "transcript"))
        retrieval = lk.Retrieval(top_k=top_k, context_budget=options.pop("context_budget", None),
                                 query_strategy=options.pop("query_strategy", "question"))
        sample = options.pop("sample", "conv-26")
        ids[name] = lk.run_config(sample, system=system, retrieval=retrieval, answerer=lk.Answerer(**options)).run_id()
    assert ids["make run"] == "conv-26-transcript-embedded-minilm-extractive-b1000-6f085058"
    assert ids["bm25"] == "conv-26-bm25-0.3.16-extractive-b1000-60eeaa98"
    check("run_ids", ids)


def test_llm_cache_keys() -> None:
    from locomo_kit.llm.cache import cache_key

    keys = {
        "plain": cache_key("anthropic", "claude-opus-4-6", "sys", [{"role": "user", "content": "q"}], 64, 0.0, "v1"),
        "salted": cache_key("openai", "m", "", [{"role": "user", "content": "é"}], 8, None, "p", "s1",
                            {"api_version": None, "server": "http://127.0.0.1:8000/v1"}),
    }
    check("cache_keys", keys)


def test_locomo_environment_variables() -> None:
    names = set()
    for path in (ROOT / "locomo_kit").rglob("*.py"):
        names.update(re.findall(r"\bLOCOMO_[A-Z0-9_]+\b", path.read_text()))
    check("environment_variables", sorted(names))


def test_the_registry_module_strings() -> None:
    from locomo_kit.systems.registry import SYSTEMS

    check("registry", {name: [spec.module, spec.attr] for name, spec in sorted(SYSTEMS.items())})


def test_what_docs_systems_tells_adapter_authors_to_import() -> None:
    text = (ROOT / "docs" / "systems.md").read_text()
    lines = sorted({line.strip() for line in text.splitlines()
                    if re.match(r"\s*(from locomo_kit[\w.]* import|import locomo_kit)", line)})
    assert lines
    for line in lines:
        exec(line, {})  # each still imports
    check("docs_systems_imports", lines)


def test_make_runs_folder_files_and_record_schemas(report_runs) -> None:
    run = report_runs.default
    assert run.run_id == "conv-26-transcript-embedded-minilm-extractive-b1000-6f085058"

    def first_keys(name: str) -> list[str]:
        with (run.path / name).open() as fh:
            return sorted(json.loads(fh.readline()))

    manifest = json.loads((run.path / "manifest.json").read_text())
    schema = {
        "files": sorted(p.name for p in run.path.iterdir() if p.name != "figures"),
        "figures": sorted(p.name for p in (run.path / "figures").iterdir()),
        "manifest": sorted(manifest),
        "manifest_nested": {k: sorted(v) for k, v in sorted(manifest.items()) if isinstance(v, dict)},
        "answers": first_keys("answers.jsonl"),
        "scores": first_keys("scores.jsonl"),
    }
    ingestion = run.path.parent / manifest["ingestion"]["id"] if "ingestion" in manifest else run.path
    if (ingestion / "ingest.jsonl").exists():
        with (ingestion / "ingest.jsonl").open() as fh:
            schema["ingest"] = sorted(json.loads(fh.readline()))
    check("run_folder", schema)
