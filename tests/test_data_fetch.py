from __future__ import annotations

import functools
import http.server
import socket
import threading
from pathlib import Path

import pytest

from locomo_kit.cli import main
from locomo_kit.data_fetch import LOCOMO_SHA256, DataFetchError, fetch_dataset, sha256_file


@pytest.fixture()
def file_server(dataset_path: Path, tmp_path: Path):
    """A real HTTP server on loopback serving a folder with the dataset and a corrupt copy."""
    root = tmp_path / "www"
    root.mkdir()
    (root / "locomo10.json").write_bytes(dataset_path.read_bytes())
    (root / "corrupt.json").write_bytes(dataset_path.read_bytes()[:-10])
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_copy_from_local_path(dataset_path, tmp_path):
    dest = fetch_dataset(tmp_path / "d" / "locomo10.json", source=str(dataset_path))
    assert sha256_file(dest) == LOCOMO_SHA256
    assert [p.name for p in dest.parent.iterdir()] == ["locomo10.json"]  # no temp files left


def test_download_from_url(file_server, tmp_path):
    dest = fetch_dataset(tmp_path / "locomo10.json", source=f"{file_server}/locomo10.json")
    assert sha256_file(dest) == LOCOMO_SHA256


def test_checksum_mismatch_writes_nothing(file_server, tmp_path):
    dest = tmp_path / "d" / "locomo10.json"
    with pytest.raises(DataFetchError, match="expected 79fa87e9.*Nothing was written"):
        fetch_dataset(dest, source=f"{file_server}/corrupt.json")
    assert list(dest.parent.iterdir()) == []


def test_http_error_suggests_local_copy(file_server, tmp_path):
    with pytest.raises(DataFetchError, match="HTTP 404.*LOCOMO_SOURCE"):
        fetch_dataset(tmp_path / "x.json", source=f"{file_server}/missing.json")


def test_no_network_says_what_to_do(tmp_path):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(DataFetchError, match="Without network, copy the file instead: LOCOMO_SOURCE="):
        fetch_dataset(tmp_path / "x.json", source=f"http://127.0.0.1:{port}/locomo10.json", timeout=5)
    assert list(tmp_path.iterdir()) == []


def test_source_not_a_file(tmp_path):
    with pytest.raises(DataFetchError, match="not a file"):
        fetch_dataset(tmp_path / "x.json", source=str(tmp_path / "missing.json"))


def test_existing_good_file_is_kept_and_bad_one_reported(dataset_path, tmp_path):
    dest = tmp_path / "locomo10.json"
    dest.write_bytes(dataset_path.read_bytes())
    assert fetch_dataset(dest, source="/nonexistent") == dest  # never looked at the source
    dest.write_text("[]")
    with pytest.raises(DataFetchError, match="--force"):
        fetch_dataset(dest, source=str(dataset_path))
    fetch_dataset(dest, source=str(dataset_path), force=True)
    assert sha256_file(dest) == LOCOMO_SHA256


