"""Many sources -> a ScanResult: distinct inputs, the process pool, one report per source."""

from __future__ import annotations

import contextlib
import functools
import os
import stat
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING

from harmony_doctor.errors import InputError
from harmony_doctor.harmony.vocab import Vocab
from harmony_doctor.inputs.checks import Checks
from harmony_doctor.inputs.files import (
    Readable,
    Skipped,
    Source,
    archive_of,
    open_binary,
    open_checked,
)
from harmony_doctor.inputs.remote import is_url, open_url
from harmony_doctor.scan.completions import Diagnose
from harmony_doctor.scan.documents import (
    DOCUMENT_BYTES,
    Document,
    as_document,
    read_head,
    too_large,
)
from harmony_doctor.scan.found import Place, SourceScan
from harmony_doctor.scan.names import rotation_rank, stream_of
from harmony_doctor.scan.own_outputs import written_by_scan
from harmony_doctor.scan.pool import gather, start_tracker
from harmony_doctor.scan.read_status import GREW, read_status
from harmony_doctor.scan.records import (
    EventSpill,
    FileReport,
    FileScan,
    ScanOptions,
    ScanResult,
)
from harmony_doctor.scan.source import scan_parts, scan_source
from harmony_doctor.scan.spill import EventSink, spilled

if TYPE_CHECKING:
    from harmony_doctor.models import RequestTally, ScanEvent, TokenInput
    from harmony_doctor.streams.clean import CleanStreams

POOL_BYTES = 16 * 1024 * 1024  # below this, starting worker processes costs more than it saves
DEFAULT_OPTIONS = ScanOptions()  # frozen, so one shared default is safe


@dataclass(frozen=True)
class Unit:
    """A piece of work: one whole source, or the parts of one rotated log (oldest first), read
    as one stream (results never depend on how work is shared out)."""

    parts: tuple[Source, ...]


@dataclass
class UnitResult:
    """What one source (a part of a unit) yielded: its events, final (their origin marked,
    redacted if asked), held or written to the scan's spill directory."""

    source: Source
    events: list[ScanEvent]
    found: SourceScan | None
    error: str | None = None  # the source could not be opened
    changed: str | None = None  # how the file changed while it was read
    spill: EventSpill | None = None  # the events written out (`events` holds the others)

    @property
    def failures(self) -> int:
        return len(self.events) + (self.spill.count if self.spill is not None else 0)


def plan(sources: Iterable[Source]) -> tuple[list[Unit], list[FileReport]]:
    """One unit per distinct input, the rotated parts of one log joined (`rotated`); a file
    named twice (or reached through a folder and a path, or a link) is read once, and files
    scan itself wrote are left out with the reason."""
    kept: list[Source] = []
    ignored: list[FileReport] = []
    seen: set[tuple[int | str, int]] = set()
    for source in sources:
        identity = _identity(source)
        if identity is not None:
            if identity in seen:
                continue
            seen.add(identity)
        written = written_by_scan(source)
        if written is not None:
            ignored.append(FileReport(source.label, "ignored", written, 0, 0, 0))
            continue
        kept.append(source)
    return [Unit(parts) for parts in rotated(kept)], ignored


def rotated(sources: Iterable[Source]) -> list[tuple[Source, ...]]:
    """Sources grouped into the streams they are parts of: the rotated and compressed parts of
    one log file (`vllm.log.2.gz`, `vllm.log.1`, `vllm.log`: scan/names.py) oldest first, at
    the place of the first one listed; anything else (standard input, pipes, URLs, a lone
    file) on its own. Stdout/stderr splits run side by side, so they stay apart."""
    groups: dict[str, list[Source]] = {}
    order: list[str | int] = []
    for index, source in enumerate(sources):
        if source.url or source.stream is not None or source.path is None:
            order.append(index)
            groups[str(index)] = [source]
            continue
        key = "stream:" + stream_of(source.label)
        if key not in groups:
            order.append(key)
            groups[key] = []
        groups[key].append(source)
    return [tuple(sorted(groups[str(key)], key=lambda s: rotation_rank(s.label))) for key in order]


def _identity(source: Source) -> tuple[int | str, int] | None:
    """(device, inode) of a regular file; None for stdin, pipes and streams."""
    if source.url:
        return (source.label, 0)  # the same object named twice (a prefix and a glob)
    info = _state(source)
    return None if info is None else (info.st_dev, info.st_ino)


