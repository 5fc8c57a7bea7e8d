"""The records a scan keeps per failure and per hour of requests: built on first use, through
harmony_doctor.models (`explain` needs none of them)."""

from __future__ import annotations

from dataclasses import dataclass

from harmony_doctor.models.core import EventSource, Kind, LogError, Server, Severity


@dataclass(frozen=True, slots=True)
class LoggedFailure:
    """What a scan keeps of a LogError until the source's events are built (scan/findings.py):
    the fields an event takes, without the evidence, explanation and advice `explain` shows
    (several hundred bytes per failure that no event carries)."""

    line: int
    timestamp: str | None
    pid: int | None
    server: Server | None
    harmony_version: str | None
    kind: Kind
    code: str
    severity: Severity
    token: int | None
    header_remainder: str | None
    message: str
    traceback_line: int | None = None  # as ScanEvent.traceback_line
    role_word: str | None = None  # as LogError.role_word
    message_cut: int = 0  # as LogError.message_cut

    @classmethod
    def of(cls, error: LogError, line: int) -> LoggedFailure:
        """`error`'s event fields, at `line` (the line of the input as given)."""
        start = error.span[0]  # the traceback's head, when the error line is its raise
        return cls(
            line,
            error.timestamp,
            error.pid,
            error.server,
            error.harmony_version,
            error.kind,
            error.code,
            error.severity,
            error.token,
            error.header_remainder,
            error.message,
            line - (error.line - start) if start < error.line else None,
            error.role_word,
            error.message_cut,
        )


@dataclass(frozen=True, slots=True)  # no per-instance dict: scan keeps one per failure
class ScanEvent:
    """One failure found while scanning: a logged error, or a fault in a replayed completion."""

    file: str
    line: int
    timestamp: str | None  # ISO 8601, year inferred when the log omits it
    pid: int | None
    server: str | None
    harmony_version: str | None
    kind: str
    code: str
    severity: Severity
    pattern: str
    token_id: int | None
    token_text: str | None
    header_remainder: str | None
    message: str
    request_id: str | None = None
    origin_index: int | None = None
    raise_index: int | None = None
    source: EventSource = "log"
    origin: str | None = None  # the host (or name given with --origin) the log was scanned on
    # Where the traceback begins whose raise (its exception line) this logged error is; None
    # for a line outside any traceback (a logged summary, an echo) and for a replay. What tells
    # a summary and its traceback's raise (one failure) from two summaries (two requests).
    traceback_line: int | None = None


@dataclass(frozen=True, slots=True)
class RequestTally:
    """Requests seen in the logs for one (origin, file, pid, server, hour, kind) cell."""

    file: str
    pid: int | None
    server: str | None
    hour: str | None  # ISO hour `2026-11-28T10`, None when no timestamp is known
    count: int
    origin: str | None = None  # as ScanEvent.origin
    # What was counted: "access" lines, "received" (`Received request`) lines or logged
    # "completions"; a summary counts each process one way (scan/summary.py counted_tallies).
    kind: str | None = None
