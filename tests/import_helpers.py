"""Copies of the published harness outputs (the folder ``LOCOMO_PUBLISHED_SOURCE`` names) for the import tests."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest


def published() -> Path:
    """The folder of published outputs that ``LOCOMO_PUBLISHED_SOURCE`` names; skip when it is not set."""
    source = os.environ.get("LOCOMO_PUBLISHED_SOURCE")
    if not source or not Path(source).is_dir():
        pytest.skip("LOCOMO_PUBLISHED_SOURCE does not name a folder: the published outputs are never committed "
                    "(set it to a folder laid out as <entry folder>/<file>, as .ci/run does)")
    return Path(source)


def published_copy(tmp: Path, *names: str) -> list[Path]:
    """Copy ``folder/file`` names from the published folder into ``tmp``; skip when there is none."""
    root = published()
    out = []
    for name in names:
        dest = tmp / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / name, dest)
        out.append(dest)
    return out
