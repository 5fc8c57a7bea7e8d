"""Many sources -> a ScanResult: units of work, the process pool, each source put back together."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import stat
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import IO

from harmony_doctor.errors import InputError
from harmony_doctor.harmony.vocab import Vocab
from harmony_doctor.inputs.sources import (
    CHUNK,
    Readable,
    Skipped,
    Source,
    compression_of,
    open_binary,
)
from harmony_doctor.inputs.tokens import RequestStreams, VllmRecord
from harmony_doctor.models import RequestTally, ScanEvent, TokenInput
from harmony_doctor.scan.blocks import BEFORE, Hit, Scanner, SourceScan
from harmony_doctor.scan.events import merge_duplicates, redact, source_events
from harmony_doctor.scan.records import FileReport, FileStatus, ScanOptions, ScanResult

SPLIT_BYTES = 64 * 1024 * 1024  # plain files larger than this are scanned in ranges
POOL_BYTES = 16 * 1024 * 1024  # below this, starting worker processes costs more than it saves
DEFAULT_OPTIONS = ScanOptions()  # frozen, so one shared default is safe


@dataclass(frozen=True)
class Unit:
    """A piece of work: a whole source, or a byte range of a large plain file."""

    source: Source
    part: int
    start: int | None = None
    end: int | None = None


@dataclass
class UnitResult:
    unit: Unit
    events: list[ScanEvent]
    found: SourceScan | None
    error: str | None = None  # the source could not be opened


def plan(sources: Iterable[Source], jobs: int) -> list[Unit]:
    """Whole sources, with large plain files cut into ranges so every core has work."""
    units: list[Unit] = []
    for source in sources:
        size = _plain_size(source)
        if size is None or jobs <= 1 or size < SPLIT_BYTES:
            units.append(Unit(source, 0))
            continue
        parts = max(2, min(jobs * 4, size // (SPLIT_BYTES // 4)))
        step = -(-size // parts)
        units.extend(Unit(source, i, i * step, min(size, (i + 1) * step)) for i in range(parts))
    return units


def _total_size(units: list[Unit]) -> int:
    """Bytes on disk the units will read (stdin counts as large: its size is unknown)."""
    total = 0
    for unit in units:
        if unit.start is not None and unit.end is not None:
            total += unit.end - unit.start
        elif unit.source.path is None:
            return POOL_BYTES
        else:
            with contextlib.suppress(OSError):
                total += unit.source.path.stat().st_size
    return total


def _plain_size(source: Source) -> int | None:
    """The size of a regular, uncompressed file (None for stdin or compressed data)."""
    if source.path is None:
        return None
    try:
        with open(source.path, "rb") as handle:
            info = os.fstat(handle.fileno())
            head = handle.read(8)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode) or compression_of(head, source.label) is not None:
        return None
    return info.st_size


def scan(
    sources: Iterable[Source],
    options: ScanOptions = DEFAULT_OPTIONS,
    skipped: Iterable[Skipped] = (),
    now: datetime | None = None,
    progress: Callable[[UnitResult], None] | None = None,
) -> ScanResult:
    """Scan every source (in `options.jobs` processes); what cannot be read is reported."""
    units = plan(sources, options.jobs)
    results: list[UnitResult] = []
    if options.jobs <= 1 or len(units) <= 1 or _total_size(units) < POOL_BYTES:
        for unit in units:
            results.append(scan_unit(unit, options, now))
            if progress is not None:
                progress(results[-1])
    else:
        results = _in_pool(units, options, now, progress)
    events: list[ScanEvent] = []
    tallies: list[RequestTally] = []
    files = [FileReport(s.label, "skipped", s.reason, 0, 0, 0) for s in skipped]
    for source_results in _by_source(results):
        report, found_events, found_tallies = _assemble(source_results, options)
        files.append(report)
        events.extend(found_events)
        tallies.extend(found_tallies)
    if options.redact:
        events = [redact(e) for e in events]
    return ScanResult(tuple(events), tuple(tallies), tuple(files))


def _in_pool(
    units: list[Unit],
    options: ScanOptions,
    now: datetime | None,
    progress: Callable[[UnitResult], None] | None,
) -> list[UnitResult]:
    # spawn, not fork: the parent may already run polars' or openai-harmony's threads.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=options.jobs, mp_context=context) as pool:
        futures = [pool.submit(scan_unit, unit, options, now) for unit in units]
        results: list[UnitResult] = []
        try:
            for future in futures:
                results.append(future.result())
                if progress is not None:
                    progress(results[-1])
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    return results


def _by_source(results: list[UnitResult]) -> list[list[UnitResult]]:
    """Unit results grouped per source, in input order (a source's parts are adjacent)."""
    grouped: list[list[UnitResult]] = []
    for result in results:
        if result.unit.part == 0:
            grouped.append([])
        grouped[-1].append(result)
    return grouped


def scan_unit(unit: Unit, options: ScanOptions, now: datetime | None) -> UnitResult:
    """Scan one unit (in a worker process or this one); events carry range-relative lines."""
    source = unit.source
    reference = _reference_time(source, now)
    try:
        if unit.start is None:
            stream: Readable = open_binary(source)
            preamble, length = b"", None
        else:
            stream, preamble, length = _open_range(source, unit)
    except (InputError, OSError) as exc:
        return UnitResult(unit, [], None, str(exc))
    try:
        found = Scanner(stream, source.label, reference, options.replay, preamble, length).run()
    finally:
        stream.close()
    events = list(source_events(found, _vocab_loader(options.vocab_path), options))
    found.errors, found.completions = [], []  # now events: keep what crosses processes small
    return UnitResult(unit, events, found)


def _vocab_loader(path: Path | None) -> Callable[[], Vocab]:
    from harmony_doctor.harmony.vocab import load_vocab

    return lambda: load_vocab(path)


def _open_range(source: Source, unit: Unit) -> tuple[Readable, bytes, int]:
    """The file positioned at the range's first line, the context before it, its length."""
    assert source.path is not None and unit.start is not None and unit.end is not None
    handle = open(source.path, "rb")  # noqa: SIM115 - closed by the caller
    size = os.fstat(handle.fileno()).st_size
    start = _line_start(handle, unit.start, size)
    end = _line_start(handle, unit.end, size)
    context_start = max(0, start - BEFORE)
    handle.seek(context_start)
    preamble = handle.read(start - context_start)
    if context_start > 0:  # begin the context at a whole line
        preamble = preamble[preamble.find(b"\n") + 1 :] if b"\n" in preamble else b""
    handle.seek(start)
    return handle, preamble, end - start


def _line_start(handle: IO[bytes], offset: int, size: int) -> int:
    """The first line start at or after `offset`: ranges meet at line boundaries."""
    if offset <= 0:
        return 0
    if offset >= size:
        return size
    handle.seek(offset - 1)
    position = offset - 1
    while True:
        chunk = handle.read(CHUNK)
        if not chunk:
            return size
        newline = chunk.find(b"\n")
        if newline >= 0:
            return position + newline + 1
        position += len(chunk)


def _assemble(
    results: list[UnitResult], options: ScanOptions
) -> tuple[FileReport, list[ScanEvent], list[RequestTally]]:
    """One source's units put back together: absolute lines, joined streams, one report."""
    label = results[0].unit.source.label
    first = results[0].found
    if first is None:
        return FileReport(label, "skipped", results[0].error, 0, 0, 0), [], []
    events: list[ScanEvent] = []
    deferred: list[tuple[VllmRecord, Hit]] = []
    total = SourceScan(label, first.reference)
    for result in results:
        found = result.found
        if found is None:
            continue
        offset = total.lines
        events.extend(replace(e, line=e.line + offset) for e in result.events)
        deferred.extend((r, replace(hit, line=hit.line + offset)) for r, hit in found.deferred)
        total.requests.update(found.requests)
        total.access_lines += found.access_lines
        total.received_lines += found.received_lines
        total.cut_lines += found.cut_lines
        total.bytes += found.bytes
        total.server = total.server or found.server
        total.damage = total.damage or found.damage
        total.lines += found.lines
        total.replayed += found.replayed
    if deferred:
        total.completions = join_streams(deferred)
        total.replayed += len(total.completions)
        events.extend(source_events(total, _vocab_loader(options.vocab_path), options))
    events = merge_duplicates(events)
    status: FileStatus = "partial" if total.damage else "ok"
    reason = f"stopped after line {total.lines}: {_reason(total.damage)}" if total.damage else None
    report = FileReport(label, status, reason, total.bytes, total.lines, len(events))
    return report, events, _tallies(total)


def join_streams(records: list[tuple[VllmRecord, Hit]]) -> list[tuple[TokenInput, Hit]]:
    """Streaming records from all ranges of a file, joined per request in order."""
    streams = RequestStreams()
    done: list[tuple[TokenInput, Hit]] = []
    finished: set[str] = set()
    for record, hit in records:
        if record.kind == "complete" and record.request_id in finished:
            continue
        streams.add(record)
        if record.finish_reason is not None or record.kind == "complete":
            finished.add(record.request_id)
            inp = streams.pop(record.request_id)
            if inp is not None:
                done.append((inp, hit))
    for request_id in list(streams.streams):
        inp = streams.pop(request_id)
        if inp is not None:
            done.append((inp, records[-1][1]))
    return done


def _reason(damage: str) -> str:
    if "ends before" in damage or "end-of-stream" in damage.lower():
        return f"compressed data ends early ({damage})"
    return damage


def _reference_time(source: Source, now: datetime | None) -> datetime:
    if source.path is not None:
        try:
            return datetime.fromtimestamp(source.path.stat().st_mtime)
        except OSError:
            pass
    return now or datetime.now()


def _tallies(found: SourceScan) -> list[RequestTally]:
    other = max(found.received_lines, found.replayed)
    if found.access_lines < other:
        # Access lines missing or sampled: count `Received request` lines or logged
        # completions instead, whichever is larger (never added up: no double count).
        return [RequestTally(found.label, None, found.server, None, other)]
    return [
        RequestTally(found.label, pid, found.server, hour, n)
        for (pid, hour), n in sorted(found.requests.items(), key=lambda kv: str(kv[0]))
    ]
