"""Copies of the published harness outputs (../shared/data/published) for the import tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from locomo_kit.paths import PROJECT_ROOT

PUBLISHED = PROJECT_ROOT.parent / "shared" / "data" / "published"


def published_copy(tmp: Path, *names: str) -> list[Path]:
    """Copy ``folder/file`` names from the shared folder into ``tmp``; skip when the folder is absent."""
    if not PUBLISHED.is_dir():
        pytest.skip(f"{PUBLISHED} is absent: the published outputs are never committed (CI keeps them in ../shared)")
    out = []
    for name in names:
        dest = tmp / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(PUBLISHED / name, dest)
        out.append(dest)
    return out