def _total_size(units: list[Unit]) -> int:
    """Bytes on disk the units will read (stdin counts as large: its size is unknown)."""
    total = 0
    for source in (s for unit in units for s in unit.parts):
        if source.path is None:
            return POOL_BYTES
        with contextlib.suppress(OSError):
            total += source.path.stat().st_size
    return total


def _in_process(unit: Unit) -> bool:
    """Whether a unit holds a source a worker cannot open."""
    return any(_local_only(source) for source in unit.parts)


def _local_only(source: Source) -> bool:
    """Sources a worker cannot open: open streams, stdin, pipes (/dev/fd/N, <(...))."""
    if source.url:
        return False  # a URL pickles: any worker opens it
    if source.stream is not None or source.path is None:
        return True
    try:
        return not stat.S_ISREG(os.stat(source.path).st_mode)
    except OSError:
        return True


def scan(
    sources: Iterable[Source],
    options: ScanOptions = DEFAULT_OPTIONS,
    skipped: Iterable[Skipped] = (),
    now: datetime | None = None,
    progress: Callable[[UnitResult], None] | None = None,
    spill: Path | None = None,
) -> ScanResult:
    """Scan every source (whole files shared out over `options.jobs` processes); what cannot
    be read is reported. Results do not depend on `jobs`. With a `spill` directory (the
    caller's, to remove), events are written there as they become final, in batches, and the
    result reads them back from there (ScanResult.spill): memory does not grow with them."""
    units, ignored = plan(sources)
    origin = options.origin_name()
    # Each unit's results as the FileScans they give, made as they come: a source's whole
    # reading state (SourceScan) is never held for every file of a large folder.
    results: dict[int, list[FileScan]] = {}

    def done(index: int, parts: list[UnitResult]) -> None:
        _told(progress, parts)
        results[index] = [file_scan(part, options, origin) for part in parts]

    pooled = [i for i, u in enumerate(units) if not _in_process(u)]
    if options.jobs <= 1 or len(pooled) <= 1 or _total_size(units) < POOL_BYTES:
        pooled = []
    if pooled:
        _in_pool([(i, units[i]) for i in pooled], options, now, done, spill)
    for index, unit in enumerate(units):
        if index not in results:
            done(index, scan_unit(unit, options, now, spill))
    reports = [FileReport(s.label, "skipped", s.reason, 0, 0, 0) for s in skipped]
    scans = [FileScan((), (), report) for report in [*reports, *ignored]]
    scans.extend(found for index in range(len(units)) for found in results.pop(index))
    return merge(scans)


def _told(progress: Callable[[UnitResult], None] | None, parts: list[UnitResult]) -> None:
    for part in parts if progress is not None else ():
        progress(part)  # type: ignore[misc]


def merge(scans: Iterable[FileScan]) -> ScanResult:
    """FileScans (from `scan_file` in any process, engine or order) as one ScanResult, in the
    order given: summarised as one scan over the same inputs would be."""
    events: list[ScanEvent] = []
    tallies: list[RequestTally] = []
    files: list[FileReport] = []
    spills: list[EventSpill] = []
    for found in scans:
        events.extend(found.events)
        tallies.extend(found.tallies)
        files.append(found.report)
        spills.extend([found.spill] if found.spill is not None else [])
    spill = EventSpill.joined(spills) if spills else None
    return ScanResult(tuple(events), tuple(tallies), tuple(files), spill)


def scan_file(
    target: str | Path, options: ScanOptions = DEFAULT_OPTIONS, now: datetime | None = None
) -> FileScan:
    """One input scanned in this process (never a pool, whatever `options.jobs` says): a path
    (compressed or not), or a URL read through inputs/remote.open_url. `now` dates year-less
    stamps when the input has no modification time."""
    origin = options.origin_name()
    text = str(target)
    if is_url(text):
        stream, label, modified = open_url(text)
        return scan_stream(stream, label, options, modified or now)
    units, ignored = plan([Source(text, Path(text))])
    if not units:
        return FileScan((), (), ignored[0])
    return file_scan(scan_unit(units[0], options, now)[0], options, origin)


