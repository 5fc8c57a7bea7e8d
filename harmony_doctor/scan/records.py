"""The scan's records: the options it runs with, how each input went, what it found."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from harmony_doctor.choices import ParseRole
from harmony_doctor.models import RequestTally, ScanEvent


@dataclass(frozen=True)
class ScanOptions:
    replay: bool = True  # replay completions the log carries as token ids
    role: ParseRole = "assistant"
    redact: bool = False
    jobs: int = 1  # worker processes; whole files are shared out (results never depend on it)
    vocab_path: Path | None = None
    verify_clean: bool = False  # also run openai-harmony on streams the replay finds clean
    # Written on every event and tally (`--origin`); None: this machine's host name, taken
    # where the scan runs (a Ray or Dask worker names its own host).
    origin: str | None = None


# ignored: not a log (a file scan itself wrote); neither counted nor an error
FileStatus = Literal["ok", "partial", "skipped", "ignored"]


@dataclass(frozen=True)
class FileReport:
    """How one input went: read whole, read until damage, or not read at all."""

    path: str
    status: FileStatus
    reason: str | None
    bytes: int
    lines: int
    failures: int
    cut_lines: int = 0  # lines longer than inputs/files.MAX_LINE, read to that length only
    # wrapped lines read one by one in Python (inputs/wrappers.py), the rest in Rust: how much
    # of a wrapped log took the slow path (the benchmark fails a shape on it); how the file was
    # read, not what it holds, so reports compare without it
    python_lines: int = field(default=0, compare=False)


@dataclass(frozen=True)
class FileScan:
    """One input scanned on its own (`scan_file`, `scan_stream`): picklable, so that engines
    (Ray, Dask, a process pool) can send it back to be merged. As frames (scan/summary.py's
    events_frame and requests_frame), events and tallies have a fixed schema."""

    events: tuple[ScanEvent, ...]
    tallies: tuple[RequestTally, ...]
    report: FileReport

    # ScanResult's names too, so that a FileScan goes wherever one input's ScanResult went.
    @property
    def requests(self) -> tuple[RequestTally, ...]:
        return self.tallies

    @property
    def files(self) -> tuple[FileReport, ...]:
        return (self.report,)


@dataclass(frozen=True)
class ScanResult:
    events: tuple[ScanEvent, ...]
    requests: tuple[RequestTally, ...]
    files: tuple[FileReport, ...]

    @property
    def lines(self) -> int:
        return sum(f.lines for f in self.files)

    @property
    def bytes(self) -> int:
        return sum(f.bytes for f in self.files)

    @property
    def skipped(self) -> tuple[FileReport, ...]:
        return tuple(f for f in self.files if f.status not in ("ok", "ignored"))

    @property
    def nothing_read(self) -> bool:
        """No line of any input was read: none was given or found, every one was skipped, or
        each was empty. Such a scan says nothing, and must not pass as clean."""
        return not any(f.status in ("ok", "partial") and f.lines > 0 for f in self.files)
