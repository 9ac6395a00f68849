"""The SQLite store (one file, WAL): sessions, the durable work queue, memories and their indexes.

All SQL is parameterised. One connection is shared under a lock: SQLite serialises writers anyway,
and at this scale a search takes a few milliseconds. Another backend (PostgreSQL + pgvector)
would implement the same public methods.

Opening a store takes an exclusive lock (``<db>.lock``, holding the owner's pid) so that a second
Worker on the same file is refused, and checks the file (``PRAGMA quick_check``); a file that
cannot be used raises :class:`StoreError` saying what is wrong and what to do. Commits are
``synchronous=FULL``: an acknowledged write is on disk before the Worker answers.
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

import numpy as np

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id INTEGER PRIMARY KEY,
    platform_source TEXT NOT NULL,
    content_session_id TEXT NOT NULL,
    project TEXT NOT NULL,
    prompt TEXT,
    prompt_number INTEGER NOT NULL DEFAULT 1,
    summary TEXT,
    created_at_epoch INTEGER NOT NULL,
    UNIQUE (platform_source, content_session_id)
);
CREATE TABLE IF NOT EXISTS queue (
    id INTEGER PRIMARY KEY,
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    kind TEXT NOT NULL,
    tool_use_id TEXT,
    payload TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    error TEXT,
    created_at_epoch INTEGER NOT NULL,
    processed_at_epoch INTEGER,
    attempts INTEGER NOT NULL DEFAULT 0,
    not_before_epoch INTEGER,
    progress INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS queue_pending ON queue(status, id);
CREATE UNIQUE INDEX IF NOT EXISTS queue_tool_use ON queue(session_id, tool_use_id) WHERE tool_use_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS observations (
    id INTEGER PRIMARY KEY,
    memory_session_id TEXT,
    project TEXT NOT NULL,
    type TEXT NOT NULL,
    title TEXT,
    subtitle TEXT,
    narrative TEXT,
    text TEXT,
    facts TEXT NOT NULL DEFAULT '[]',
    concepts TEXT NOT NULL DEFAULT '[]',
    files_read TEXT NOT NULL DEFAULT '[]',
    files_modified TEXT NOT NULL DEFAULT '[]',
    prompt_number INTEGER,
    created_at TEXT NOT NULL,
    created_at_epoch INTEGER NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    importance REAL NOT NULL DEFAULT 0.5,
    event_epoch INTEGER,
    access_count INTEGER NOT NULL DEFAULT 0,
    last_accessed_epoch INTEGER,
    queue_id INTEGER,
    embedding BLOB
);
CREATE INDEX IF NOT EXISTS obs_project ON observations(project, id);
CREATE VIRTUAL TABLE IF NOT EXISTS obs_fts USING fts5(body, context, tokenize='porter unicode61');
"""

MIGRATIONS = (  # columns added since the first schema: (table, column, definition)
    ("queue", "attempts", "INTEGER NOT NULL DEFAULT 0"),
    ("queue", "not_before_epoch", "INTEGER"),
    ("queue", "progress", "INTEGER NOT NULL DEFAULT 0"),  # memories of a split item already committed
)
_STORAGE_MESSAGES = ("disk is full", "disk i/o error", "readonly", "read-only", "unable to open", "locked",
                     "no space", "out of memory")
_STORAGE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EACCES, errno.EPERM, errno.EFBIG}
log = logging.getLogger("memworker")


class StoreError(Exception):
    """A database memworker cannot use; the message says what is wrong and what to do."""


def is_storage_error(exc: BaseException) -> bool:
    """A failure of the disk or the database file (full, read-only, I/O), not of the work itself."""
    if isinstance(exc, OSError):
        return exc.errno in _STORAGE_ERRNOS and not isinstance(exc, (ConnectionError, TimeoutError))
    return isinstance(exc, sqlite3.OperationalError) and any(m in str(exc).lower() for m in _STORAGE_MESSAGES)


