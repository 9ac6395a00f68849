"""What marks a run folder as imported (answers produced elsewhere), read by the stages that treat it so."""

from __future__ import annotations

from typing import Any

from locomo_kit.runs import RunFolder

IMPORTED_SOURCE = "imported"  # the answer records' ``source``
SOURCE_PROTOCOL = "source"  # the protocol of the source's own verdicts in judgements.jsonl
IMPORT_FILE = "import.json"  # the match listing: every record that did not match, with its reason


def imported(manifest: dict[str, Any]) -> dict[str, Any] | None:
    """The manifest's ``imported`` block, or None for a run answered here."""
    block = manifest.get("imported")
    return block if isinstance(block, dict) else None


def imported_sample(run: RunFolder, sample: str) -> str:
    """The samples an imported run answers (its answers span several conversations), else ``sample``."""
    block = imported(run.manifest())
    return block["sample"] if block and block.get("sample") else sample


def imported_coverage(manifest: dict[str, Any]) -> dict[str, Any] | None:
    """What a comparison needs to say of an imported run: its system and coverage (None: answered here)."""
    block = imported(manifest)
    if not block:
        return None
    return {"system": block.get("system"), "coverage": block.get("coverage") or {}, "reasons": block.get("reasons") or {}}


def coverage_notes(runs: list[dict[str, Any]]) -> list[str]:
    """One line per imported run among ``runs`` (each with ``run_id`` and ``config``): answered elsewhere, coverage."""
    out = []
    for r in runs:
        info = (r.get("config") or {}).get("imported")
        if info:
            c = info["coverage"]
            why = "; ".join(f"{k}: {v}" for k, v in info["reasons"].items())
            out.append(f"{r['run_id']} was answered elsewhere ({info['system']}) and imported: its file covers "
                       f"{c.get('questions', 0):,} of the benchmark's {c.get('benchmark', 0):,} questions"
                       + (f" (not matched: {why})" if why else "") + ".")
    return out


def coverage_lines(runs: list[dict[str, Any]]) -> list[str]:
    """The same as markdown quotes for the top of a comparison (nothing when no run is imported)."""
    notes = coverage_notes(runs)
    return [f"> **Coverage.** {n}" for n in notes] + [""] if notes else []
