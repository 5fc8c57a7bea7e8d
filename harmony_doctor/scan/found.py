"""What reading one source yields, before diagnosis: where each sighting was (Place), the
source's errors, completions and request counts (SourceScan), and its clock."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, NamedTuple

from harmony_doctor.inputs.timestamps import parse_timestamp
from harmony_doctor.models import Server, TokenInput
from harmony_doctor.scan.core import TallyKey

if TYPE_CHECKING:  # built where a failure or a replay is met (a clean scan meets none)
    from harmony_doctor.models import LoggedFailure, ScanEvent


class Place(NamedTuple):
    """Where something was found: the line of the file as given, its time and process (a
    NamedTuple: one is made per sighting)."""

    line: int
    timestamp: datetime | None
    pid: int | None


@dataclass
class SourceScan:
    """Everything one source yields: errors, finished requests, and request counts."""

    label: str
    reference: datetime
    errors: list[tuple[LoggedFailure, Place]] = field(default_factory=list)
    completions: list[tuple[TokenInput, Place]] = field(default_factory=list)
    # what diagnosing the kept completions found, when the scan diagnosed each as it was kept
    # (scan_source's `diagnose`: its ids are then not held to the end); `file` and `server`
    # are set when the source is read (source_events)
    replayed: list[ScanEvent] = field(default_factory=list)
    # logged completions whose ids openai-harmony rejects: (why, request id, where)
    rejected: list[tuple[str, str | None, Place]] = field(default_factory=list)
    # (pid, ISO hour) -> requests, from access lines or, where a log has none, request lines
    requests: Counter[tuple[int | None, str | None]] = field(default_factory=Counter)
    received: Counter[tuple[int | None, str | None]] = field(default_factory=Counter)
    access_lines: int = 0
    received_lines: int = 0
    lines: int = 0  # lines read
    # of `lines`, the last ones read from data that did not pass its check (a gzip member's
    # CRC-32, or a member cut short): read (their failures are kept), not the file's lines
    unchecked_lines: int = 0
    # failures on a line damaged data cut short: not diagnosed (its words are cut: an
    # `Unexpected token` without its id reads as another code), counted and said
    cut_failures: int = 0
    cut_lines: int = 0
    # bytes in runs of NULs (a sparse file's holes, blocks a crash never wrote, a copytruncate's
    # head): zeroed data, no text, so the file was not read as a log whole
    zeroed: int = 0
    latin1_lines: int = 0  # lines that were not UTF-8, read as latin-1 (said, not a damage)
    # why part of the data was not text in its encoding (binary data, UTF-16 inside UTF-8...,
    # inputs/not_text.py): read, but not as the text it held, so the file was not read whole
    not_text: str | None = None
    # wrapped lines the Unwrapper read one by one in Python: how the source was read (it
    # depends on where chunks end), not what it holds, so reports compare without it
    python_lines: int = field(default=0, compare=False)
    declined: int = field(default=0, compare=False)  # window lines Rust declined (FileReport)
    server: Server | None = None
    damage: str | None = None  # why the stream stopped early (damaged compressed data)
    bytes: int = 0
    # (pid, ISO hour) -> completions the log carried (a request count where lines lack)
    completed: Counter[tuple[int | None, str | None]] = field(default_factory=Counter)
    # The parts of a stream read as one (rotated files), in order, with what each held; empty
    # for a single source. Lines of `errors`, `completions` and `rejected` run over all parts.
    parts: list[SourceScan] = field(default_factory=list)
    # Where each part begins: the lines before it (0 for the first), known once the part before
    # it is read (`parts` are known at the end only).
    starts: list[int] = field(default_factory=lambda: [0])


class Mark(NamedTuple):
    """How far a stream read as parts had got when one part ended (totals so far)."""

    lines: int
    bytes: int
    cut_lines: int
    python_lines: int
    access_lines: int
    received_lines: int
    tallies: dict[TallyKey, int]
    completed: Counter[tuple[int | None, str | None]]
    declined: int = 0


class Clock:
    """Log stamps as times, dated from the source's reference time; parsed once each."""

    def __init__(self, reference: datetime) -> None:
        self.reference = reference
        self._parsed: dict[bytes, datetime | None] = {}
        self._hours: dict[bytes, str | None] = {}

    def parse(self, stamp: bytes | None) -> datetime | None:
        if stamp is None:
            return None
        if stamp not in self._parsed:
            if len(self._parsed) > 4096:
                self._parsed.clear()
            self._parsed[stamp] = parse_timestamp(stamp.decode("ascii", "replace"), self.reference)
        return self._parsed[stamp]

    def hour(self, key: bytes | None) -> str | None:
        """The ISO hour (`2026-11-28T10`) of a core hour key (b"2026-11-28 10" or b"11-28 10")."""
        if key is None:
            return None
        if key not in self._hours:
            stamp = self.parse(key + b":00:00")
            self._hours[key] = stamp.strftime("%Y-%m-%dT%H") if stamp is not None else None
        return self._hours[key]
