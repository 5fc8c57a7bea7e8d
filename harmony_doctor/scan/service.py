"""The library face of `scan` and `report`: inputs listed as scan lists them, a scan that says
how far it has got, and the one summary both commands print (the grouped table, the totals line,
failures per day), built the same way from a scan and from event files read back.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harmony_doctor.inputs.files import Skipped, Source
from harmony_doctor.scan.records import EventSpill, FileReport, FileScan, ScanOptions, ScanResult
from harmony_doctor.scan.summary import file_size

if TYPE_CHECKING:
    import polars as pl

    from harmony_doctor.scan.hour_rates import HourlyRates
    from harmony_doctor.scan.run import UnitResult
    from harmony_doctor.scan.scopes import Scoped
    from harmony_doctor.scan.summary import OriginRate


@dataclass(frozen=True)
class InputListing:
    """The inputs a scan reads, listed as `scan` lists them (folders walked, URLs, prefixes and
    globs expanded), and those that could not be listed, with why."""

    sources: tuple[Source, ...]
    skipped: tuple[Skipped, ...]

    @property
    def streams(self) -> tuple[tuple[str, ...], ...]:
        """The labels grouped as `scan` reads them: the rotated parts of one log together,
        oldest first (read as one stream: `scan_rotated`), anything else on its own."""
        from harmony_doctor.scan.run import rotated

        return tuple(tuple(s.label for s in group) for group in rotated(self.sources))

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
    spill: Path | None = None,
) -> ScanResult:
    """Scan what `list_inputs` listed (over `options.jobs` processes); `progress`, if given, is
    called in this process as each input is done. What could not be read is reported. With a
    `spill` directory (the caller's, which it removes when done with the result), events are
    written there as they become final, so that memory does not grow with them: the summary
    reads them back as a frame, `events` as records."""
    from harmony_doctor.scan.run import scan

    told = None if progress is None else lambda unit: progress(_progress_of(unit))
    return scan(listing.sources, options or ScanOptions(), listing.skipped, None, told, spill)


@contextlib.contextmanager
def spill_directory(parent: Path) -> Iterator[Path]:
    """A spill directory under `parent` for `scan_inputs`, held (locked) while the body runs
    and removed after; the spills that killed scans left there are removed first. An error
    while it is gone (removed under the scan) is a one-line OutputError (scan/spill.py
    `held_spill`)."""
    from harmony_doctor.scan.spill import held_spill

    with held_spill(parent) as path:
        yield path


def _progress_of(unit: UnitResult) -> ScanProgress:
    """The record of one input done, from the scan's own (which crosses processes)."""
    source = unit.source
    read = file_size(source.path) if unit.found is not None else 0
    return ScanProgress(source.label, read, unit.failures)


# A summary's frames, made on first use: the grouped table, the events folded (scan/fold.py),
# the request tallies, and the first events whole.
Frames = tuple["pl.DataFrame", "pl.DataFrame", "pl.DataFrame", "pl.DataFrame"]
# Events a summary keeps whole, for what shows them one by one (GitHub annotations show 50).
FIRST_EVENTS = 100


@dataclass(frozen=True)
class EventFrames:
    """Every event of a scan (or of event files read back), in order, as events frames
    (scan/summary.py events_frame), a batch at a time: a frame held in memory, then the files
    of a spill, never all in memory at once. Only names and a frame: it pickles."""

    frame: pl.DataFrame | None = None
    spill: EventSpill | None = None

    def batches(self) -> Iterator[pl.DataFrame]:
        if self.frame is not None and self.frame.height:
            yield self.frame
        if self.spill is not None:
            yield from self.spill.batches()

    def lazy(self) -> pl.LazyFrame:
        """The same as one lazy frame (a sink reads it in streaming)."""
        import polars as pl

        from harmony_doctor.scan.summary import events_frame

        held = self.frame if self.frame is not None else events_frame(())
        spilled = self.spill.lazy() if self.spill is not None else None
        return held.lazy() if spilled is None else pl.concat([held.lazy(), spilled])

    def head(self, n: int) -> pl.DataFrame:
        """The first `n` events (or all, if fewer)."""
        import polars as pl

        from harmony_doctor.scan.summary import events_frame

        taken = [events_frame(())]
        rows = 0
        for batch in self.batches():
            if rows >= n:
                break
            taken.append(batch.head(n - rows))
            rows += taken[-1].height
        return pl.concat(taken)


@dataclass(frozen=True)
class Summary:
    """What `scan` and `report` print: the grouped table, the totals line (a JSON contract:
    files, bytes, lines, requests, failures, rate, skipped, partial, rate_note, unrated,
    clock), failures per day, the inputs, every event (`events`, read a batch at a time) and
    the frames behind the table: the events folded (a row per code, file, process, hour...:
    memory by the groups, not by the failures), the request tallies, the first events whole.
    The frames are built with polars on first use: a scan that found no failure and counted
    no request has its totals, days and groups without them."""

    keys: tuple[str, ...]
    totals: dict[str, Any]
    days: tuple[tuple[str, int], ...]
    files: tuple[FileReport, ...]
    events: EventFrames = field(repr=False, compare=False)
    build: Callable[[], Frames] = field(repr=False, compare=False)
    # False: there was nothing to aggregate (no event, no tally), and `groups` needs no frame.
    aggregated: bool = True

    @cached_property
    def _frames(self) -> Frames:
        return self.build()

    @property
    def table(self) -> pl.DataFrame:
        """One row per group (`summarize`'s columns), largest first."""
        return self._frames[0]

    @property
    def folded(self) -> pl.DataFrame:
        """The events folded (scan/fold.py FOLD_KEYS, `n` events a row)."""
        return self._frames[1]

    @property
    def requests(self) -> pl.DataFrame:
        return self._frames[2]

    @property
    def first(self) -> pl.DataFrame:
        """The first FIRST_EVENTS events, every column (events_frame's)."""
        return self._frames[3]

    @property
    def groups(self) -> list[dict[str, Any]]:
        """The table's rows as dicts (none, and no frame built, when nothing was found)."""
        return self.table.to_dicts() if self.aggregated else []

    @cached_property
    def rates(self) -> Rates:
        """The rates behind the outputs, by the rule of the totals (computed on first use)."""
        return Rates(self.folded, self.requests)


class Rates:
    """The rates the outputs show of a summary's frames (the events folded, the request
    tallies), by the rule of the totals (scan/scopes.py: a failure counts in the rate of its
    scope, its process and hour, or in none): computed here, on first use, and read by
    output/, which computes none of them."""

    def __init__(self, folded: pl.DataFrame, requests: pl.DataFrame) -> None:
        self.folded, self.requests = folded, requests

    @cached_property
    def scoped(self) -> Scoped:
        from harmony_doctor.scan.scopes import scoped

        return scoped(self.folded, self.requests)

    @cached_property
    def origins(self) -> list[OriginRate]:
        """Failures, requests and rate per origin (origins with requests and no failure too)."""
        from harmony_doctor.scan.summary import origin_rates

        return origin_rates(self.folded, self.requests)

    @cached_property
    def hourly(self) -> HourlyRates:
        """Per origin and process, each hour's requests and rated failures."""
        from harmony_doctor.scan.hourly import hourly_rates

        return hourly_rates(self.folded, self.requests)

    @cached_property
    def by_server(self) -> dict[tuple[str | None, str | None], int]:
        """Requests per (server, origin) as the totals count them: they add up to them."""
        if not self.requests.height:
            return {}
        counted = self.scoped.counted
        origin = counted["origin"] if "origin" in counted.columns else [None] * counted.height
        asked: dict[tuple[str | None, str | None], int] = {}
        for key in zip(counted["server"], origin, counted["requests"], strict=True):
            asked[key[:2]] = asked.get(key[:2], 0) + int(key[2] or 0)
        return asked

    @cached_property
    def in_hours(self) -> tuple[pl.DataFrame, pl.DataFrame, int]:
        """The scopes whose hour is known, the rated failures counted in them, and how many
        failures are in neither (in no rate, or in a scope without a time)."""
        from harmony_doctor.scan.fold import failures_of
        from harmony_doctor.scan.scopes import SCOPE

        found = self.scoped
        scopes = found.scopes.filter(found.scopes["hour"].is_not_null())
        drawn = found.events.filter(found.events["rated"]).join(
            scopes.select(list(SCOPE)), on=list(SCOPE), how="semi", nulls_equal=True
        )
        return scopes, drawn, failures_of(found.events) - failures_of(drawn)


def summary_of(
    files: Sequence[FileReport],
    events: EventFrames,
    requests: pl.DataFrame,
    keys: tuple[str, ...],
) -> Summary:
    """The one way a summary is made, from a scan's events or event files read back: the
    events folded a batch at a time, then the table and the totals by scan/summary.py's rule
    (a failure counts in a rate only in its scope: the requests of its process and hour;
    others are unrated), the days from the events' `day` column."""
    from harmony_doctor.scan.fold import fold_batches
    from harmony_doctor.scan.summary import events_frame, frame_totals, summarize_frames

    folded = fold_batches(events_frame(()), events.batches())
    table = summarize_frames(folded, requests, keys)
    totals = frame_totals(files, folded, requests)
    days = failures_per_day(folded)
    frames = (table, folded, requests, events.head(FIRST_EVENTS))
    return Summary(keys, totals, days, tuple(files), events, partial(_given, frames))


def failures_per_day(folded: pl.DataFrame) -> tuple[tuple[str, int], ...]:
    """(day, failures) in date order; events without a time count in no day."""
    import polars as pl

    days = folded.drop_nulls("day").group_by("day").agg(pl.col("n").sum()).sort("day")
    return tuple((str(day), int(count)) for day, count in days.rows())


def summarize_scan(result: ScanResult | FileScan, by: Sequence[str] = ("code",)) -> Summary:
    """The summary `scan` prints for a scan (or a merge of FileScans), grouped `by`. A scan
    with no event and no request tally has nothing to aggregate: its totals are those of its
    files alone, and its frames (empty, with every column) are made only if asked for."""
    from harmony_doctor.scan.summary import group_keys, totals_line

    keys = group_keys(by)
    events = scan_events(result)
    if result.failures or result.requests:
        return summary_of(result.files, events, _tallies(result), keys)
    files = tuple(result.files)
    frames = partial(_nothing_frames, result, keys)
    return Summary(keys, totals_line(files), (), files, events, frames, aggregated=False)


def scan_events(result: ScanResult | FileScan) -> EventFrames:
    """A scan's events as frames: those held, then those spilled, read back a file at a time
    (never a record per event)."""
    from harmony_doctor.scan.summary import events_frame

    return EventFrames(events_frame(result.held) if result.held else None, result.spill)


def _tallies(result: ScanResult | FileScan) -> pl.DataFrame:
    from harmony_doctor.scan.summary import requests_frame

    return requests_frame(result.requests)


def _given(frames: Frames) -> Frames:
    """Frames built already (a module function, not a lambda: a Summary pickles)."""
    return frames


def _nothing_frames(result: ScanResult | FileScan, keys: tuple[str, ...]) -> Frames:
    """The frames of a scan that found nothing, made as every summary's are."""
    summary = summary_of(result.files, scan_events(result), _tallies(result), keys)
    return summary.table, summary.folded, summary.requests, summary.first
