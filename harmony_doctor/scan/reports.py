"""The library's face of `report`: event files written by `scan --events` read back into the
summary scan prints (scan/service.py is scan's own face; a scan never loads this)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from harmony_doctor.scan.service import EventFrames, Summary, summary_of


@dataclass(frozen=True)
class UnreadFile:
    """An events file (or the tallies beside one) that could not be read, and why."""

    path: str  # as named: a path, or the URL it was fetched from
    reason: str


@dataclass(frozen=True)
class EventFilesSummary:
    """Event files read back: the summary of those that could be read (as one scan over the
    same logs would print it), the files that could not be, and the events files read without
    request tallies beside them (their failures count in no rate)."""

    summary: Summary
    unread: tuple[UnreadFile, ...]
    untallied: tuple[str, ...]  # as named, like UnreadFile.path
    cut: tuple[tuple[str, int], ...] = ()  # (file as named, cells cut to `cell_limit`)
    cell_limit: int = 0  # characters of one text cell kept (event_files.MAX_CELL)
    repeated: tuple[tuple[str, int], ...] = ()  # (file as named, events read already before it)


def summarize_event_files(
    paths: Sequence[str | Path], by: Sequence[str] = ("code",), spill: Path | None = None
) -> EventFilesSummary:
    """The summary `report` prints for event files written by `scan --events` (CSV, JSONL,
    Parquet, any mix; URLs and globs with the remote extra), with rates from the request
    tallies beside each. A file that cannot be read is set apart, not fatal: the others are
    summed all the same. InputError for a URL that cannot be listed or fetched. With `spill` (a
    folder the caller removes, after the summary), the events are read into it a batch at a
    time, never held all at once (`report`); without, they are held (`summary.events`)."""
    from harmony_doctor.scan.event_batches import MAX_CELL
    from harmony_doctor.scan.event_files import fetched, read_event_files
    from harmony_doctor.scan.summary import (
        event_file_reports,
        events_frame,
        group_keys,
        requests_frame,
        requests_view,
    )

    keys = group_keys(by)
    with fetched([str(p) for p in paths]) as (local, labels):  # URLs: local copies, named as URLs
        schemas = events_frame(()).schema, requests_frame(()).schema
        read = read_event_files(local, *schemas, spill=spill)
        # sized while the copies exist
        reports = [
            replace(r, path=labels.get(r.path, r.path))
            for r in event_file_reports(read.paths, read.counts)
        ]
    requests = requests_view(read.tallies) if read.tallies is not None else requests_frame(())
    summary = summary_of(reports, EventFrames(read.frame, read.spill), requests, keys)
    unread = tuple(
        UnreadFile(labels.get(str(b.path), str(b.path)), _as_named(b.reason, labels))
        for b in read.bad
    )
    untallied = tuple(labels.get(str(p), str(p)) for p in read.untallied)
    cut = tuple(
        (labels.get(str(p), str(p)), n) for p, n in zip(read.paths, read.cut, strict=True) if n
    )
    repeated = tuple(
        (labels.get(str(p), str(p)), n) for p, n in zip(read.paths, read.repeated, strict=True) if n
    )
    return EventFilesSummary(summary, unread, untallied, cut, MAX_CELL, repeated)


def _as_named(text: str, labels: dict[str, str]) -> str:
    """A message about local copies, with each copy named by the URL it stands for."""
    for local, url in labels.items():
        text = text.replace(local, url)
    return text
