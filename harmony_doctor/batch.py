"""The library face of `scan` and `report`: inputs listed as scan lists them, a scan that says
how far it has got, and the one summary both commands print (the grouped table, the totals line,
failures per day), built the same way from a scan and from event files read back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harmony_doctor.inputs.files import Skipped, Source
from harmony_doctor.scan.records import FileReport, FileScan, ScanOptions, ScanResult
from harmony_doctor.scan.summary import file_size

if TYPE_CHECKING:
    import polars as pl

    from harmony_doctor.scan.run import UnitResult


@dataclass(frozen=True)
class InputListing:
    """The inputs a scan reads, listed as `scan` lists them (folders walked, URLs, prefixes and
    globs expanded), and those that could not be listed, with why."""

    sources: tuple[Source, ...]
    skipped: tuple[Skipped, ...]

    @property
    def bytes(self) -> int:
        """Bytes on disk of the files listed (standard input and URLs count 0)."""
        return sum(file_size(s.path) for s in self.sources)


def list_inputs(
    paths: Sequence[str | Path], globs: Sequence[str] = (), excludes: Sequence[str] = ()
) -> InputListing:
    """Files and folders (recursive), `-` for standard input, URLs (the remote extra) as `scan`
    lists them; `globs` keep matching names inside folders, `excludes` drop names or paths."""
    from harmony_doctor.inputs.files import discover

    sources, skipped = discover([str(p) for p in paths], globs, excludes)
    return InputListing(tuple(sources), tuple(skipped))


@dataclass(frozen=True)
class ScanProgress:
    """One input done, as a running scan reports it."""

    label: str
    bytes: int  # its bytes on disk (0 when it could not be opened, for stdin and URLs)
    failures: int  # the failures found in it


def scan_inputs(
    listing: InputListing,
    options: ScanOptions | None = None,
    progress: Callable[[ScanProgress], None] | None = None,
) -> ScanResult:
    """Scan what `list_inputs` listed (over `options.jobs` processes); `progress`, if given, is
    called in this process as each input is done. What could not be read is reported."""
    from harmony_doctor.scan.run import scan

    def done(unit: UnitResult) -> None:
        assert progress is not None
        source = unit.unit.source
        read = file_size(source.path) if unit.found is not None else 0
        progress(ScanProgress(source.label, read, len(unit.events)))

    chosen = options or ScanOptions()
    told = done if progress is not None else None
    return scan(listing.sources, chosen, listing.skipped, progress=told)


@dataclass(frozen=True)
class Summary:
    """What `scan` and `report` print: the grouped table, the totals line (a JSON contract:
    files, bytes, lines, requests, failures, rate, skipped, partial, rate_note), failures per
    day, the inputs, and the events and request tallies behind them (`frames`' schema)."""

    keys: tuple[str, ...]
    table: pl.DataFrame
    totals: dict[str, Any]
    days: tuple[tuple[str, int], ...]
    files: tuple[FileReport, ...]
    events: pl.DataFrame
    requests: pl.DataFrame


def summary_of(
    files: Sequence[FileReport],
    events: pl.DataFrame,
    requests: pl.DataFrame,
    keys: tuple[str, ...],
) -> Summary:
    """The one way a summary is made, from a scan's frames or event files read back: the table
    and the totals by scan/summary.py's rule (a rate counts only failures from files whose
    requests were counted), the days from the events' `day` column."""
    from harmony_doctor.scan.summary import frame_totals, summarize_frames

    table = summarize_frames(events, requests, keys)
    totals = frame_totals(files, events, requests)
    return Summary(keys, table, totals, failures_per_day(events), tuple(files), events, requests)


def failures_per_day(events: pl.DataFrame) -> tuple[tuple[str, int], ...]:
    """(day, failures) in date order; events without a time count in no day."""
    days = events["day"].drop_nulls().value_counts().sort("day")
    return tuple((str(day), int(count)) for day, count in days.rows())


def summarize_scan(result: ScanResult | FileScan, by: Sequence[str] = ("code",)) -> Summary:
    """The summary `scan` prints for a scan (or a merge of FileScans), grouped `by`."""
    from harmony_doctor.scan.summary import events_frame, group_keys, requests_frame

    events, requests = events_frame(result.events), requests_frame(result.requests)
    return summary_of(result.files, events, requests, group_keys(by))