ROW_FIELDS = ("id", "memory_session_id", "project", "type", "title", "subtitle", "narrative", "text",
              "facts", "concepts", "files_read", "files_modified", "prompt_number", "created_at",
              "created_at_epoch", "metadata")


def now_ms() -> int:
    return int(time.time() * 1000)


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


@dataclass
class NewMemory:
    project: str
    memory_session_id: str | None
    type: str
    title: str
    subtitle: str
    narrative: str
    body: str  # indexed text
    context: str  # neighbouring text, indexed with a lower weight
    facts: list[str]
    concepts: list[str]
    metadata: dict[str, Any]
    importance: float
    event_epoch: int | None
    embedding: np.ndarray
    prompt_number: int | None = None


class Store:
    def __init__(self, path: str | Path, check: bool = True) -> None:
        self.path = str(path)
        self._lock_fd: int | None = None
        if self.path != ":memory:":
            self._take_lock()
        try:
            self.conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self.conn.row_factory = sqlite3.Row
            self.lock = threading.RLock()
            self._open(check)
        except sqlite3.Error as exc:
            self._release_lock()
            raise StoreError(self._explain(exc)) from None
        except StoreError:
            self._release_lock()
            raise
        self._vectors: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # project -> (ids, matrix)
        self._vector_buffers: dict[str, tuple[np.ndarray, np.ndarray, int]] = {}  # project -> (ids, rows, used)
        self._speakers: dict[str, set[str]] = {}
        self.versions: dict[str, int] = {}  # project -> count of writes to its memories (search caches)

    def _take_lock(self) -> None:
        lock_path = f"{self.path}.lock"
        try:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise StoreError(self._explain(exc)) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise StoreError(self._explain(exc)) from None
            raise StoreError(
                f"Another memworker (pid {holder}) is already serving {self.path}. Two Workers on one database "
                f"would each de-duplicate on their own and store near-duplicates: stop that one first, or use "
                f"another --db-path.") from None
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        except OSError:
            pass  # a full disk: the lock itself still holds
        self._lock_fd = fd

    def _release_lock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing releases the flock
            self._lock_fd = None

    def _open(self, check: bool) -> None:
        with self.lock:
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=FULL")
            if check and self.path != ":memory:":
                problems = [r[0] for r in self.conn.execute("PRAGMA quick_check(5)").fetchall()]
                if problems != ["ok"]:
                    raise StoreError(
                        f"The database {self.path} is corrupt (PRAGMA quick_check: {'; '.join(problems)[:500]}). "
                        f"Restore it from a backup, or move it aside to start an empty one (`sqlite3 {self.path} "
                        f".recover` may salvage its rows; re-ingesting rebuilds everything from the source data).")
            self.conn.executescript(SCHEMA)
            for table, column, definition in MIGRATIONS:
                have = {r[1] for r in self.conn.execute(f"PRAGMA table_info({table})")}
                if column not in have:
                    self.conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")

    def _explain(self, exc: BaseException) -> str:
        text = str(exc)
        low = text.lower()
        if "not a database" in low:
            return (f"{self.path} is not a memworker database (SQLite: {text}). Point --db-path at another file, "
                    f"or move this one aside.")
        if "malformed" in low or "corrupt" in low:
            return (f"The database {self.path} is corrupt (SQLite: {text}). Restore it from a backup, or move it "
                    f"aside to start an empty one.")
        if "readonly" in low or "read-only" in low or isinstance(exc, PermissionError) or \
                getattr(exc, "errno", None) in (errno.EROFS, errno.EACCES, errno.EPERM) or "unable to open" in low:
            return (f"Cannot write the database {self.path} or its folder ({text}): it or its filesystem is "
                    f"read-only. memworker needs to write there (the database, its -wal file and a .lock file): "
                    f"fix the permissions or choose a writable --db-path.")
        if "disk is full" in low or getattr(exc, "errno", None) == errno.ENOSPC:
            return f"No space left for the database {self.path} ({text}): free space on its disk and start again."
        return f"Cannot open the database {self.path}: {text}"

    def close(self) -> None:
        with self.lock:
            self.conn.close()
        self._release_lock()

    # -- transactions -------------------------------------------------------------------------
    def _tx(self):
        store = self

        class _Tx:
            def __enter__(self):
                store.lock.acquire()
                try:
                    if store.conn.in_transaction:  # left open by a failed rollback
                        store.conn.execute("ROLLBACK")
                    store.conn.execute("BEGIN IMMEDIATE")
                except BaseException:
                    store.lock.release()
                    raise
                return store.conn

            def __exit__(self, exc_type, *rest):
                try:
                    if exc_type is None:
                        store.conn.execute("COMMIT")
                    else:
                        try:
                            store.conn.execute("ROLLBACK")
                        except sqlite3.Error:
                            pass  # the original error is the one to report
                finally:
                    store.lock.release()

        return _Tx()

    # -- sessions and queue -------------------------------------------------------------------
    def init_session(self, platform: str, content_session_id: str, project: str, prompt: str | None) -> tuple[dict, bool]:
        with self._tx() as c:
            row = c.execute("SELECT * FROM sessions WHERE platform_source=? AND content_session_id=?",
                            (platform, content_session_id)).fetchone()
            if row is None:
                cur = c.execute(
                    "INSERT INTO sessions (platform_source, content_session_id, project, prompt, created_at_epoch)"
                    " VALUES (?,?,?,?,?)", (platform, content_session_id, project, prompt, now_ms()))
                row = c.execute("SELECT * FROM sessions WHERE id=?", (cur.lastrowid,)).fetchone()
                return dict(row), True
            if project and row["project"] != project:
                has_obs = c.execute("SELECT 1 FROM queue WHERE session_id=? LIMIT 1", (row["id"],)).fetchone()
                if not has_obs:
                    c.execute("UPDATE sessions SET project=? WHERE id=?", (project, row["id"]))
            c.execute("UPDATE sessions SET prompt_number=prompt_number+1 WHERE id=?", (row["id"],))
            return dict(c.execute("SELECT * FROM sessions WHERE id=?", (row["id"],)).fetchone()), False

    def find_session(self, platform: str, content_session_id: str) -> dict | None:
        with self.lock:
            row = self.conn.execute("SELECT * FROM sessions WHERE platform_source=? AND content_session_id=?",
                                    (platform, content_session_id)).fetchone()
        return dict(row) if row else None

    def enqueue(self, session_id: int, kind: str, payload: dict, tool_use_id: str | None = None) -> tuple[int, str]:
        """Persist a unit of work; it is durable when this returns.

        Returns ``(queue id, state)``: ``queued``; ``requeued`` when the same tool use had failed (it is
        tried again, with this payload); ``duplicate`` when it is already pending or done.
        """
        with self._tx() as c:
            if tool_use_id:
                row = c.execute("SELECT id, status FROM queue WHERE session_id=? AND tool_use_id=?",
                                (session_id, tool_use_id)).fetchone()
                if row is not None:
                    if row["status"] != "failed":
                        return int(row["id"]), "duplicate"
                    c.execute("UPDATE queue SET status='pending', payload=?, attempts=0, error=NULL,"
                              " not_before_epoch=NULL, processed_at_epoch=NULL WHERE id=?",
                              (json.dumps(payload), row["id"]))
                    return int(row["id"]), "requeued"
            cur = c.execute("INSERT INTO queue (session_id, kind, tool_use_id, payload, created_at_epoch)"
                            " VALUES (?,?,?,?,?)", (session_id, kind, tool_use_id, json.dumps(payload), now_ms()))
            return int(cur.lastrowid), "queued"

    def next_pending(self, prefer_fresh: bool = False) -> dict | None:
        """The oldest pending item whose retry time has come (``prefer_fresh``: one not yet started first)."""
        order = "q.progress > 0, q.id" if prefer_fresh else "q.id"
        with self.lock:
            row = self.conn.execute(
                "SELECT q.*, s.project, s.content_session_id, s.prompt_number FROM queue q "
                "JOIN sessions s ON s.id = q.session_id WHERE q.status='pending' "
                f"AND (q.not_before_epoch IS NULL OR q.not_before_epoch <= ?) ORDER BY {order} LIMIT 1",
                (now_ms(),)).fetchone()
        return dict(row) if row else None

    def next_retry_in(self) -> float | None:
        """Seconds until the earliest delayed pending item is due (None: none is delayed)."""
        with self.lock:
            row = self.conn.execute("SELECT MIN(not_before_epoch) FROM queue WHERE status='pending'"
                                    " AND not_before_epoch IS NOT NULL").fetchone()
        return None if row[0] is None else max(0.0, (row[0] - now_ms()) / 1000)

    def queue_depth(self) -> int:
        with self.lock:
            return int(self.conn.execute("SELECT COUNT(*) FROM queue WHERE status='pending'").fetchone()[0])

    def queue_counts(self) -> dict[str, int]:
        with self.lock:
            rows = self.conn.execute("SELECT status, COUNT(*) FROM queue GROUP BY status").fetchall()
            retrying = self.conn.execute("SELECT COUNT(*) FROM queue WHERE status='pending' AND attempts > 0").fetchone()[0]
        return {**{r[0]: r[1] for r in rows}, "retrying": int(retrying)}

    def retry_item(self, queue_id: int, error: str, delay_s: float) -> None:
        """Count a failed attempt; the item stays pending and is tried again after ``delay_s``."""
        with self._tx() as c:
            c.execute("UPDATE queue SET attempts=attempts+1, error=?, not_before_epoch=? WHERE id=?",
                      (error[:2000], now_ms() + int(delay_s * 1000), queue_id))

    def fail_item(self, queue_id: int, error: str) -> None:
        with self._tx() as c:
            c.execute("UPDATE queue SET status='failed', attempts=attempts+1, error=?, processed_at_epoch=?"
                      " WHERE id=?", (error[:2000], now_ms(), queue_id))

    def finish_summary(self, queue_id: int, session_id: int, summary: str) -> None:
        with self._tx() as c:
            c.execute("UPDATE sessions SET summary=? WHERE id=?", (summary, session_id))
            c.execute("UPDATE queue SET status='done', processed_at_epoch=? WHERE id=?", (now_ms(), queue_id))

    # -- memories -----------------------------------------------------------------------------
    def commit_memories(self, queue_id: int | None, memories: list[NewMemory], dedup_threshold: float,
                        progress: int | None = None) -> list[int]:
        """Insert or merge memories and mark the queue item done, in one transaction (with ``progress``:
        record that many of the item's memories as committed instead; the item stays pending).

        A memory whose embedding has cosine ≥ ``dedup_threshold`` with an existing one of the same
        project (or one inserted earlier in this batch) merges into it: reference count +1, source
        turns and facts united. Returns the ids touched.
        """
        try:
            return self._commit(queue_id, memories, dedup_threshold, progress)
        except Exception:
            self._vectors.clear()  # the cache may hold rows the rollback removed
            raise

    def _commit(self, queue_id: int | None, memories: list[NewMemory], dedup_threshold: float,
                progress: int | None = None) -> list[int]:
        touched: list[int] = []
        with self._tx() as c:
            if queue_id is not None:
                done = c.execute("SELECT status FROM queue WHERE id=?", (queue_id,)).fetchone()
                if done is None or done["status"] != "pending":
                    return []
            targets = self._nearest_many(memories, dedup_threshold) if dedup_threshold <= 1 else {}
            for k, mem in enumerate(memories):
                target = targets.get(k)
                if target is None and dedup_threshold <= 1 and k in targets:  # after an insert of this batch
                    target = self._nearest(mem.project, mem.embedding, dedup_threshold, mem.metadata.get("speaker"))
                if target is not None:
                    self._merge(c, target, mem)
                    touched.append(target)
                    continue
                ms = now_ms()
                cur = c.execute(
                    "INSERT INTO observations (memory_session_id, project, type, title, subtitle, narrative, text,"
                    " facts, concepts, prompt_number, created_at, created_at_epoch, metadata, importance,"
                    " event_epoch, queue_id, embedding) VALUES (?,?,?,?,?,?,NULL,?,?,?,?,?,?,?,?,?,?)",
                    (mem.memory_session_id, mem.project, mem.type, mem.title, mem.subtitle, mem.narrative,
                     json.dumps(mem.facts), json.dumps(mem.concepts), mem.prompt_number, iso(ms), ms,
                     json.dumps(mem.metadata), mem.importance, mem.event_epoch, queue_id,
                     mem.embedding.astype(np.float32).tobytes()))
                oid = int(cur.lastrowid)
                c.execute("INSERT INTO obs_fts (rowid, body, context) VALUES (?,?,?)", (oid, mem.body, mem.context))
                self._add_vector(mem.project, oid, mem.embedding)
                self._speakers.pop(mem.project, None)
                touched.append(oid)
            for project in {m.project for m in memories}:
                self._bump(project)  # under the lock: a search never caches rows older than the version
            if queue_id is not None and progress is not None:
                c.execute("UPDATE queue SET progress=? WHERE id=?", (progress, queue_id))
            elif queue_id is not None:
                c.execute("UPDATE queue SET status='done', processed_at_epoch=? WHERE id=?", (now_ms(), queue_id))
        return touched

    def _bump(self, project: str) -> None:
        self.versions[project] = self.versions.get(project, 0) + 1

    def _merge(self, c: sqlite3.Connection, target: int, mem: NewMemory) -> None:
        row = c.execute("SELECT metadata, facts, importance FROM observations WHERE id=?", (target,)).fetchone()
        meta = json.loads(row["metadata"])
        meta["reference_count"] = int(meta.get("reference_count", 1)) + 1
        turns = meta.get("source_turns", [])
        meta["source_turns"] = turns + [t for t in mem.metadata.get("source_turns", []) if t not in turns]
        meta["last_merged_at"] = iso(now_ms())
        if mem.metadata.get("instruction_like"):  # a flag is never lost by merging (memworker.injection)
            meta["instruction_like"] = True
            meta["instruction_signals"] = sorted(set(meta.get("instruction_signals", []))
                                                 | set(mem.metadata.get("instruction_signals", [])))
        facts = json.loads(row["facts"])
        facts += [f for f in mem.facts if f not in facts]
        c.execute("UPDATE observations SET metadata=?, facts=?, importance=? WHERE id=?",
                  (json.dumps(meta), json.dumps(facts), max(row["importance"], mem.importance), target))
        c.execute("UPDATE obs_fts SET context = context || ' ' || ? WHERE rowid=?", (mem.body, target))

    # -- vectors ------------------------------------------------------------------------------
    def _load_vectors(self, project: str) -> tuple[np.ndarray, np.ndarray]:
        if project not in self._vectors:
            rows = self.conn.execute("SELECT id, embedding FROM observations WHERE project=? AND embedding IS NOT NULL"
                                     " ORDER BY id", (project,)).fetchall()
            ids = np.array([r["id"] for r in rows], dtype=np.int64)
            mat = (np.vstack([np.frombuffer(r["embedding"], dtype=np.float32) for r in rows])
                   if rows else np.zeros((0, 0), dtype=np.float32))
            self._vectors[project] = (ids, mat)
        return self._vectors[project]

    def _add_vector(self, project: str, oid: int, vec: np.ndarray) -> None:
        """Append to the project's cached matrix in amortised O(1): rows go into a buffer that doubles
        when full, and the cache holds views of its filled part (one vstack per memory copied the
        whole matrix each time: quadratic in a large item)."""
        ids, mat = self._load_vectors(project)
        vec = vec.astype(np.float32)
        buf = self._vector_buffers.get(project)
        n = len(ids)
        if buf is None or mat.base is not buf[1] or buf[2] != n or buf[1].shape[1] != vec.shape[0]:
            cap = max(64, 2 * n)
            id_buf, mat_buf = np.zeros(cap, dtype=np.int64), np.zeros((cap, vec.shape[0]), dtype=np.float32)
            if n and mat.shape[1] == vec.shape[0]:
                id_buf[:n], mat_buf[:n] = ids, mat
            elif n:  # dimensions changed (another embedder): start the cache again
                self._vectors.pop(project, None)
                return
            buf = (id_buf, mat_buf, n)
        id_buf, mat_buf, n = buf
        if n == len(id_buf):
            id_buf = np.concatenate([id_buf, np.zeros(n, dtype=np.int64)])
            mat_buf = np.vstack([mat_buf, np.zeros_like(mat_buf)])
        id_buf[n], mat_buf[n] = oid, vec
        self._vector_buffers[project] = (id_buf, mat_buf, n + 1)
        self._vectors[project] = (id_buf[:n + 1], mat_buf[:n + 1])

    def _nearest_many(self, memories: list[NewMemory], threshold: float) -> dict[int, int | None]:
        """For each memory (by position), the stored memory it would merge into, from one matrix product
        per project over the memories stored before this batch: ``{k: id}`` for a merge, ``{k: None}``
        where the answer depends on memories this batch inserts before it (those are checked one by
        one), absent where it merges into nothing. Only memories of the same speaker merge: the same
        words said by the other person are another memory."""
        out: dict[int, int | None] = {}
        by_project: dict[str, list[int]] = {}
        for k, mem in enumerate(memories):
            by_project.setdefault(mem.project, []).append(k)
        for project, ks in by_project.items():
            ids, mat = self._load_vectors(project)
            dims = {memories[k].embedding.shape[0] for k in ks}
            if len(dims) != 1 or (mat.size and mat.shape[1] != next(iter(dims))):
                out.update({k: None for k in ks})  # mixed dimensions: one by one
                continue
            speakers = [memories[k].metadata.get("speaker") for k in ks]
            batch = np.vstack([memories[k].embedding.astype(np.float32) for k in ks])
            best_id: list[int | None] = [None] * len(ks)
            best = np.full(len(ks), -np.inf, dtype=np.float32)
            if mat.size:
                sims = batch @ mat.T
                above = sims >= threshold
                of = self._speakers_of(int(ids[c]) for c in np.flatnonzero(above.any(axis=0)))
                for j in range(len(ks)):
                    same = [c for c in np.flatnonzero(above[j]) if of.get(int(ids[c])) == speakers[j]]
                    if same:
                        c = max(same, key=lambda c: sims[j, c])
                        best[j], best_id[j] = sims[j, c], int(ids[c])
            within = batch @ batch.T  # an earlier memory of the batch may be inserted and become a target
            for j, k in enumerate(ks):
                earlier = [float(within[j, i]) for i in range(j) if speakers[i] == speakers[j]]
                if earlier and max(earlier) >= threshold and max(earlier) >= best[j]:
                    out[k] = None
                elif best[j] >= threshold:
                    out[k] = best_id[j]
        return out

    def _nearest(self, project: str, vec: np.ndarray, threshold: float, speaker: str | None = None) -> int | None:
        """The stored memory of ``speaker`` (None: memories without one) nearest ``vec``, if within ``threshold``."""
        ids, mat = self._load_vectors(project)
        if mat.size == 0 or mat.shape[1] != vec.shape[0]:
            return None
        sims = mat @ vec.astype(np.float32)
        above = np.flatnonzero(sims >= threshold)
        of = self._speakers_of(int(ids[c]) for c in above)
        same = [c for c in above if of.get(int(ids[c])) == speaker]
        return int(ids[max(same, key=lambda c: sims[c])]) if same else None

    def _speakers_of(self, ids) -> dict[int, str | None]:
        """Each memory's speaker (None where it has none), read in the writer's transaction."""
        ids, out = list(ids), {}
        for start in range(0, len(ids), 900):  # under SQLite's smallest limit of bound parameters (999)
            part = ids[start:start + 900]
            rows = self.conn.execute(f"SELECT id, json_extract(metadata, '$.speaker') FROM observations WHERE id IN "
                                     f"({','.join('?' * len(part))})", part).fetchall()
            out.update({int(r[0]): r[1] for r in rows})
        return out

    def dense_candidates(self, project: str, vec: np.ndarray, n: int) -> dict[int, float]:
        with self.lock:
            ids, mat = self._load_vectors(project)
        if mat.size == 0 or mat.shape[1] != vec.shape[0]:
            return {}
        sims = mat @ vec.astype(np.float32)
        top = np.argsort(-sims)[:n]
        return {int(ids[i]): float(sims[i]) for i in top}

    def fts_candidates(self, project: str, match: str, n: int, context_weight: float = 0.4) -> dict[int, float]:
        """BM25 scores (higher is better) of the project's best ``n`` FTS matches."""
        if not match:
            return {}
        with self.lock:
            rows = self.conn.execute(
                "SELECT o.id, -bm25(obs_fts, 1.0, ?) AS score FROM obs_fts JOIN observations o ON o.id = obs_fts.rowid"
                " WHERE obs_fts MATCH ? AND o.project = ? ORDER BY bm25(obs_fts, 1.0, ?) LIMIT ?",
                (context_weight, match, project, context_weight, n)).fetchall()
        return {int(r["id"]): float(r["score"]) for r in rows}

    # -- reads --------------------------------------------------------------------------------
    def rows(self, ids: Iterable[int]) -> dict[int, dict]:
        ids = list(ids)
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        with self.lock:
            rows = self.conn.execute(
                f"SELECT {', '.join(ROW_FIELDS)}, importance, event_epoch, access_count, last_accessed_epoch"
                f" FROM observations WHERE id IN ({marks})", ids).fetchall()
        return {r["id"]: dict(r) for r in rows}

    def index_rows(self, project: str) -> tuple[int, list[dict]]:
        """The project's version and every memory with its indexed fields (for the search index)."""
        with self.lock:
            version = self.versions.get(project, 0)
            rows = self.conn.execute(
                "SELECT o.id, o.narrative, o.facts, o.metadata, o.importance, o.event_epoch, o.embedding, f.body, f.context"
                " FROM observations o JOIN obs_fts f ON f.rowid = o.id WHERE o.project = ? ORDER BY o.id",
                (project,)).fetchall()
        return version, [dict(r) for r in rows]

    def list_project(self, project: str | None, offset: int, limit: int) -> tuple[list[dict], bool]:
        sql = f"SELECT {', '.join(ROW_FIELDS)} FROM observations"
        args: list[Any] = []
        if project:
            sql += " WHERE project=?"
            args.append(project)
        sql += " ORDER BY id LIMIT ? OFFSET ?"
        with self.lock:
            rows = self.conn.execute(sql, args + [limit + 1, offset]).fetchall()
        return [dict(r) for r in rows[:limit]], len(rows) > limit

    def project_ids(self, project: str, since: int | None = None, until: int | None = None,
                    obs_type: str | None = None) -> list[int]:
        sql, args = "SELECT id FROM observations WHERE project=?", [project]
        if since is not None:
            sql += " AND created_at_epoch >= ?"
            args.append(since)
        if until is not None:
            sql += " AND created_at_epoch <= ?"
            args.append(until)
        if obs_type:
            sql += " AND type = ?"
            args.append(obs_type)
        with self.lock:
            return [r[0] for r in self.conn.execute(sql + " ORDER BY id", args).fetchall()]

    def latest_event_epoch(self, project: str) -> int | None:
        with self.lock:
            row = self.conn.execute("SELECT MAX(event_epoch) FROM observations WHERE project=?", (project,)).fetchone()
        return row[0]

    def has_transcript_memories(self, project: str) -> bool:
        """Whether the project holds a memory extracted from a transcript (a queue item; not ``memory/save``)."""
        with self.lock:
            row = self.conn.execute(
                "SELECT 1 FROM observations WHERE project = ? AND queue_id IS NOT NULL LIMIT 1", (project,)).fetchone()
        return row is not None

    def transcript_facts(self, project: str, words: list[str], limit: int = 500) -> list[str]:
        """The facts of up to ``limit`` of the project's memories extracted from transcripts whose text or
        neighbouring text holds one of ``words`` (the full-text index's porter-stemmed match)."""
        if not words:
            return []
        match = " OR ".join('{body context} : "%s"' % w.replace('"', '""') for w in words)
        with self.lock:
            rows = self.conn.execute(
                "SELECT o.facts FROM obs_fts f JOIN observations o ON o.id = f.rowid WHERE obs_fts MATCH ?"
                " AND o.project = ? AND o.queue_id IS NOT NULL LIMIT ?", (match, project, limit)).fetchall()
        return [fact for (facts,) in rows for fact in json.loads(facts or "[]") if isinstance(fact, str)]

    def speakers(self, project: str) -> set[str]:
        if project not in self._speakers:
            with self.lock:
                rows = self.conn.execute("SELECT DISTINCT json_extract(metadata, '$.speaker') FROM observations"
                                         " WHERE project=?", (project,)).fetchall()
            self._speakers[project] = {r[0] for r in rows if r[0]}
        return self._speakers[project]

    def touch(self, ids: list[int]) -> None:
        """Count an access; best effort, so that a full disk never fails a read."""
        if not ids:
            return
        try:
            with self._tx() as c:
                c.executemany("UPDATE observations SET access_count=access_count+1, last_accessed_epoch=? WHERE id=?",
                              [(now_ms(), i) for i in ids])
        except sqlite3.Error as exc:
            log.warning("access counts not updated: %s", exc)

    def delete(self, ids: list[int]) -> int:
        if not ids:
            return 0
        marks = ",".join("?" * len(ids))
        with self._tx() as c:
            projects = {r[0] for r in c.execute(f"SELECT DISTINCT project FROM observations WHERE id IN ({marks})", ids)}
            n = c.execute(f"DELETE FROM observations WHERE id IN ({marks})", ids).rowcount
            c.execute(f"DELETE FROM obs_fts WHERE rowid IN ({marks})", ids)
            for p in projects:
                self._vectors.pop(p, None)
                self._bump(p)
        return n

    def delete_project(self, project: str) -> dict[str, int]:
        with self._tx() as c:
            ids = [r[0] for r in c.execute("SELECT id FROM observations WHERE project=?", (project,))]
            marks = ",".join("?" * len(ids))
            if ids:
                c.execute(f"DELETE FROM obs_fts WHERE rowid IN ({marks})", ids)
            n = c.execute("DELETE FROM observations WHERE project=?", (project,)).rowcount
            sessions = [r[0] for r in c.execute("SELECT id FROM sessions WHERE project=?", (project,))]
            if sessions:
                smarks = ",".join("?" * len(sessions))
                c.execute(f"DELETE FROM queue WHERE session_id IN ({smarks})", sessions)
                c.execute(f"DELETE FROM sessions WHERE id IN ({smarks})", sessions)
            self._vectors.pop(project, None)
            self._speakers.pop(project, None)
            self._bump(project)
        return {"observations": n, "sessions": len(sessions)}

    def stats(self) -> dict[str, int]:
        with self.lock:
            obs = self.conn.execute("SELECT COUNT(*) FROM observations").fetchone()[0]
            ses = self.conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
        return {"observations": obs, "sessions": ses}
