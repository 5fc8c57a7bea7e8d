"""The scan's records: the options it runs with, how each input went, what it found."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from harmony_doctor.choices import ParseRole

if TYPE_CHECKING:  # the scan's own records load where they are made (a clean scan makes none)
    from typing import TypeVar

    import polars as pl

    from harmony_doctor.models import RequestTally, ScanEvent

    _Frame = TypeVar("_Frame", pl.DataFrame, pl.LazyFrame)


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

    def origin_name(self) -> str:
        """`origin`, or this machine's host name where the scan runs."""
        return self.origin or host_name()


def host_name() -> str:
    """This machine's host name: `socket.gethostname()`'s, from platform (loaded already, where
    socket is not: 1 ms of a scan's start)."""
    import platform

    return platform.node()


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
    # failure-window lines and searched texts the Rust line reader and form search declined,
    # read by Python instead (non-ASCII, paste damage, a form Rust matches only loosely; a
    # line may count once for each); 0 without the Rust core
    rust_declined: int = field(default=0, compare=False)


@dataclass(frozen=True)
class EventSpill:
    """Events a scan wrote out as they became final (scan/spill.py), in order: Arrow IPC files
    of scan/summary.py's events frame, each with the server its events without one take (their
    source's, known once it was read to its end), and how many events in all. Only names: it
    crosses processes cheaply; the files are the scan's caller's to remove."""

    files: tuple[tuple[str, str | None], ...]
    count: int

    @staticmethod
    def joined(spills: list[EventSpill]) -> EventSpill:
        return EventSpill(tuple(f for s in spills for f in s.files), sum(s.count for s in spills))

    def lazy(self) -> pl.LazyFrame | None:
        """The events frame, read lazily (None when no file was written)."""
        if not self.files:
            return None
        import polars as pl

        return pl.concat([_with_server(pl.scan_ipc(path), server) for path, server in self.files])

    def batches(self) -> Iterator[pl.DataFrame]:
        """The events frame a file at a time (each holds at most a spill batch of events)."""
        import polars as pl

        for path, server in self.files:
            yield _with_server(pl.read_ipc(path), server)

    def events(self) -> tuple[ScanEvent, ...]:
        """The events as records: as many Python objects as events (for library callers)."""
        lazy = self.lazy()
        if lazy is None:
            return ()
        from harmony_doctor.models import ScanEvent

        frame = lazy.select([f.name for f in fields(ScanEvent)]).collect()
        return tuple(ScanEvent(**row) for row in frame.iter_rows(named=True))


@dataclass(frozen=True)
class FileScan:
    """One input scanned on its own (`scan_file`, `scan_stream`): picklable, so that engines
    (Ray, Dask, a process pool) can send it back to be merged. As frames (scan/summary.py's
    events_frame and requests_frame), events and tallies have a fixed schema."""

    events: tuple[ScanEvent, ...]
    tallies: tuple[RequestTally, ...]
    report: FileReport
    spill: EventSpill | None = None  # events written out by a scan given a spill directory

    # ScanResult's names too, so that a FileScan goes wherever one input's ScanResult went.
    @property
    def held(self) -> tuple[ScanEvent, ...]:
        return self.events

    @property
    def failures(self) -> int:
        return len(self.events) + (self.spill.count if self.spill is not None else 0)

    @property
    def requests(self) -> tuple[RequestTally, ...]:
        return self.tallies

    @property
    def files(self) -> tuple[FileReport, ...]:
        return (self.report,)


@dataclass(frozen=True, eq=False)
class ScanResult:
    """What a scan found: its events (`held` in memory, and those written out to `spill`),
    request tallies and a report per input."""

    held: tuple[ScanEvent, ...]
    requests: tuple[RequestTally, ...]
    files: tuple[FileReport, ...]
    spill: EventSpill | None = None

    @cached_property
    def events(self) -> tuple[ScanEvent, ...]:
        """Every event, in order; those spilled are read back as records on first use (a
        summary reads them as a frame instead: scan/summary.py scan_events_frame)."""
        return self.held + (self.spill.events() if self.spill is not None else ())

    @property
    def failures(self) -> int:
        """How many events, without reading any back."""
        return len(self.held) + (self.spill.count if self.spill is not None else 0)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ScanResult):
            return NotImplemented
        return (self.events, self.requests, self.files) == (
            other.events,
            other.requests,
            other.files,
        )

    def __hash__(self) -> int:
        return hash((self.events, self.requests, self.files))

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


def _with_server(frame: _Frame, server: str | None) -> _Frame:
    """A spill file's events, those without a server given their source's."""
    import polars as pl

    return frame.with_columns(pl.col("server").fill_null(pl.lit(server, dtype=pl.Utf8)))
