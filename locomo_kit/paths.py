"""Where the kit keeps its files: the data file and run folders, overridable by environment.

In a checkout (``make``'s layout) they are ``data/`` and ``outputs/`` beside the package; an installed kit
(``pip install locomo-kit``) keeps them in the current folder, as ``./data`` and ``./outputs``.
"""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def checkout() -> Path | None:
    """The checkout the kit runs from, or None for an installed kit (its parent folder is site-packages)."""
    return PROJECT_ROOT if (PROJECT_ROOT / "pyproject.toml").is_file() else None


def home() -> Path:
    """The folder that holds ``data/`` and ``outputs/`` by default: the checkout, else the current folder."""
    return checkout() or Path.cwd()


def data_dir() -> Path:
    return Path(os.environ.get("LOCOMO_DATA_DIR", home() / "data"))


def default_dataset_path() -> Path:
    return data_dir() / "locomo10.json"


def outputs_dir() -> Path:
    return Path(os.environ.get("LOCOMO_OUTPUTS_DIR", home() / "outputs"))
