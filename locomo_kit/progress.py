"""Progress of a paid or local stage, shown from its first call: a tqdm bar on a terminal, else
lines on stderr (a log, CI, a notebook's captured output), each with the count, the rate and the
time left.

``stage_progress(total, desc, unit, progress)``: ``progress`` True/False forces it on/off; None
(the default) shows a bar on a terminal and lines elsewhere. Lines come at the first result, then
at most every ``LINE_INTERVAL`` seconds, and at the end.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Callable, TextIO

from tqdm.auto import tqdm

LINE_INTERVAL = 10.0


def tqdm_disable(progress: bool | None = None) -> bool | None:
    """tqdm's ``disable`` for a stage's bar: ``progress`` True/False forces the bar on/off; None: off in CI,
    else tqdm's own choice (off when not on a terminal)."""
    if progress is not None:
        return not progress
    return True if os.environ.get("CI") else None


def format_duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s" if m else f"{s}s"


def rate_text(done: int, elapsed: float, unit: str) -> str:
    if not done or elapsed <= 0:
        return f"?/{unit}"
    per_second = done / elapsed
    return f"{per_second:.2f} {unit}/s" if per_second >= 1 else f"{elapsed / done:.1f} s/{unit}"


class LineProgress:
    """tqdm's ``update``/``close``/``set_postfix_str`` as occasional lines."""

    def __init__(self, total: int, desc: str, unit: str, out: TextIO | None = None,
                 interval: float = LINE_INTERVAL, clock: Callable[[], float] = time.monotonic) -> None:
        self.total, self.desc, self.unit, self.interval = total, desc, unit, interval
        self.n, self._clock, self._out = 0, clock, out
        self.start = self._last = clock()
        self.postfix = ""
        self._closed = False

    def line(self) -> str:
        elapsed = self._clock() - self.start
        pct = f" ({100 * self.n / self.total:.0f}%)" if self.total else ""
        left = ""
        if self.n and self.total and self.n < self.total:
            left = f", ETA {format_duration(elapsed / self.n * (self.total - self.n))}"
        extra = f", {self.postfix}" if self.postfix else ""
        return (f"{self.desc}: {self.n}/{self.total} {self.unit}s{pct} in {format_duration(elapsed)}, "
                f"{rate_text(self.n, elapsed, self.unit)}{left}{extra}")

    def _print(self) -> None:
        print(self.line(), file=self._out or sys.stderr, flush=True)
        self._last = self._clock()

    def update(self, n: int = 1) -> None:
        first = self.n == 0
        self.n += n
        if first or self.n >= self.total or self._clock() - self._last >= self.interval:
            self._print()

    def set_postfix_str(self, text: str, refresh: bool = True) -> None:
        self.postfix = text

    def close(self) -> None:
        if not self._closed and self.n and self.n < self.total:
            self._print()  # where it stopped
        self._closed = True


class _Off:
    n = 0

    def update(self, n: int = 1) -> None:
        self.n += n

    def set_postfix_str(self, text: str, refresh: bool = True) -> None:
        pass

    def close(self) -> None:
        pass


def stage_progress(total: int, desc: str, unit: str = "call", progress: bool | None = None):
    """A progress display for ``total`` items (see the module docstring)."""

    if progress is False:
        return _Off()
    if progress is None and not sys.stderr.isatty():
        return LineProgress(total, desc, unit)
    return tqdm(total=total, desc=desc, unit=unit, disable=False if progress else None)