def scan_rotated(
    paths: Sequence[str | Path], options: ScanOptions = DEFAULT_OPTIONS, now: datetime | None = None
) -> tuple[FileScan, ...]:
    """The parts of one rotated log (in any order; read oldest first as one stream, as `scan`
    reads them), one FileScan per part: a failure whose lines the rotation cut in two counts
    once, in the part its error line is in. Paths that are not parts of one log are refused."""
    origin = options.origin_name()
    units, ignored = plan([Source(str(p), Path(p)) for p in paths])
    if len(units) > 1:
        names = ", ".join(unit.parts[0].label for unit in units)
        raise InputError(f"not the parts of one rotated log: {names}")
    scans = [FileScan((), (), report) for report in ignored]
    for unit in units:
        scans.extend(file_scan(part, options, origin) for part in scan_unit(unit, options, now))
    return tuple(scans)


def scan_stream(
    stream: IO[bytes],
    label: str,
    options: ScanOptions = DEFAULT_OPTIONS,
    now: datetime | None = None,
) -> FileScan:
    """An open binary stream scanned in this process; `now` dates year-less stamps (default:
    the current time). The stream is closed."""
    return scanned_stream(stream, label, options, now)[0]


def scanned_stream(
    stream: IO[bytes],
    label: str,
    options: ScanOptions = DEFAULT_OPTIONS,
    now: datetime | None = None,
) -> tuple[FileScan, SourceScan | None]:
    """scan_stream, with what scan found in the source before it became a FileScan (its
    server, its completions; None when it could not be read)."""
    origin = options.origin_name()
    result = scan_unit(Unit((Source(label, None, stream),)), options, now)[0]
    return file_scan(result, options, origin), result.found


def _in_pool(
    units: list[tuple[int, Unit]],
    options: ScanOptions,
    now: datetime | None,
    done: Callable[[int, list[UnitResult]], None],
    spill: Path | None,
) -> None:
    """Each unit read by a worker process, handed to `done` as it comes back."""
    import multiprocessing  # a pool only for large scans: small ones never load it

    # spawn, not fork: the parent may already run polars' or openai-harmony's threads.
    context = multiprocessing.get_context("spawn")
    start_tracker()
    calls = [(i, (unit, options, now, spill)) for i, unit in units]
    died = gather(scan_unit, calls, min(options.jobs, len(units)), context, done)
    for index, unit in units:  # a worker killed under it (the out-of-memory killer): skipped
        if index in died:
            done(index, [UnitResult(part, [], None, died[index]) for part in unit.parts])


def scan_unit(
    unit: Unit, options: ScanOptions, now: datetime | None, spill: Path | None = None
) -> list[UnitResult]:
    """Scan one unit (in a worker process or this one): what each of its sources yielded."""
    if len(unit.parts) == 1:
        results = [_scan_one(unit.parts[0], options, now, spill)]
    else:
        results = _scan_parts(unit.parts, options, now, spill)
    for result in results:  # a document's events, held: written out too, in the inputs' order
        if spill is not None and result.events:
            result.spill, result.events = spilled(result.events, spill), []
    return results


def _scan_one(
    source: Source, options: ScanOptions, now: datetime | None, spill: Path | None
) -> UnitResult:
    """Scan one source."""
    given = source
    if source.url:  # opened in the process that reads it; its last-modified time dates stamps
        try:
            remote, _, modified = open_url(source.label)
        except InputError as exc:
            return UnitResult(given, [], None, str(exc))
        source, now = Source(source.label, None, remote), modified or now
    reference = _reference_time(source, now)
    before = _state(source)
    vocab = _vocab_loader(options.vocab_path)
    opened = _open(source, vocab, options, spill)
    if not isinstance(opened, tuple):
        return opened
    stream, checks = opened
    clean = _clean_check(vocab, options)
    diagnose = _diagnosis(vocab, options, clean)
    sink = EventSink([source.label], options, spill, vocab, clean)
    try:
        found = scan_source(
            stream, source.label, reference, options.replay, clean, checks, diagnose, sink.settled
        )
    finally:
        stream.close()
    ((events, spilled),) = sink.close(found)  # the findings left `found` as events
    changed = _changed(before, _state(source))
    return UnitResult(given, events, found, changed=changed, spill=spilled)


def _diagnosis(
    vocab: Callable[[], Vocab], options: ScanOptions, clean: CleanStreams | None
) -> Diagnose:
    """findings.completion_diagnosis, loaded with the first completion kept."""
    made: list[Diagnose] = []

    def diagnose(inp: TokenInput, hit: Place) -> Iterable[ScanEvent]:
        if not made:
            from harmony_doctor.scan.findings import completion_diagnosis

            made.append(completion_diagnosis(vocab, options, clean))
        return made[0](inp, hit)

    return diagnose


