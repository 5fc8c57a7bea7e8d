"""A large backlog read on every core: the unread part of a regular file at a follower's first
read (`--from-start`, or a resumed place far behind), cut at line ends into ranges that scan's
own reading (scan_stream) reads in a pool of `jobs` worker processes, folded into one read's
FileScan as if the backlog had been read as one stream.

A range read alone lacks what lies beyond its ends: the context before a failure's error line,
a traceback's start, the lines after it. So each range keeps the failures whose error line is
at least MARGIN bytes from a cut, and a seam read over [cut - 2 MARGIN, cut + 2 MARGIN) keeps
those within MARGIN of it: every failure is found by exactly one read that holds at least
MARGIN bytes of its context on either side (a window reaches BEFORE + MAX_WINDOW bytes at
most: scan/source.py). Lines, bytes and request counts are the ranges' (each line read once),
but for logged completions, which span lines (a stream of deltas, vLLM's `complete` line for a
request already counted): each seam's two halves are read apart too, and what reading across
the cut changes in their count is added to the ranges'. Ranges that name different servers
cannot be joined (a failure that names none takes the source's first): read as one stream.
The backlog's own end is the end of a read, as the one-stream read's is: the follower reads
on from there. All or nothing: stopped midway (SIGTERM), the workers are ended and nothing is
folded, so the saved place is the backlog's start and a restart reads it again, counting once.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harmony_doctor.inputs.timestamps import HEAD, own_stamp
from harmony_doctor.models import RequestTally, ScanEvent
from harmony_doctor.scan.documents import DOCUMENT_BYTES
from harmony_doctor.scan.records import FileReport, FileScan, ScanOptions
from harmony_doctor.scan.scopes import REQUEST_KINDS
from harmony_doctor.watch.follow import Identity, Piece

if TYPE_CHECKING:
    from concurrent.futures import Future
    from multiprocessing.sharedctypes import SynchronizedArray as Array

SPLIT_BYTES = 64 * 1024 * 1024  # a backlog smaller than this is read as one stream
MARGIN = 2 * 1024 * 1024  # context a read holds beyond the failures it keeps
RANGES_PER_JOB = 2  # ranges per worker: a slow range delays the end less
# A range is never smaller than this: one the size of a document (scan/documents.py) could be
# read as a token-stream document, not as a part of a log.
LEAST_RANGE = 2 * DOCUMENT_BYTES
STAMP_REACH = 256 * 1024  # bytes looked through for a stamped line to cut at
COMPLETIONS = REQUEST_KINDS[2]  # the requests counted from logged completions
WAIT = 0.1  # seconds between looks at `stopped` while the workers read


@dataclass(frozen=True)
class Layout:
    """How a backlog is cut: below `split` bytes it is not, `margin` bytes of context each side
    of a cut (tests cut small files with small ones)."""

    split: int = SPLIT_BYTES
    margin: int = MARGIN
    per_job: int = RANGES_PER_JOB
    least: int = LEAST_RANGE


DEFAULT_LAYOUT = Layout()  # frozen, so one shared default is safe


@dataclass(frozen=True)
class Span:
    """Bytes [start, end) of the file read as one stream, keeping the failures whose line
    starts in [keep_from, keep_to); `anchor` (a cut) is where its lines are counted from;
    `counted`: its lines, bytes and requests are the backlog's."""

    start: int
    end: int
    keep_from: int
    keep_to: int
    anchor: int
    counted: bool


@dataclass(frozen=True)
class SpanRead:
    """What a span yielded: the failures it keeps, their lines counted from its anchor (the
    anchor's line is 1), its whole read when it is counted, the server it named (the first
    one its windows or access lines name), and for a seam, the completions read across its
    cut adds to (or takes from) the two ranges' counts."""

    events: tuple[ScanEvent, ...]
    scan: FileScan | None
    server: str | None
    joins: tuple[RequestTally, ...] = ()


