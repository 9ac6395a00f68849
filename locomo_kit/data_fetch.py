"""Get the pinned LoCoMo file (and the pinned gold-answer audit) into ``data/``.

Each file is downloaded, or copied from a local path or URL named by an environment variable
(``LOCOMO_SOURCE`` for the dataset, ``LOCOMO_AUDIT_SOURCE`` for the audit), checked against a pinned
sha256 either way and written atomically (a temporary file in the same folder, then a rename), so
an interrupted fetch never leaves a half-written file.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import httpx

from locomo_kit.paths import data_dir, default_dataset_path, replacing

LOCOMO_URL = "https://raw.githubusercontent.com/snap-research/locomo/main/data/locomo10.json"
LOCOMO_SHA256 = "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4"
LOCOMO_SIZE = 2_805_274

# dial481/locomo-audit errors.json at a pinned commit (CC BY-NC 4.0, like the dataset): never committed.
AUDIT_COMMIT = "9493fb4b4af4256ed17a18e8fd0b3cfdeec29539"
AUDIT_URL = f"https://raw.githubusercontent.com/dial481/locomo-audit/{AUDIT_COMMIT}/errors.json"
AUDIT_SHA256 = "f298ef46263fada20688a1d672be37d4f488c6da3b19343eea55ae5c1b5fe55e"
AUDIT_FILE = "locomo-audit-errors.json"


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


def _download(url: str, dest: Path, timeout: float, env_var: str, name: str) -> None:
    try:
        with httpx.stream("GET", url, timeout=timeout, follow_redirects=True) as resp:
            resp.raise_for_status()
            with open(dest, "wb") as fh:
                for chunk in resp.iter_bytes():
                    fh.write(chunk)
    except httpx.HTTPStatusError as exc:
        raise DataFetchError(
            f"Downloading {url} failed with HTTP {exc.response.status_code}. "
            f"Set {env_var} to a local copy of {name} and run `locomo-kit data fetch` again."
        ) from exc
    except httpx.HTTPError as exc:
        raise DataFetchError(
            f"Cannot download {url} ({type(exc).__name__}: {exc}). Without network, copy the file "
            f"instead: {env_var}=/path/to/{name} locomo-kit data fetch"
        ) from exc


def _fetch_pinned(dest: Path, source: str, expected_sha256: str, force: bool, timeout: float, *, env_var: str,
                  name: str, what: str, origin: str | None = None) -> Path:
    """``origin``: where ``source`` came from, for messages (default: ``env_var``)."""
    if dest.exists() and not force:
        if sha256_file(dest) == expected_sha256:
            return dest
        raise DataFetchError(
            f"{dest} exists but its sha256 does not match the pinned {expected_sha256}. "
            "Delete it or run `locomo-kit data fetch --force`."
        )
    with replacing(dest) as tmp:  # nothing is written unless the whole file arrives with the pinned sha256
        if _is_url(source):
            _download(source, tmp, timeout, env_var, name)
        else:
            src = Path(source).expanduser()
            if not src.is_file():
                raise DataFetchError(
                    f"{origin or env_var} points to {src}, which is not a file. Point it at {name}, or leave it "
                    "out to download the pinned copy."
                )
            shutil.copyfile(src, tmp)
        got = sha256_file(tmp)
        if got != expected_sha256:
            raise DataFetchError(
                f"{source} has sha256 {got}, expected {expected_sha256}: not the pinned {what}. Nothing was written."
            )
    return dest


def fetch_pinned_file(dest: Path, source: str, expected_sha256: str, *, env_var: str, name: str, what: str,
                      force: bool = False, timeout: float = 60.0, origin: str | None = None) -> Path:
    """Any pinned file (a published harness output, say) the same way: copied or downloaded, sha256-checked."""
    return _fetch_pinned(dest, source, expected_sha256, force, timeout, env_var=env_var, name=name, what=what,
                         origin=origin)


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
    origin = "--source" if source else None
    source = source or os.environ.get("LOCOMO_SOURCE") or LOCOMO_URL
    return _fetch_pinned(dest, source, expected_sha256, force, timeout, env_var="LOCOMO_SOURCE",
                         name="locomo10.json", what="LoCoMo release", origin=origin)


def default_audit_path() -> Path:
    return data_dir() / AUDIT_FILE


def default_audit_source() -> str:
    """``LOCOMO_AUDIT_SOURCE``; else a copy beside a local ``LOCOMO_SOURCE``; else the pinned URL."""
    if os.environ.get("LOCOMO_AUDIT_SOURCE"):
        return os.environ["LOCOMO_AUDIT_SOURCE"]
    dataset_source = os.environ.get("LOCOMO_SOURCE")
    if dataset_source and not _is_url(dataset_source):
        beside = Path(dataset_source).expanduser().parent / AUDIT_FILE
        if beside.is_file():
            return str(beside)
    return AUDIT_URL


def kept_note(dest: Path, source: str, expected_sha256: str, origin: str) -> str:
    """What to tell a user whose ``source`` (named by ``origin``: an option or a variable) went unused because
    ``dest`` already held the verified pinned file: the same file, or a source that was not read (and why)."""
    if not _is_url(source):
        src = Path(source).expanduser()
        if src.is_file() and sha256_file(src) == expected_sha256:
            return f"note: {dest} was already there and verified; {origin} ({src}) is the same pinned file, so nothing was copied"
        if not src.is_file():
            return (f"note: {dest} was already there and verified, so {origin} was not read (add --force to copy it "
                    f"again); {src} is not a file, so --force would refuse it")
        return (f"note: {dest} was already there and verified, so {origin} was not used; {src} has sha256 "
                f"{sha256_file(src)}, not the pinned {expected_sha256}, so --force would refuse it")
    return f"note: {dest} was already there and verified, so {origin} was not read (add --force to copy it again)"


def fetch_audit(dest: Path | None = None, source: str | None = None, *, force: bool = False,
                timeout: float = 60.0) -> Path:
    """Place the verified LoCoMo audit (dial481/locomo-audit ``errors.json``) at ``dest``; return its path."""
    dest = Path(dest) if dest else default_audit_path()
    return _fetch_pinned(dest, source or default_audit_source(), AUDIT_SHA256, force, timeout,
                         env_var="LOCOMO_AUDIT_SOURCE", name=AUDIT_FILE, what="LoCoMo audit (errors.json)",
                         origin="--audit-source" if source else None)