def _open(
    source: Source, vocab: Callable[[], Vocab], options: ScanOptions, spill: Path | None
) -> UnitResult | tuple[Readable, Checks]:
    """A source opened for reading as a log, with its data's checks; or what it yielded
    already: the reason it could not be opened, or the diagnosis of a whole token-stream
    document."""
    try:
        stream, checks = open_checked(source)
    except (InputError, OSError) as exc:
        return UnitResult(source, [], None, str(exc))
    stream, whole = read_head(stream)
    archive = archive_of(stream.head, source.label)
    if archive is not None:  # refused whole: no member read as a part of one text
        stream.close()
        return UnitResult(source, [], None, archive)
    if whole is None:  # larger than a document: a log, or a document scan cannot read whole
        refused = too_large(stream.head, source.label, vocab, options.role)
        if refused is not None:
            stream.close()
            return UnitResult(source, [], None, refused)
    document = None if whole is None else as_document(whole, source.label, vocab, options.role)
    if document is None:
        return stream, checks
    stream.close()
    return _document_result(source, document, whole or b"", vocab, options, spill)


def _scan_parts(
    parts: tuple[Source, ...], options: ScanOptions, now: datetime | None, spill: Path | None
) -> list[UnitResult]:
    """The parts of one rotated log read as one stream, oldest first (a part that cannot be
    opened is skipped): each failure is placed, and counted once, in the part its line is in;
    every part keeps its own lines, bytes, requests and status. The stream is a token-stream
    document only as a whole (no part of it alone)."""
    vocab = _vocab_loader(options.vocab_path)
    before = {id(s): _state(s) for s in parts}
    whole = _whole_document(parts, vocab, options)
    if whole is not None:
        return whole
    alone: dict[int, UnitResult] = {}
    logs: list[Source] = []
    for source in parts:
        try:
            open_binary(source).close()  # opened again when its turn comes: one at a time
            logs.append(source)
        except (InputError, OSError) as exc:
            alone[id(source)] = UnitResult(source, [], None, str(exc))
    if logs:
        clean = _clean_check(vocab, options)
        reference = _reference_time(logs[-1], now)
        checks = [Checks() for _ in logs]
        named = [
            (s.label, functools.partial(open_binary, s, c))
            for s, c in zip(logs, checks, strict=True)
        ]
        diagnose = _diagnosis(vocab, options, clean)
        sink = EventSink([s.label for s in logs], options, spill, vocab, clean)
        found = scan_parts(named, reference, options.replay, clean, checks, diagnose, sink.settled)
        pieces = found.parts or [found]
        for source, piece, (mine, spilled) in zip(logs, pieces, sink.close(found), strict=True):
            changed = _changed(before[id(source)], _state(source))
            alone[id(source)] = UnitResult(source, mine, piece, changed=changed, spill=spilled)
    return [alone[id(source)] for source in parts]


def _whole_document(
    parts: tuple[Source, ...], vocab: Callable[[], Vocab], options: ScanOptions
) -> list[UnitResult] | None:
    """Small parts that are, read as one stream, one token-stream document (a JSON completion
    cut by a rotation): its diagnosis in the first part, each part with its own lines."""
    heads: list[bytes] = []
    for source in parts:
        try:
            stream = open_binary(source)
        except (InputError, OSError):
            return None
        try:  # read to its end (one read of a decoded or inflated stream may hand out less)
            _, head = read_head(stream, DOCUMENT_BYTES - sum(map(len, heads)))
        finally:
            stream.close()
        if head is None:  # larger, or damaged: the parts are read as a log
            return None
        heads.append(head if head.endswith(b"\n") or not head else head + b"\n")
        if sum(map(len, heads)) > DOCUMENT_BYTES:
            return None
    data = b"".join(heads)
    document = as_document(data, parts[0].label, vocab, options.role)
    if document is None:
        return None
    events = _document_result(parts[0], document, data, vocab, options).events
    results = []
    for source, head in zip(parts, heads, strict=True):
        found = SourceScan(source.label, datetime.now(), lines=_lines(head), bytes=len(head))
        results.append(UnitResult(source, events if source is parts[0] else [], found))
    return results


