"""Durability on power loss: an acknowledged write is on disk before the answer.

memworker's acknowledging commit (an observation answered ``queued``) must fsync the database's
write-ahead log (``synchronous=FULL``); with WAL and ``synchronous=NORMAL`` a commit is only
written to the OS cache, and 50 acknowledged observations made no fsync at all. The kit's
manifest is replaced by writing a temporary file, fsyncing it, renaming it and fsyncing the
folder; its records are fsynced after each append. Counted with strace attached to this process
(``tests/support/faults.py: SyncTrace``); skipped, saying so, where strace is missing.
"""

from __future__ import annotations

import re
from pathlib import Path

from support.faults import SyncTrace
from support.helpers import TRANSCRIPT, memworker_app

N = 8


def _ack_syncs(tmp_path: Path, synchronous: str | None) -> list[list[str]]:
    """The files fsynced while each of N observations was acknowledged (queue paused: every sync is
    the acknowledging request's)."""
    with memworker_app(tmp_path) as api:
        store = api.app.state.service.store
        store.next_pending = lambda **_: None  # the queue thread takes nothing during the count
        if synchronous:
            store.conn.execute(f"PRAGMA synchronous={synchronous}")
        api.post("/api/sessions/init", json={"contentSessionId": "s", "project": "p"})
        with SyncTrace(tmp_path) as trace:
            for k in range(N):
                r = api.post("/api/sessions/observations", json={"contentSessionId": "s", "tool_name": "Read",
                                                                "tool_response": TRANSCRIPT, "tool_use_id": f"u{k}"})
                assert r.json()["status"] == "queued"
                trace.mark()  # after the answer
        return trace.intervals()


def test_every_acknowledged_observation_is_fsynced_before_its_answer(tmp_path):
    wal = str(tmp_path / "full" / "mw.db-wal")
    (tmp_path / "full").mkdir()
    per_ack = _ack_syncs(tmp_path / "full", None)
    assert len(per_ack) == N
    assert all(wal in synced for synced in per_ack), per_ack


def test_with_synchronous_normal_the_same_acknowledgements_are_not_fsynced(tmp_path):
    """The setting memworker once had (and what this suite would catch): no fsync for N acknowledgements."""
    (tmp_path / "normal").mkdir()
    per_ack = _ack_syncs(tmp_path / "normal", "NORMAL")
    assert len(per_ack) == N
    assert not any(str(tmp_path / "normal" / "mw.db") in f for synced in per_ack for f in synced), per_ack


def test_the_kit_fsyncs_its_manifest_replacement_and_each_record(tmp_path):
    from locomo_kit.runs import RunFolder

    run = RunFolder("r1", root=tmp_path).create()
    with SyncTrace(tmp_path) as trace:
        run.update_manifest(stage={"ingest": "started"})
        trace.mark()
        run.append("ingest.jsonl", {"session": 1})
        trace.mark()
    folder = str(tmp_path / "r1")
    manifest, record = ([f for f in synced if f.startswith(folder)] for synced in trace.intervals())
    # the new file's data (a temporary file beside it, locomo_kit.paths.write_atomic), then the rename
    assert len(manifest) == 2 and re.fullmatch(re.escape(folder) + r"/\.manifest\.json\.\w+\.tmp", manifest[0])
    assert manifest[1] == folder
    assert record == [f"{folder}/ingest.jsonl"]
    assert (tmp_path / "r1" / "manifest.json").is_file() and not list((tmp_path / "r1").glob("*.tmp"))
