"""Stage outcomes: what one stage did, in one line, and the error a failed stage raises.

Every stage (ingest, answer, score, judge, report) ends with an :class:`Outcome`. A command prints
``outcome.line()`` after each stage, and exits non-zero when any outcome is not ``ok``, printing the
first failure's reason and how many more items failed (:meth:`Outcome.error`). A stage that produced
nothing raises :class:`StageFailed` so that no later stage writes something that looks like a result::

    outcome = Outcome("answer", unit="question", total=152)
    outcome.add_failure("AuthenticationError: invalid x-api-key")   # once per failed item
    outcome.done += 1                                                # once per item done now
    print(outcome.line())
    outcome.raise_if_empty()
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

MAX_REASONS = 5  # reasons kept per outcome; the rest are counted


@dataclass
class Outcome:
    stage: str
    unit: str = "item"
    total: int | None = None  # items the stage was asked for (done + skipped + failed + not attempted)
    done: int = 0  # items completed by this call
    skipped: int = 0  # items already completed by an earlier call and reused
    failed: int = 0
    reasons: list[str] = field(default_factory=list)  # the first failures' reasons, in order
    stopped: str | None = None  # why the stage stopped before its last item
    notes: list[str] = field(default_factory=list)  # warnings worth a line (not failures)
    problems: list[str] = field(default_factory=list)  # why what was done is still not a result (lost writes)

    def add_failure(self, reason: str) -> None:
        self.failed += 1
        if len(self.reasons) < MAX_REASONS:
            self.reasons.append(reason)

    def add_failures(self, reasons: Iterable[str]) -> None:
        for reason in reasons:
            self.add_failure(reason)

    @property
    def available(self) -> int:
        """Items this stage's results cover (done now or earlier)."""
        return self.done + self.skipped

    @property
    def not_attempted(self) -> int:
        if self.total is None:
            return 0
        return max(0, self.total - self.done - self.skipped - self.failed)

    @property
    def ok(self) -> bool:
        return not self.failed and not self.stopped and not self.not_attempted and not self.problems

    @property
    def empty(self) -> bool:
        """Nothing to build on: no item is available."""
        return self.available == 0

    def _plural(self, n: int) -> str:
        return f"{n} {self.unit}{'' if n == 1 else 's'}"

    def line(self, reason: bool = True) -> str:
        """``answer INCOMPLETE: 140 questions done, 0 already done, 12 failed; first error: …``
        (``reason`` False: without the first error, when the failures were listed already)."""
        status = "ok" if self.ok else "FAILED" if self.empty else "INCOMPLETE"
        parts = [f"{self._plural(self.done)} done", f"{self.skipped} already done", f"{self.failed} failed"]
        if self.not_attempted:
            parts.append(f"{self.not_attempted} not attempted")
        text = f"{self.stage} {status}: " + ", ".join(parts)
        if not reason:
            return text
        if self.stopped:
            text += f"; stopped: {self.stopped}"
        elif self.reasons:
            text += f"; first error: {self.reasons[0]}"
        elif self.problems:
            text += f"; {self.problems[0]}"
        return text

    def error(self) -> str | None:
        """The one-line reason this stage failed (None when ok)."""
        if self.ok:
            return None
        total = self.total if self.total is not None else self.available + self.failed
        lost = self.failed + self.not_attempted
        if not lost and not self.stopped and self.problems:
            return f"{self.stage}: " + "; ".join(self.problems)
        head = f"{self.stage}: {lost} of {self._plural(total)} not done"
        if self.stopped:
            return f"{head}; stopped: {self.stopped}"
        if not self.reasons:
            return head
        more = lost - 1
        return f"{head}; first error: {self.reasons[0]}" + (f" (and {more} more)" if more > 0 else "")

    def raise_if_empty(self) -> None:
        """Raise :class:`StageFailed` when the stage produced nothing to build on."""
        if self.empty and (self.failed or self.stopped or self.not_attempted or self.total):
            raise StageFailed(self)

    def as_record(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok, "not_attempted": self.not_attempted}


class StageFailed(RuntimeError):
    """A stage produced nothing usable; later stages must not run."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(outcome.error() or f"{outcome.stage}: produced nothing")
        self.outcome = outcome


def first_error(outcomes: Iterable[Outcome]) -> str | None:
    """The error of the first outcome that is not ok, with a count of the other failed stages."""
    failed = [o for o in outcomes if not o.ok]
    if not failed:
        return None
    message = failed[0].error() or ""
    if len(failed) > 1:
        message += f" (and {len(failed) - 1} more stage(s) incomplete: {', '.join(o.stage for o in failed[1:])})"
    return message
