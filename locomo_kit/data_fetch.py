"""Get the pinned LoCoMo file into ``data/``: download it, or copy it from ``LOCOMO_SOURCE``.

The file is checked against a pinned sha256 either way and written atomically (a temporary file
in the same folder, then a rename), so an interrupted fetch never leaves a half-written dataset.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

import httpx

from locomo_kit.paths import default_dataset_path

LOCOMO_URL = "https://raw.githubusercontent.com/snap-research/locomo/main/data/locomo10.json"
LOCOMO_SHA256 = "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4"
LOCOMO_SIZE = 2_805_274


class DataFetchError(RuntimeError):
    """The dataset could not be obtained or did not match the pinned checksum."""


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _is_url(source: str) -> bool:
    return source.startswith(("http://", "https://"))


def _download(url: str, dest: Path, timeout: float) -> None:
    try:
        with httpx.stream("GET", url, timeout=timeout, follow_redirects=True) as resp:
            resp.raise_for_status()
            with open(dest, "wb") as fh:
                for chunk in resp.iter_bytes():
                    fh.write(chunk)
    except httpx.HTTPStatusError as exc:
        raise DataFetchError(
            f"Downloading {url} failed with HTTP {exc.response.status_code}. "
            "Set LOCOMO_SOURCE to a local copy of locomo10.json and run `locomo-kit data fetch` again."
        ) from exc
    except httpx.HTTPError as exc:
        raise DataFetchError(
            f"Cannot download {url} ({type(exc).__name__}: {exc}). Without network, copy the file "
            "instead: LOCOMO_SOURCE=/path/to/locomo10.json locomo-kit data fetch"
        ) from exc


def fetch_dataset(
    dest: Path | None = None,
    source: str | None = None,
    *,
    expected_sha256: str = LOCOMO_SHA256,
    force: bool = False,
    timeout: float = 60.0,
) -> Path:
    """Place the verified dataset at ``dest`` and return its path.

    ``source`` (default: ``LOCOMO_SOURCE``, else the pinned upstream URL) is a local path or a
    URL. An existing ``dest`` with the right checksum is kept unless ``force``.
    """
    dest = Path(dest) if dest else default_dataset_path()
    source = source or os.environ.get("LOCOMO_SOURCE") or LOCOMO_URL
    if dest.exists() and not force:
        if sha256_file(dest) == expected_sha256:
            return dest
        raise DataFetchError(
            f"{dest} exists but its sha256 does not match the pinned {expected_sha256}. "
            "Delete it or run `locomo-kit data fetch --force`."
        )
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=".locomo10.", suffix=".part", dir=dest.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        if _is_url(source):
            _download(source, tmp, timeout)
        else:
            src = Path(source).expanduser()
            if not src.is_file():
                raise DataFetchError(
                    f"LOCOMO_SOURCE points to {src}, which is not a file. Point it at locomo10.json "
                    f"or unset it to download from {LOCOMO_URL}."
                )
            shutil.copyfile(src, tmp)
        got = sha256_file(tmp)
        if got != expected_sha256:
            raise DataFetchError(
                f"{source} has sha256 {got}, expected {expected_sha256}: not the pinned LoCoMo "
                "release. Nothing was written."
            )
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest
