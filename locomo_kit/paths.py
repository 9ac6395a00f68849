"""Where the kit keeps its files (the data file and run folders, overridable by environment), and how it
replaces one whole (:func:`write_atomic`).

In a checkout (``make``'s layout) they are ``data/`` and ``outputs/`` beside the package; an installed kit
(``pip install locomo-kit``) keeps them in the current folder, as ``./data`` and ``./outputs``.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

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


@contextmanager
def replacing(path: Path, *, fsync: bool = False) -> Iterator[Path]:
    """A temporary file beside ``path`` to write into; on leaving the block it replaces ``path`` in one step
    (``os.replace``), so a reader sees the old file or the new one, never half of it. On an error the
    temporary file is removed and ``path`` is left as it was. ``fsync``: flush the file and its folder to
    disk before returning (for records that must survive a power cut)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would make the file readable by its owner only
        yield tmp
        if fsync:
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
        if fsync:
            fd = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    finally:
        tmp.unlink(missing_ok=True)


def write_atomic(path: Path, data: str | bytes | Iterable[str], *, fsync: bool = False,
                 encoding: str = "utf-8") -> Path:
    """Write ``data`` (text, bytes, or lines of text written one after another) to ``path`` through
    :func:`replacing`: all of it or, on an error, nothing. Returns ``path``."""
    path = Path(path)
    with replacing(path, fsync=fsync) as tmp:
        if isinstance(data, bytes):
            tmp.write_bytes(data)
        elif isinstance(data, str):
            tmp.write_text(data, encoding=encoding)
        else:
            with open(tmp, "w", encoding=encoding) as fh:
                fh.writelines(data)
    return path
