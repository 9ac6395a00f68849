"""The published outputs the kit knows (``catalogue.json``), fetched pinned by sha256 like the dataset.

``fetch_entry("memobase-0.0.37")`` places the entry's files under ``data/published/<folder>/``:
copied from ``$LOCOMO_PUBLISHED_SOURCE`` (a folder laid out as ``<folder>/<file>``) when it is set,
else downloaded from the source repository at the pinned commit; the sha256 is checked either way
(:func:`locomo_kit.data_fetch.fetch_pinned_file`). None of these files is ever committed.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from locomo_kit.data_fetch import DataFetchError, fetch_pinned_file
from locomo_kit.paths import data_dir

CATALOGUE_FILE = Path(__file__).with_name("catalogue.json")
SOURCE_ENV = "LOCOMO_PUBLISHED_SOURCE"


@dataclass(frozen=True)
class PinnedFile:
    path: str  # in the source repository
    name: str
    sha256: str


@dataclass(frozen=True)
class Entry:
    name: str
    data: dict[str, Any]

    @property
    def files(self) -> list[PinnedFile]:
        return [PinnedFile(**f) for f in self.data["files"]]

    @property
    def auxiliary(self) -> list[PinnedFile]:
        return [PinnedFile(**f) for f in self.data.get("auxiliary", [])]

    @property
    def preset(self) -> str | None:
        return self.data.get("preset")

    @property
    def claim(self) -> dict[str, Any]:
        return self.data.get("claim") or {}

    def url(self, f: PinnedFile) -> str:
        return f"https://raw.githubusercontent.com/{self.data['repository']}/{self.data['commit']}/{f.path}"

    def identity(self) -> dict[str, Any]:
        """What an imported run's manifest records of its catalogue entry."""
        keep = ("system", "answerer", "judge", "repository", "commit", "licence", "taken_from")
        return {"entry": self.name, **{k: self.data[k] for k in keep if k in self.data},
                "files": [{"path": f.path, "sha256": f.sha256} for f in self.files]}


@lru_cache(maxsize=1)
def _raw() -> dict[str, Any]:
    return json.loads(CATALOGUE_FILE.read_text(encoding="utf-8"))


def entries() -> dict[str, Entry]:
    return {name: Entry(name, data) for name, data in _raw()["entries"].items()}


def entry(name: str) -> Entry:
    known = entries()
    if name not in known:
        raise DataFetchError(f"{name!r} is neither a file nor a catalogue entry; the catalogue has "
                             f"{', '.join(known)} (locomo-kit import --list)")
    return known[name]


def local_source() -> Path | None:
    """``$LOCOMO_PUBLISHED_SOURCE`` when set (else the files are downloaded)."""
    source = os.environ.get(SOURCE_ENV)
    return Path(source).expanduser() if source else None


def published_dir() -> Path:
    return data_dir() / "published"


def fetch_file(e: Entry, f: PinnedFile, force: bool = False) -> Path:
    local = local_source()
    name = f"{e.data['folder']}/{f.name}"
    source = str(local / name) if local else e.url(f)
    try:
        return fetch_pinned_file(published_dir() / name, source, f.sha256, env_var=SOURCE_ENV, name=name,
                                 what=f"{e.name} file {f.name}", force=force)
    except DataFetchError as exc:
        if local:
            raise
        raise DataFetchError(f"{exc} ({SOURCE_ENV} names a folder that holds {name}, not the file itself)") from None


def fetch_entry(name: str, force: bool = False) -> tuple[Entry, list[Path], dict[str, Path]]:
    """The entry, its verified files (in order) and its verified auxiliary files by name."""
    e = entry(name)
    files = [fetch_file(e, f, force) for f in e.files]
    aux = {f.name: fetch_file(e, f, force) for f in e.auxiliary}
    return e, files, aux
