"""Where the kit keeps its files: the data file and run folders, overridable by environment."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    return Path(os.environ.get("LOCOMO_DATA_DIR", PROJECT_ROOT / "data"))


def default_dataset_path() -> Path:
    return data_dir() / "locomo10.json"


def outputs_dir() -> Path:
    return Path(os.environ.get("LOCOMO_OUTPUTS_DIR", PROJECT_ROOT / "outputs"))