def spans(fd: int, start: int, end: int, jobs: int, layout: Layout) -> list[Span]:
    """The ranges and seams of the backlog [start, end) (`end` a line end), or none when it is
    too small to share out, or every cut would fall in one long line."""
    size = end - start
    if jobs < 2 or size < layout.split:
        return []
    count = min(jobs * layout.per_job, size // layout.least)
    cuts = [start]
    for k in range(1, count):
        cut = _stamped_line(fd, start + size * k // count, end)
        if cut - cuts[-1] > 2 * layout.margin and end - cut > 2 * layout.margin:
            cuts.append(cut)
    if len(cuts) < 2:
        return []
    cuts.append(end)
    m = layout.margin
    out = []
    for k in range(len(cuts) - 1):
        a, b = cuts[k], cuts[k + 1]
        keep_from = a if k == 0 else a + m
        keep_to = b if k == len(cuts) - 2 else b - m
        out.append(Span(a, b, keep_from, keep_to, a, counted=True))
    for cut in cuts[1:-1]:
        low = _line_start_before(fd, cut - 2 * m)
        high = _line_start(fd, cut + 2 * m, end)
        out.append(Span(low, high, cut - m, cut + m, cut, counted=False))
    return out


def read_span(
    opened: str,
    identity: Identity,
    span: Span,
    label: str,
    options: ScanOptions,
    now: datetime,
    stopped: Callable[[], bool] = lambda: False,
) -> SpanRead:
    """Read one span (in a worker process, or the watch's own): `opened` names the file (the
    watch's descriptor under /proc, or its path), which must still be `identity`'s; `stopped`
    ends the read early (what it gives is then a part, for the caller to drop)."""
    fd = os.open(opened, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino) != (identity.device, identity.inode):
            raise OSError(f"{label}: not the file the watch opened")
        head = _newlines(fd, span.start, span.keep_from)
        anchor = _newlines(fd, span.start, span.anchor)
        tail = _newlines(fd, span.keep_to, span.end)
        read = functools.partial(_read, fd, identity, label=label, options=options, now=now)
        found, server = read(span.start, span.end, stopped=stopped)
        joins: tuple[RequestTally, ...] = ()
        if not span.counted:
            before, _ = read(span.start, span.anchor, stopped=stopped)
            after, _ = read(span.anchor, span.end, stopped=stopped)
            joins = _joins(found, before, after)
    finally:
        os.close(fd)
    last = found.report.lines - tail
    kept = tuple(_moved(e, -anchor) for e in found.events if head < e.line <= last)
    return SpanRead(kept, replace(found, events=()) if span.counted else None, server, joins)


def _moved(event: ScanEvent, lines: int) -> ScanEvent:
    """The event with its line numbers (its own, its traceback's start) moved by `lines`."""
    start = event.traceback_line
    return replace(
        event, line=event.line + lines, traceback_line=None if start is None else start + lines
    )


def _read(
    fd: int,
    identity: Identity,
    start: int,
    end: int,
    *,
    label: str,
    options: ScanOptions,
    now: datetime,
    stopped: Callable[[], bool],
) -> tuple[FileScan, str | None]:
    """The bytes [start, end) read through scan: what they held, and the server they named."""
    from harmony_doctor.watch.reading import read_source

    piece = Piece(fd, identity, start, end, live=False)
    found, source, failed = read_source([piece], label, options, stopped, now)
    if failed is not None:
        raise OSError(failed)
    return found, None if source is None else source.server


def _joins(whole: FileScan, before: FileScan, after: FileScan) -> tuple[RequestTally, ...]:
    """The completions a cut's two sides count differently read as one (a stream of deltas
    open at the cut counts once, not in each range; vLLM's later line for a request finished
    before it is not a second one): the whole read's completion tallies less its halves'."""
    signed = [
        replace(tally, count=sign * tally.count, server=None)
        for scan, sign in ((whole, 1), (before, -1), (after, -1))
        for tally in scan.tallies
        if tally.kind == COMPLETIONS
    ]
    return tuple(_summed(signed))


def read_backlog(
    piece: Piece,
    path: Path,
    label: str,
    options: ScanOptions,
    stopped: Callable[[], bool],
    layout: Layout = DEFAULT_LAYOUT,
) -> FileScan | None:
    """The backlog [piece.pos, piece.end) (a line end) read on `options.jobs` cores, as one
    read's FileScan, and `piece.pos` moved to its end; None when it is not shared out (too
    small, one process, a read failed or a worker died, a range not read whole: the caller
    reads it as one stream), or when `stopped` became true (nothing read, `piece.pos`
    unmoved)."""
    planned = spans(piece.fd, piece.pos, piece.end, options.jobs, layout)
    if not planned:
        return None
    proc = Path(f"/proc/{os.getpid()}/fd/{piece.fd}")
    opened = str(proc if proc.exists() else path)
    now = datetime.now()
    calls = [(opened, piece.identity, span, label, options, now) for span in planned]
    reads = _in_pool(calls, min(options.jobs, len(planned)), stopped)
    if reads is None or not _joinable(reads):
        return None
    piece.pos = piece.end
    return _joined(planned, reads, label)


def _joinable(reads: list[SpanRead]) -> bool:
    """Whether the reads join into what the one-stream read finds: not when the ranges name
    different servers (a failure that names none takes its source's first one, which a range
    alone cannot know), nor when one was not read whole (a line cut short, data that is not
    text: the one-stream read gives scan's status and reason for the whole); such a backlog is
    read as one stream."""
    whole = all(read.scan is None or read.scan.report.status == "ok" for read in reads)
    return whole and len({read.server for read in reads if read.server is not None}) <= 1


Call = tuple[str, Identity, Span, str, ScanOptions, datetime]  # read_span's arguments
_CLAIMS: Array[int] | None = None  # in a worker: which spans a process has taken (1) or not (0)


def _in_pool(calls: list[Call], jobs: int, stopped: Callable[[], bool]) -> list[SpanRead] | None:
    """Every span read, in order, by `jobs` processes: this one and a pool of `jobs - 1`
    workers (scan's: scan/pool.py). Every span goes to the pool, and whichever process takes it
    first reads it (a flag each in shared memory): the workers from the first, this process
    from the last (a worker started costs a Python start-up and its imports). None when stopped
    or when a read failed (the workers are ended at once)."""
    import multiprocessing
    from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    from harmony_doctor.scan.pool import start_tracker, starting, stop

    context = multiprocessing.get_context("spawn")  # as scan's pool: no fork under threads
    start_tracker()
    claims = context.Array("b", len(calls))
    pool = ProcessPoolExecutor(
        max_workers=jobs - 1,
        mp_context=context,
        initializer=_worker_start,
        initargs=(os.getpid(), claims),
    )
    futures: list[Future[SpanRead | None]] = []
    mine: dict[int, SpanRead] = {}
    failed: list[BaseException] = []
    try:
        with starting():
            futures = [pool.submit(_read_claimed, i, *call) for i, call in enumerate(calls)]
        for index in reversed(range(len(calls))):
            if stopped() or any(f.done() and f.exception() for f in futures):
                break
            if _claim(claims, index):  # no worker took it: read here
                try:
                    mine[index] = read_span(*calls[index], stopped=stopped)
                except OSError as exc:
                    failed.append(exc)
                    break
        pending: set[Future[SpanRead | None]] = set(futures)
        while pending and not failed and not stopped():
            _, pending = wait(pending, timeout=WAIT, return_when=FIRST_EXCEPTION)
            failed += [e for f in futures if f.done() and (e := f.exception()) is not None]
    except BaseException:
        stop(pool)
        raise
    if pending or failed or stopped():
        stop(pool)
        bug = next((e for e in failed if not isinstance(e, (OSError, BrokenProcessPool))), None)
        if bug is not None:
            raise bug  # a bug in the reading: shown, not hidden by the one-stream read
        return None
    pool.shutdown()
    return [mine.get(i) or _read_by_worker(f) for i, f in enumerate(futures)]


def _read_by_worker(future: Future[SpanRead | None]) -> SpanRead:
    found = future.result()
    assert found is not None, "a span taken by no process"
    return found


def _claim(claims: Array[int], index: int) -> bool:
    """Take span `index` for the calling process: False when another has taken it."""
    with claims.get_lock():
        if claims[index]:
            return False
        claims[index] = 1
        return True


def _worker_start(parent: int, claims: Array[int]) -> None:
    """A worker of the backlog's pool: scan's start (scan/pool.py), and the spans' flags."""
    from harmony_doctor.scan.pool import worker_start

    global _CLAIMS
    _CLAIMS = claims
    worker_start(parent)


def _read_claimed(index: int, *call: Any) -> SpanRead | None:
    """In a worker: span `index` read, or None when the watch's process took it first."""
    assert _CLAIMS is not None
    return read_span(*call) if _claim(_CLAIMS, index) else None


def _joined(planned: list[Span], reads: list[SpanRead], label: str) -> FileScan:
    """The spans' reads as one read of the backlog: events in line order, lines numbered from
    the backlog's start, requests and counts summed, and the one server the ranges named given
    to what a range that named none left without one."""
    lines_before: dict[int, int] = {}
    lines = size = cut_lines = 0
    tallies: list[RequestTally] = []
    server = None
    for span, read in zip(planned, reads, strict=True):
        if read.scan is None:
            continue
        lines_before[span.anchor] = lines
        lines += read.scan.report.lines
        size += read.scan.report.bytes
        cut_lines += read.scan.report.cut_lines
        tallies.extend(read.scan.tallies)
        server = server or read.server
    tallies.extend(t for read in reads for t in read.joins)
    events = sorted(
        (
            replace(_moved(e, lines_before[span.anchor]), file=label)
            for span, read in zip(planned, reads, strict=True)
            for e in read.events
        ),
        key=lambda e: e.line,
    )
    # a range that named none: the backlog's, as one read names it
    events = [e if e.server else replace(e, server=server) for e in events]
    tallies = [t if t.server else replace(t, server=server) for t in tallies]
    report = FileReport(label, "ok", None, size, lines, len(events), cut_lines)
    return FileScan(tuple(events), tuple(_summed(tallies)), report)


def _summed(tallies: list[RequestTally]) -> list[RequestTally]:
    """Tallies of the same cell (file, pid, server, hour, origin, kind) added up."""
    cells: dict[RequestTally, int] = {}
    for tally in tallies:
        cell = replace(tally, count=0)
        cells[cell] = cells.get(cell, 0) + tally.count
    return [replace(cell, count=n) for cell, n in cells.items() if n]


def _stamped_line(fd: int, at: int, end: int) -> int:
    """The first line at or after `at` that carries its own time stamp, within STAMP_REACH
    bytes (else the first line start): a read that starts there counts its requests in the
    hours the one-stream read counts them in (a line without a stamp takes the last one's)."""
    first = _line_start(fd, at, end)
    data = os.pread(fd, min(STAMP_REACH, end - first), first)
    pos = 0
    while pos < len(data):
        cut = data.find(b"\n", pos)
        if cut < 0:
            break
        if own_stamp(data[pos : min(pos + HEAD, cut)]) is not None:
            return first + pos
        pos = cut + 1
    return first


def _line_start(fd: int, at: int, end: int) -> int:
    """The first line start at or after `at` (`end` if none before it)."""
    if at <= 0:
        return 0
    step = 64 * 1024
    pos = at - 1  # a line starts at `at` when the byte before it is a newline
    while pos < end:
        data = os.pread(fd, min(step, end - pos), pos)
        if not data:
            break
        found = data.find(b"\n")
        if found >= 0:
            return min(pos + found + 1, end)
        pos += len(data)
    return end


def _line_start_before(fd: int, at: int) -> int:
    """The start of the line holding byte `at` (0 at the file's start)."""
    step = 64 * 1024
    end = at
    while end > 0:
        begin = max(0, end - step)
        found = os.pread(fd, end - begin, begin).rfind(b"\n")
        if found >= 0:
            return begin + found + 1
        end = begin
    return 0


def _newlines(fd: int, start: int, end: int) -> int:
    """Newlines in the file's bytes [start, end)."""
    count, pos, step = 0, start, 1 << 20
    while pos < end:
        data = os.pread(fd, min(step, end - pos), pos)
        if not data:
            break
        count += data.count(b"\n")
        pos += len(data)
    return count
