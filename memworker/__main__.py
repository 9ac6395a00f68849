"""``python -m memworker``: serve the reference Worker (options override MEMWORKER_* variables).

Startup refuses, with a message and exit code 2, what would be unsafe or cannot work: a
non-loopback bind without a token (unless ``--allow-unauthenticated``), a database another
Worker is serving, a corrupted, foreign or read-only database file.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time
from dataclasses import fields
from typing import Sequence

# One BLAS thread (before numpy loads): a search's matrix products are small, and OpenBLAS's spinning
# threads on a busy machine cost them more than they gain (a user's own setting wins).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from memworker.config import Settings


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memworker",
        description="Reference memory Worker speaking the claude-mem Worker API. Every option can also be "
        "set as MEMWORKER_<OPTION> (e.g. MEMWORKER_PORT=37777). The bearer token is read from MEMWORKER_TOKEN "
        "only (never a command-line option, which other users can see).",
    )
    defaults, described = Settings(), Settings.descriptions()
    for f in fields(Settings):
        if f.name in ("token", "llm_api_key"):
            continue
        default = getattr(defaults, f.name)
        what = described.get(f.name, "").replace("%", "%%")
        parser.add_argument(f"--{f.name.replace('_', '-')}", type=type(default), default=None,
                            help=f"{what} (default: {default!r})" if what else f"default: {default!r}")
    parser.add_argument("--allow-unauthenticated", action="store_true",
                        help="serve a non-loopback address without a token (anyone who can reach it can read, "
                        "write and delete memories)")
    parser.add_argument("--log-level", default="warning", help="uvicorn log level (default: warning)")
    return parser


def _refuse(message: str) -> int:
    print(f"memworker: error: {message}", file=sys.stderr, flush=True)
    return 2


def watch_parent(parent_pid: int, interval: float = 0.2) -> None:
    """Stop this Worker (SIGTERM to itself: a graceful shutdown) once ``parent_pid`` is gone."""
    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(interval)
        logging.getLogger("memworker").warning("parent process %d is gone: shutting down", parent_pid)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(20)
        os._exit(1)  # the graceful shutdown did not finish

    threading.Thread(target=watch, name="memworker-parent-watch", daemon=True).start()


def main(argv: Sequence[str] | None = None) -> int:
    import uvicorn

    from memworker.app import create_app, is_loopback
    from memworker.httpserver import TimedHttpToolsProtocol
    from memworker.store import StoreError

    args = build_parser().parse_args(argv)
    overrides = {f.name: getattr(args, f.name, None) for f in fields(Settings)}
    try:
        settings = Settings.from_env(**overrides)
    except ValueError as exc:
        return _refuse(str(exc))
    logging.basicConfig(level=args.log_level.upper())
    if settings.parent_pid:
        if os.getppid() != settings.parent_pid:
            return _refuse(f"parent process {settings.parent_pid} is already gone")
        watch_parent(settings.parent_pid)
    if not is_loopback(settings.host) and not settings.token and not args.allow_unauthenticated:
        return _refuse(
            f"refusing to serve {settings.host} without a token: anyone who can reach it could read, write and "
            f"delete every memory. Set MEMWORKER_TOKEN (clients send 'Authorization: Bearer <token>'), bind "
            f"127.0.0.1, or pass --allow-unauthenticated on a network you trust.")
    try:
        app = create_app(settings)
    except StoreError as exc:
        return _refuse(str(exc))
    n = max(1, settings.embed_threads)
    threads = f" on {n} thread{'s' if n > 1 else ''}" if settings.embedder == "minilm" else ""
    print(f"memworker on http://{settings.host}:{settings.port} db={settings.db_path} "
          f"embedder={settings.embedder}{threads} extractor={settings.extractor}", flush=True)
    TimedHttpToolsProtocol.request_timeout = settings.header_timeout
    uvicorn.run(app, host=settings.host, port=settings.port, log_level=args.log_level, http=TimedHttpToolsProtocol,
                timeout_graceful_shutdown=5)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
