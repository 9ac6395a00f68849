"""Module-level jobs for :func:`locomo_kit.pipeline.parallel.run_jobs` (a spawned process imports them by name)."""

from __future__ import annotations

import os
from typing import Callable


def report_pid(*, word: str, log: Callable[[str], None]) -> dict:
    log(f"working on {word}")
    return {"pid": os.getpid(), "word": word.upper()}


def fail(*, log: Callable[[str], None]) -> None:
    log("about to fail")
    raise ValueError("this job fails on purpose")


def die(*, code: int, log: Callable[[str], None]) -> None:
    os._exit(code)  # no word back: as a process killed by the kernel


def busy_child(*, seconds: float, log: Callable[[str], None]) -> None:
    """Keep a child process (as a peer's host) busy on the CPU for ``seconds``, then wait for it."""
    import subprocess
    import sys

    code = f"import time\nend = time.process_time() + {seconds}\nwhile time.process_time() < end: pass"
    subprocess.run([sys.executable, "-c", code], check=True)
    log("its child is done")