def test_cli_fetch_and_stats(dataset_path, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LOCOMO_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("LOCOMO_SOURCE", str(dataset_path))
    assert main(["data", "fetch"]) == 0
    assert "ok (sha256 79fa87e9" in capsys.readouterr().out
    assert main(["stats", "--sample", "conv-26"]) == 0
    assert '"conversations": 1' in capsys.readouterr().out


def test_fetched_files_follow_the_umask(dataset_path, tmp_path):
    import os
    import stat

    old = os.umask(0o022)
    try:
        dest = fetch_dataset(tmp_path / "locomo10.json", source=str(dataset_path))
    finally:
        os.umask(old)
    assert stat.S_IMODE(dest.stat().st_mode) == 0o644  # not mkstemp's 0600: others may read the data


def test_cli_says_when_a_source_is_not_read(dataset_path, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LOCOMO_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("LOCOMO_SOURCE", str(dataset_path))
    assert main(["data", "fetch"]) == 0
    capsys.readouterr()
    assert main(["data", "fetch", "--source", str(tmp_path / "other.json")]) == 0  # the copy is kept, unread
    out = capsys.readouterr().out
    assert "locomo10.json was already there and verified, so --source was not read (add --force" in out
    assert main(["data", "fetch", "--source", str(tmp_path / "other.json"), "--force"]) == 1
    assert capsys.readouterr().err.startswith("locomo-kit: error: --source points to")


def test_cli_says_what_became_of_locomo_source_when_data_holds_the_verified_file(dataset_path, tmp_path, monkeypatch,
                                                                                capsys):
    monkeypatch.setenv("LOCOMO_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("LOCOMO_SOURCE", str(dataset_path))
    assert main(["data", "fetch"]) == 0
    capsys.readouterr()
    assert main(["data", "fetch"]) == 0  # the same file again: checked, not copied
    assert f"LOCOMO_SOURCE ({dataset_path}) is the same pinned file, so nothing was copied" in capsys.readouterr().out
    other = tmp_path / "other.json"
    other.write_text("[]")
    monkeypatch.setenv("LOCOMO_SOURCE", str(other))
    assert main(["data", "fetch"]) == 0  # the verified copy stays, and the user hears why their file was not used
    out = capsys.readouterr().out
    assert (f"so LOCOMO_SOURCE was not used; {other} has sha256 {sha256_file(other)}, not the pinned {LOCOMO_SHA256}, "
            "so --force would refuse it") in out
    monkeypatch.setenv("LOCOMO_SOURCE", str(tmp_path / "missing.json"))
    assert main(["data", "fetch"]) == 0
    assert f"{tmp_path / 'missing.json'} is not a file, so --force would refuse it" in capsys.readouterr().out
    monkeypatch.setenv("LOCOMO_SOURCE", "http://127.0.0.1:9/locomo10.json")  # a URL is not downloaded to be compared
    assert main(["data", "fetch"]) == 0
    assert "so LOCOMO_SOURCE was not read (add --force to copy it again)\n" in capsys.readouterr().out


def test_no_library_default_looks_for_a_shared_folder_beside_the_checkout():
    """Data and published outputs come from the LOCOMO_* variables or the pinned URLs, never from a folder that only
    the developers' machines have."""
    from locomo_kit.paths import PROJECT_ROOT

    hits = [f"{p.relative_to(PROJECT_ROOT)}:{n}" for p in sorted((PROJECT_ROOT / "locomo_kit").rglob("*.py"))
            for n, line in enumerate(p.read_text().splitlines(), 1)
            if "../shared" in line or '"shared" /' in line or "/ \"shared\"" in line]
    assert hits == []


def test_without_a_published_source_an_entry_is_downloaded_and_its_error_says_what_to_set(tmp_path, monkeypatch):
    from locomo_kit.imported import catalogue

    monkeypatch.delenv("LOCOMO_PUBLISHED_SOURCE", raising=False)
    monkeypatch.setenv("LOCOMO_DATA_DIR", str(tmp_path))
    assert catalogue.local_source() is None
    # the tests reach loopback only, so the download fails as it would offline
    with pytest.raises(DataFetchError, match=r"Cannot download https://raw\.githubusercontent\.com/.*"
                                             r"LOCOMO_PUBLISHED_SOURCE names a folder that holds memu/result\.json"):
        catalogue.fetch_entry("memu")
    assert not (tmp_path / "published" / "memu" / "result.json").exists()


def test_cli_errors_are_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LOCOMO_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("LOCOMO_SOURCE", str(tmp_path / "nothing.json"))
    assert main(["data", "fetch"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("locomo-kit: error: LOCOMO_SOURCE points to") and err.count("\n") == 1
    assert main(["stats"]) == 1
    assert "locomo-kit data fetch" in capsys.readouterr().err


def test_every_command_has_help(capsys):
    from locomo_kit.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, p in sub.choices.items():
        assert p.description, f"{name} has no description"
