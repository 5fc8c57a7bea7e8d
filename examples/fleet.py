"""What the Ray and Dask recipes share: the listing scan makes, merging, events, the summary.

An engine only has to map `harmony_doctor.advanced.scan_rotated` over `listing(...).streams` (the
rotated parts of one log go together: they are read as one stream) and hand the results to
`finish(...)`.
"""

from __future__ import annotations

import argparse
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import harmony_doctor as hd
from harmony_doctor import advanced
from harmony_doctor.cli.outputs import show_summary
from harmony_doctor.errors import ExitCode


@dataclass(frozen=True)
class Listing:
    """The files, objects and URLs to scan (each once), grouped into the streams scan reads
    (a log's rotated parts together, oldest first), and what could not be listed."""

    streams: list[tuple[str, ...]]
    unread: list[hd.FileScan]


def listing(inputs: list[str], engine: str) -> Listing:
    """The inputs as `harmony-doctor scan` lists them (folders, URLs, prefixes, globs)."""
    found = advanced.list_inputs(inputs)
    if any(s.path is None and not s.url for s in found.sources):
        raise hd.InputError(f"standard input cannot be sent to {engine}: name files or URLs")
    unique = {s.label: s for s in found.sources}.values()  # a file named twice: once
    streams = list(advanced.InputListing(tuple(unique), ()).streams)
    unread = [
        hd.FileScan((), (), advanced.FileReport(s.label, "skipped", s.reason, 0, 0, 0))
        for s in found.skipped
    ]
    return Listing(streams, unread)


def merged(found: Listing, streams: list[tuple[hd.FileScan, ...]]) -> hd.ScanResult:
    """One result in scan's order: what could not be read, files scan itself wrote, the logs."""
    scans = [scan for stream in streams for scan in stream]
    scans = sorted(scans, key=lambda scan: scan.report.status != "ignored")
    return advanced.merge([*found.unread, *scans])


def arguments(description: str) -> argparse.ArgumentParser:
    """The options both recipes take, as `scan` spells them."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("inputs", nargs="+", help="Files, folders, URLs, prefixes or globs.")
    parser.add_argument("--by", action="append", default=[], help="Group keys, as scan's --by.")
    parser.add_argument("--format", default="table", choices=["table", "json", "csv"])
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--events", type=Path, help="Also write the events, as scan --events.")
    parser.add_argument("--origin", help="Name on every event and count (default: this host).")
    return parser


def options(args: argparse.Namespace) -> hd.ScanOptions:
    # One origin for the whole run, as scan has: not the host name of each worker.
    return hd.ScanOptions(origin=args.origin or socket.gethostname())


def finish(args: argparse.Namespace, run: Callable[[], hd.ScanResult]) -> int:
    """Run the engine, write the events (if asked), print the summary; scan's exit code."""
    try:
        result = run()
    except hd.InputError as exc:
        print(f"harmony-doctor: {exc}", file=sys.stderr)
        return ExitCode.ERROR
    failed = write_events(result, args.events) if args.events else []
    for error in failed:
        print(f"harmony-doctor: {error}", file=sys.stderr)
    code = show(result, args.by, args.format, args.top)
    return ExitCode.ERROR if failed else code


def write_events(result: hd.ScanResult, path: Path) -> list[str]:
    """The events and, beside them, the request tallies, as `scan --events PATH` writes them
    (for `harmony-doctor report`); the errors of those that could not be written."""
    from harmony_doctor.output.tables import write_event_tables

    events = advanced.scan_events(result)  # a batch at a time: held ones, then the spill's files
    tallies = advanced.tally_table(result)
    return write_event_tables(events, tallies, path, advanced.requests_path(path))


def show(result: hd.ScanResult, by: list[str], output: str, top: int) -> int:
    """The summary `scan` prints, and scan's exit code."""
    summary = advanced.summarize_scan(result, by)
    show_summary(summary, output, top, "auto")  # type: ignore[arg-type]
    for f in result.files:
        if f.status != "ok":
            print(f"harmony-doctor: {f.status} {f.path}: {f.reason}", file=sys.stderr)
    if any(f.status == "skipped" for f in result.files):
        return ExitCode.ERROR
    return ExitCode.FINDINGS if result.events else ExitCode.CLEAN
