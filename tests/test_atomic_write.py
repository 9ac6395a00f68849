"""The one atomic write (locomo_kit.paths.write_atomic / replacing): a reader sees the old file or the new one,
never half of one; a failed write leaves the old file and no temporary file; every kit module writes through it."""

from __future__ import annotations

import os
import re
import stat
import threading
from pathlib import Path

import pytest

from locomo_kit.paths import replacing, write_atomic

ROOT = Path(__file__).resolve().parent.parent
# run inside a peer system's own environment with the standard library only: they cannot import the kit
STDLIB_ONLY = {"locomo_kit/systems/hosts/mempalace_host.py"}


def test_text_bytes_and_lines_replace_the_file_whole(tmp_path):
    path = tmp_path / "sub" / "f.json"
    assert write_atomic(path, "first") == path and path.read_text() == "first"  # its folder made
    write_atomic(path, b"\x00bytes")
    assert path.read_bytes() == b"\x00bytes"
    write_atomic(path, (f"{i}\n" for i in range(3)), fsync=True)
    assert path.read_text() == "0\n1\n2\n"
    write_atomic(path, "é ✓")
    assert path.read_text(encoding="utf-8") == "é ✓"
    assert sorted(p.name for p in path.parent.iterdir()) == ["f.json"]  # no temporary file left


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(tmp_path):
    path = tmp_path / "records.jsonl"
    path.write_text("old\n")

    def lines():
        yield "new 1\n"
        raise RuntimeError("the writer failed half way")

    with pytest.raises(RuntimeError, match="half way"):
        write_atomic(path, lines())
    assert path.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["records.jsonl"]
    with pytest.raises(ValueError):
        with replacing(path) as tmp:
            tmp.write_text("never seen")
            raise ValueError("checksum mismatch")
    assert path.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["records.jsonl"]


def test_the_file_gets_the_usual_permissions_not_the_temporary_files(tmp_path):
    """mkstemp makes 0600 files; the written file is readable as any file the process makes (umask applies)."""
    old = os.umask(0o022)
    try:
        path = write_atomic(tmp_path / "data.json", "{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_a_reader_never_sees_half_a_file(tmp_path):
    path = tmp_path / "page.html"
    big = ["a" * 200_000, "b" * 200_000]
    write_atomic(path, big[0])
    seen: set[str] = set()
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            text = path.read_text()
            seen.add(text[:1] + str(len(text)))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for i in range(60):
            write_atomic(path, big[i % 2])
    finally:
        stop.set()
        reader.join()
    assert seen <= {"a200000", "b200000"}, seen


def test_no_module_replaces_a_file_by_hand():
    """Every temporary-file-then-replace in the kit goes through locomo_kit.paths (the host scripts that run with
    the standard library only in a peer's environment excepted)."""
    hand_written = []
    for path in sorted((ROOT / "locomo_kit").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "locomo_kit/paths.py" or rel in STDLIB_ONLY:
            continue
        text = path.read_text(encoding="utf-8")
        for pattern in (r"os\.replace\(", r"\btmp\.replace\(", r"mkstemp\(", r"\.(tmp|part)\""):
            hand_written += [f"{rel}: {m.group(0)}" for m in re.finditer(pattern, text)]
    assert hand_written == []
