"""What an ingestion reports: one :class:`SessionResult` per session, an :class:`IngestSummary` over them,
and its :class:`~locomo_kit.outcome.Outcome`; the errors that stop the stages after it."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from locomo_kit.ingestion.writes import check_lines, own_writes_lines
from locomo_kit.outcome import Outcome
from locomo_kit.runs.folder import utc_now
from locomo_kit.runs.records import ZERO_OBSERVATIONS
from locomo_kit.scoring.compression import summary_lines

MODES = ("transcript", "turns")


class NotIngested(RuntimeError):
    """Questions were asked of a sample the memory system does not hold."""


class IngestFailed(RuntimeError):
    """Ingestion stopped (a stuck queue, an unreachable Worker) or stored nothing: no result to report."""


@dataclass
class SessionResult:
    sample_id: str
    session: int
    content_session_id: str
    project: str
    mode: str
    status: str  # ok | failed
    observations: int = 0
    seconds: float = 0.0
    error: str | None = None
    worker_url: str = ""
    finished_at: str = field(default_factory=utc_now)
    turns: int | None = None  # transcript mode: the session's turns, and how many survive in its observations
    turns_kept: int | None = None
    fidelity: float | None = None
    lost_turns: list[str] | None = None
    acknowledged: int | None = None  # the writes the system acknowledged, where not ``observations``
    held_after: int | None = None  # what the system held of the conversation after this session (when counted)


@dataclass
class IngestSummary:
    results: list[SessionResult]
    skipped: int  # sessions already done in an earlier run
    aborted: str | None = None  # why ingestion stopped before the last session
    not_attempted: int = 0  # sessions left out because ingestion stopped
    noun: str = "observations"  # what the system stores per session, as the lines name it (its stored_noun)
    compression: dict | None = None  # what the compressor kept (locomo_kit.scoring.compression.measure)
    notes: list[str] = field(default_factory=list)  # worth a line, not a failure
    held_check: dict | None = None  # what the system holds against what it acknowledged (ingestion.writes)
    own_writes: dict | None = None  # sampled writes searched by their own words (ingestion.writes.own_writes)

    @property
    def ingested(self) -> list[SessionResult]:
        return [r for r in self.results if r.status == "ok"]

    @property
    def failed(self) -> list[SessionResult]:
        return [r for r in self.results if r.status == "failed"]

    @property
    def zero_observation_sessions(self) -> list[SessionResult]:
        return [r for r in self.results if r.status == "ok" and r.observations == 0]

    @property
    def kept_nothing(self) -> bool:
        """Every session went through the compressor, whose fidelity was measured, and none stored
        anything: a result about the compressor (answered from the empty memory, reported, exit 1)."""
        return bool(self.results and self.compression and not self.aborted and not self.not_attempted
                    and not self.skipped and not self.ingested
                    and all(r.observations == 0 and ZERO_OBSERVATIONS in (r.error or "") for r in self.failed))

    @property
    def succeeded(self) -> bool:
        """Every session ingested and produced observations, and the system holds what it acknowledged."""
        return not (self.failed or self.zero_observation_sessions or self.aborted or self.not_attempted
                    or self.lost_writes)

    @property
    def lost_writes(self) -> str | None:
        """The LOST WRITES line when the system stores what it is given and holds fewer than it acknowledged."""
        return (self.held_check or {}).get("problem")

    def lines(self) -> list[str]:
        out = [f"sessions ingested: {len(self.ingested)}, failed: {len(self.failed)}, "
               f"already done: {self.skipped}" + (f", not attempted: {self.not_attempted}" if self.not_attempted else "")]
        if self.aborted:
            out.append(f"INGESTION STOPPED: {self.aborted}")
        if self.ingested:
            obs = [r.observations for r in self.ingested]
            secs = [r.seconds for r in self.ingested]
            out.append(f"{self.noun} stored per session: min {min(obs)}, mean {sum(obs) / len(obs):.1f}, max {max(obs)}; "
                       f"seconds per session: mean {sum(secs) / len(secs):.2f}, max {max(secs):.2f}")
        out += summary_lines(self.compression)
        out += check_lines(self.held_check)
        out += own_writes_lines(self.own_writes)
        for r in self.failed:
            out.append(f"FAILED {r.content_session_id}: {r.error}")
        zero = self.zero_observation_sessions
        if zero:
            out.append(f"WARNING: {len(zero)} session(s) produced ZERO {self.noun}: "
                       + ", ".join(r.content_session_id for r in zero)
                       + " (nothing was stored for them: their questions cannot be answered from memory)")
        return out


def ingest_outcome(summary: IngestSummary, total: int | None = None) -> Outcome:
    out = Outcome("ingest", unit="session", total=total, done=len(summary.ingested), skipped=summary.skipped)
    out.add_failures(f"{r.content_session_id}: {r.error}" for r in summary.failed)
    out.stopped = getattr(summary, "aborted", None)
    if lost := getattr(summary, "lost_writes", None):
        out.problems.append(lost)
    zero = summary.zero_observation_sessions
    if zero:
        out.notes.append(f"{len(zero)} session(s) produced ZERO {summary.noun}: "
                         + ", ".join(r.content_session_id for r in zero))
    return out


def print_summary(summary: IngestSummary, file=None) -> None:
    for line in summary.lines():
        print(line, file=file or sys.stdout)
