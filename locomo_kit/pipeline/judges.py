"""Several judges over one run's answers: add verdict sets produced elsewhere, and write the judge matrix.

:func:`add_verdicts` adds a verdict file (or one per conversation) to a run as a named set
(:mod:`locomo_kit.imported.verdicts`); :func:`write_judges` writes ``judges.md`` and ``judges.json``
into the run folder from every set the run holds (:mod:`locomo_kit.reports.judges`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from locomo_kit.dataset import load_dataset
from locomo_kit.imported.verdicts import VerdictMapping, VerdictSetResult, add_verdict_set
from locomo_kit.paths import default_dataset_path
from locomo_kit.reports.judges import judge_matrix, matrix_lines
from locomo_kit.runs import RunFolder, utc_now

JUDGES_MD = "judges.md"
JUDGES_JSON = "judges.json"


def add_verdicts(run: RunFolder, *, files: list[str | Path], name: str, mapping: VerdictMapping,
                 dataset_path: str | Path | None = None) -> VerdictSetResult:
    """Add ``files`` to ``run`` as the verdict set ``name`` (raises ``VerdictImportError`` on bad input)."""
    conversations = load_dataset(Path(dataset_path or default_dataset_path()))
    return add_verdict_set(run, files, name=name, mapping=mapping, conversations=conversations)


def write_judges(run: RunFolder, *, rules: bool = True, dataset_path: str | None = None) -> tuple[Path, dict[str, Any]]:
    """Write the run's judge matrix as ``judges.md`` and ``judges.json``; returns the markdown's path and the matrix."""
    matrix = judge_matrix(run, rules=rules, dataset_path=dataset_path)
    lines = [f"# Judges: {run.run_id}", "", f"Written {utc_now()} from {run.path}.", ""]
    lines += matrix_lines(matrix, heading="## The judge matrix", disagreements=50)
    path = run.path / JUDGES_MD
    path.write_text("\n".join(lines), encoding="utf-8")
    (run.path / JUDGES_JSON).write_text(json.dumps(matrix, indent=1, ensure_ascii=False, default=str),
                                        encoding="utf-8")
    return path, matrix
