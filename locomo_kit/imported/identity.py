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