def _lines(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def _state(source: Source) -> os.stat_result | None:
    """A regular file's stat, to tell whether it changed while it was read (None otherwise)."""
    if source.path is None or source.stream is not None:
        return None
    try:
        info = os.stat(source.path)
    except OSError:
        return None
    return info if stat.S_ISREG(info.st_mode) else None


def _changed(before: os.stat_result | None, after: os.stat_result | None) -> str | None:
    """How a file changed between its opening and the end of its reading: written to,
    truncated, grown or replaced (what was read is then a part of no one version of it)."""
    if before is None:
        return None
    if after is None or (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino):
        return "the file was replaced or removed while it was read"
    if (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns):
        return None
    what = GREW if after.st_size > before.st_size else "the file shrank"
    if after.st_size == before.st_size:
        what = "the file was written to"
    return (
        f"{what} while it was read ({before.st_size:,} bytes when opened, "
        f"{after.st_size:,} at the end)"
    )


def _document_result(
    source: Source,
    document: Document,
    data: bytes,
    vocab: Callable[[], Vocab],
    options: ScanOptions,
    spill: Path | None = None,
) -> UnitResult:
    """A whole token-stream input: explain's diagnosis of each stream as events at the line
    it starts on; with a `spill`, written out a batch at a time as they are made (a JSONL of
    60,000 id lists held them all: 344 MiB)."""
    from harmony_doctor.scan.findings import diagnosis_events
    from harmony_doctor.scan.spill import BATCH, write_batch

    label = source.label
    final = EventSink([label], options, None, vocab, None).final
    events: list[ScanEvent] = []
    written: list[tuple[str, str | None]] = []
    count = 0
    for diagnosis, line in document.diagnoses:
        place = Place(line, None, None)
        events += final(diagnosis_events(diagnosis.input, diagnosis, vocab(), label, place, None))
        if spill is not None and len(events) >= BATCH:
            written.append((write_batch(events, spill), None))
            count, events = count + len(events), []
    found = SourceScan(label, datetime.now(), lines=document.lines, bytes=len(data))
    if spill is None or not written:
        return UnitResult(source, events, found)  # held (few): scan_unit writes them out
    if events:
        written.append((write_batch(events, spill), None))
    return UnitResult(source, [], found, spill=EventSpill(tuple(written), count + len(events)))


def _vocab_loader(path: Path | None) -> Callable[[], Vocab]:
    """The vocabulary, located and loaded on the first replay of a source only (locating it
    again for every completion cost about a tenth of a scan)."""

    from harmony_doctor.harmony.vocab import load_vocab

    return functools.cache(lambda: load_vocab(path))


def _clean_check(vocab: Callable[[], Vocab], options: ScanOptions) -> CleanStreams | None:
    """What settles a completion during the scan, so that clean ones are counted, not kept:
    our replay's verdict, remembered by shape; the vocabulary loads with the first completion
    (None with --verify-clean: openai-harmony judges every stream, so every one is kept)."""
    if options.verify_clean:
        return None
    from harmony_doctor.streams.clean import CleanStreams

    return CleanStreams(vocab, options.role)


def file_scan(result: UnitResult, options: ScanOptions, origin: str) -> FileScan:
    """One source's report, events (marked with their origin as they left the scan) and
    request counts, marked with their origin."""
    label = result.source.label
    found = result.found
    if found is None:
        return FileScan((), (), FileReport(label, "skipped", result.error, 0, 0, 0))
    status, reason, lines = read_status(found, result.changed)
    failures, cut = result.failures, found.cut_lines
    report = FileReport(label, status, reason, found.bytes, lines, failures, cut)
    report = replace(report, python_lines=found.python_lines, rust_declined=found.declined)
    return FileScan(tuple(result.events), tuple(_tallies(found, origin)), report, result.spill)


def _reference_time(source: Source, now: datetime | None) -> datetime:
    if source.path is not None:
        try:
            return datetime.fromtimestamp(source.path.stat().st_mtime)
        except OSError:
            pass
    return now or datetime.now()


def _tallies(found: SourceScan, origin: str) -> list[RequestTally]:
    """Requests per (pid, hour), every way this source counted them: access lines, `Received
    request` lines and the completions it logged. Which one a rate uses is decided per process
    over all its files (scan/summary.py counted_tallies), never added up, never per part."""
    kinds = [
        (kind, counts)
        for kind, counts in (
            ("access", found.requests),
            ("received", found.received),
            ("completions", found.completed),
        )
        if counts
    ]
    if not kinds:
        return []
    from harmony_doctor.models import RequestTally  # loads where requests were counted

    return [
        RequestTally(found.label, pid, found.server, hour, n, origin, kind)
        for kind, counts in kinds
        for (pid, hour), n in sorted(counts.items(), key=lambda kv: str(kv[0]))
    ]
