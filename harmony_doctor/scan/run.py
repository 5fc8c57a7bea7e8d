"""Many log files -> failure events and request tallies -> aggregated patterns (polars).

Each source is read line by line (sources.py) and goes through three things at once: the
log extractor (logs.py, the same one `explain` uses, so scan finds what explain finds), the
replay of completions the log carries as token ids (vLLM `--enable-log-outputs`), and the
request counter (access lines, `Received request` lines) that turns counts into rates.
"""

from __future__ import annotations

import contextlib
import hashlib
import multiprocessing
import os
import re
import stat
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Literal

from harmony_doctor.diagnose import diagnose, replay_is_clean
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
from harmony_doctor.inputs.timestamps import parse_timestamp
from harmony_doctor.inputs.tokens import RequestStreams, VllmRecord
from harmony_doctor.models import LogError, ParseRole, RequestTally, ScanEvent, TokenInput
from harmony_doctor.scan import patterns
from harmony_doctor.scan.blocks import BEFORE, Hit, Scanner, SourceScan

if TYPE_CHECKING:
    import polars as pl

GROUP_KEYS = ("code", "kind", "pattern", "server", "harmony_version", "file", "pid", "day", "hour")
# Dimensions requests can be split by; other groups get the overall request count.
REQUEST_KEYS = ("file", "pid", "server", "day", "hour")


@dataclass(frozen=True)
class ScanOptions:
    replay: bool = True  # replay completions the log carries as token ids
    role: ParseRole = "assistant"
    redact: bool = False
    jobs: int = 1  # worker processes; files and ranges of large files are shared out
    vocab_path: Path | None = None
    verify_clean: bool = False  # also run openai-harmony on streams the replay finds clean


FileStatus = Literal["ok", "partial", "skipped"]


@dataclass(frozen=True)
class FileReport:
    """How one input went: read whole, read until damage, or not read at all."""

    path: str
    status: FileStatus
    reason: str | None
    bytes: int
    lines: int
    failures: int


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
        return tuple(f for f in self.files if f.status != "ok")


SPLIT_BYTES = 64 * 1024 * 1024  # plain files larger than this are scanned in ranges
POOL_BYTES = 16 * 1024 * 1024  # below this, starting worker processes costs more than it saves


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
    options: ScanOptions = ScanOptions(),
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
    events = list(_events(found, _vocab_loader(options.vocab_path), options))
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
        events.extend(_events(total, _vocab_loader(options.vocab_path), options))
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


def _events(
    found: SourceScan, vocab: Callable[[], Vocab], options: ScanOptions
) -> Iterator[ScanEvent]:
    for error, hit in found.errors:
        yield _log_event(error, hit, found, vocab)
    for inp, hit in found.completions:
        yield from _replayed(inp, hit, found, vocab, options)


MERGE_WINDOW = 200  # lines between a replayed fault and the traceback the server logged for it


def merge_duplicates(events: list[ScanEvent]) -> list[ScanEvent]:
    """Count each failure once: a logged error that a replayed completion of the same process
    also shows (same kind, same token, within MERGE_WINDOW lines) is folded into the replay."""
    logged = [e for e in events if e.source == "log"]
    used: set[int] = set()
    out: list[ScanEvent] = []
    for event in events:
        if event.source != "replay" or event.severity != "error":
            continue
        for index, other in enumerate(logged):
            if index in used or other.kind != event.kind or other.token_id != event.token_id:
                continue
            if other.pid is not None and event.pid is not None and other.pid != event.pid:
                continue
            if abs(other.line - event.line) <= MERGE_WINDOW:
                used.add(index)
                event_version = other.harmony_version
                out.append(replace(event, harmony_version=event_version, message=other.message))
                break
        else:
            out.append(event)
    merged = {id(e) for i, e in enumerate(logged) if i in used}
    rest = [
        e
        for e in events
        if id(e) not in merged and not (e.source == "replay" and e.severity == "error")
    ]
    return sorted([*out, *rest], key=lambda e: e.line)


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


def _replayed(
    inp: TokenInput,
    hit: Hit,
    found: SourceScan,
    vocab: Callable[[], Vocab],
    options: ScanOptions,
) -> Iterator[ScanEvent]:
    v = vocab()
    if not options.verify_clean and replay_is_clean(inp.tokens, v, options.role):
        return
    result = diagnose(inp, v, options.role)
    for finding in result.findings:
        raise_index = finding.raise_index
        token = None
        if finding.kind == "unexpected_token" and raise_index is not None:
            token = inp.tokens[raise_index] if raise_index < len(inp.tokens) else None
        remainder = None
        if finding.kind == "header_leftover" and finding.span is not None:
            remainder = v.decode(inp.tokens[finding.span[0] : finding.span[1]])
        yield ScanEvent(
            file=found.label,
            line=hit.line,
            timestamp=_iso(hit.timestamp),
            pid=hit.pid,
            server=found.server,
            harmony_version=None,
            kind=finding.kind,
            code=finding.code,
            severity=finding.severity,
            pattern=patterns.pattern_of(finding.kind, token, remainder),
            token_id=token,
            token_text=v.decode([token]) if token is not None else None,
            header_remainder=remainder,
            message=finding.harmony_error or finding.title,
            request_id=inp.request_id,
            origin_index=finding.origin_index,
            raise_index=raise_index,
            source="replay",
        )


def _iso(stamp: datetime | None) -> str | None:
    return stamp.isoformat() if stamp is not None else None


def _log_event(
    error: LogError, hit: Hit, found: SourceScan, vocab: Callable[[], Vocab]
) -> ScanEvent:
    stamp = parse_timestamp(error.timestamp, found.reference) if error.timestamp else None
    return ScanEvent(
        file=found.label,
        line=error.line,
        timestamp=_iso(stamp or hit.timestamp),
        pid=error.pid if error.pid is not None else hit.pid,
        server=error.server or found.server,
        harmony_version=error.harmony_version,
        kind=error.kind,
        code=error.code,
        severity=error.severity,
        pattern=patterns.pattern_of(
            error.kind, error.token, error.header_remainder, _role_word(error.message)
        ),
        token_id=error.token,
        token_text=vocab().decode([error.token]) if error.token is not None else None,
        header_remainder=error.header_remainder,
        message=error.message,
        source="log",
    )


def _role_word(message: str) -> str | None:
    _, found, word = message.partition("Unknown role: ")
    return word.strip() if found else None


def redact(event: ScanEvent) -> ScanEvent:
    """Model text (header remainders, leaked content) replaced by a short stable hash."""

    def digest(text: str | None) -> str | None:
        if text is None:
            return None
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:12]

    message = event.message
    if event.header_remainder and event.header_remainder in message:
        message = message.replace(event.header_remainder, digest(event.header_remainder) or "")
    elif event.kind in ("header_leftover", "markup_leak", "leaked_markup"):
        message = _redact_quoted(message, digest)
    return replace(event, header_remainder=digest(event.header_remainder), message=message)


_QUOTED_TEXT = re.compile(r'(Some\(|\[|raw=|: )(".*"|\'.*\'|.*)$', re.S)


def _redact_quoted(message: str, digest: Callable[[str | None], str | None]) -> str:
    match = _QUOTED_TEXT.search(message)
    if match is None:
        return message
    return message[: match.start(2)] + (digest(match.group(2)) or "")


# --- aggregation (polars) --------------------------------------------------------------------


def events_frame(events: Iterable[ScanEvent]) -> pl.DataFrame:
    import polars as pl

    rows = [e.__dict__ for e in events]
    schema = {
        "file": pl.Utf8,
        "line": pl.Int64,
        "timestamp": pl.Utf8,
        "pid": pl.Int64,
        "server": pl.Utf8,
        "harmony_version": pl.Utf8,
        "kind": pl.Utf8,
        "code": pl.Utf8,
        "severity": pl.Utf8,
        "pattern": pl.Utf8,
        "token_id": pl.Int64,
        "token_text": pl.Utf8,
        "header_remainder": pl.Utf8,
        "message": pl.Utf8,
        "request_id": pl.Utf8,
        "origin_index": pl.Int64,
        "raise_index": pl.Int64,
        "source": pl.Utf8,
    }
    frame = pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)
    return frame.with_columns(
        pl.col("timestamp").str.slice(0, 10).alias("day"),
        pl.col("timestamp").str.slice(0, 13).alias("hour"),
    )


SUMMARY_COLUMNS = ("count", "share", "requests", "rate", "first_seen", "last_seen", "example")


def summarize(result: ScanResult, by: tuple[str, ...]) -> pl.DataFrame:
    """One row per group: count, share, rate (when requests are known), first/last seen, example."""
    return summarize_frames(events_frame(result.events), requests_frame(result.requests), by)


def summarize_frames(
    frame: pl.DataFrame, requests: pl.DataFrame, by: tuple[str, ...]
) -> pl.DataFrame:
    """The summary of an events frame (scan's, or event files read back) and request counts.

    A rate only counts failures from files whose requests were counted: a log without access
    or request lines adds failures but no requests, and must not inflate anyone's rate.
    """
    import polars as pl

    total = frame.height
    if total == 0:
        return pl.DataFrame(
            schema={
                **{k: pl.Utf8 for k in by},
                "count": pl.Int64,
                "share": pl.Float64,
                "requests": pl.Int64,
                "rate": pl.Float64,
                "first_seen": pl.Utf8,
                "last_seen": pl.Utf8,
                "example": pl.Utf8,
            }
        )
    counted_files = requests["file"].unique().to_list() if requests.height else []
    frame = frame.with_columns(
        (pl.col("file") + ":" + pl.col("line").cast(pl.Utf8)).alias("example"),
        pl.col("file").is_in(counted_files).alias("counted"),
        *(pl.col(k).cast(pl.Utf8) for k in by),
    )
    grouped = (
        frame.group_by(list(by), maintain_order=True)
        .agg(
            pl.len().alias("count"),
            pl.col("counted").sum().alias("counted"),
            pl.col("timestamp").min().alias("first_seen"),
            pl.col("timestamp").max().alias("last_seen"),
            pl.col("example").first(),
        )
        .with_columns((pl.col("count") / total).alias("share"))
    )
    split = [k for k in by if k in REQUEST_KEYS]
    if requests.height == 0:
        grouped = grouped.with_columns(
            pl.lit(None, dtype=pl.Int64).alias("requests"),
            pl.lit(None, dtype=pl.Float64).alias("rate"),
        )
    elif split and len(split) == len(by):
        per_group = requests.group_by(split).agg(pl.col("count").sum().alias("requests"))
        grouped = grouped.join(per_group, on=split, how="left", nulls_equal=True)
    else:
        all_requests = int(requests["count"].sum())
        grouped = grouped.with_columns(pl.lit(all_requests, dtype=pl.Int64).alias("requests"))
    if requests.height:
        grouped = grouped.with_columns(
            pl.when((pl.col("requests") > 0) & (pl.col("counted") > 0))
            .then(pl.col("counted") / pl.col("requests"))
            .otherwise(None)
            .alias("rate")
        )
    columns = [*by, *SUMMARY_COLUMNS]
    return grouped.select(columns).sort("count", descending=True, maintain_order=True)


def counted_failures(result: ScanResult) -> int:
    """Failures in files whose requests were counted (the numerator of the overall rate)."""
    counted = {t.file for t in result.requests}
    return sum(1 for e in result.events if e.file in counted)


def requests_frame(tallies: Iterable[RequestTally]) -> pl.DataFrame:
    import polars as pl

    rows = [t.__dict__ for t in tallies]
    schema = {
        "file": pl.Utf8,
        "pid": pl.Int64,
        "server": pl.Utf8,
        "hour": pl.Utf8,
        "count": pl.Int64,
    }
    frame = pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)
    return frame.with_columns(
        pl.col("pid").cast(pl.Utf8), pl.col("hour").str.slice(0, 10).alias("day")
    )


def total_requests(result: ScanResult) -> int | None:
    """All requests counted, or None when the logs show none."""
    total = sum(t.count for t in result.requests)
    return total or None


def per_day(result: ScanResult) -> list[tuple[str, int]]:
    """(day, failures) in date order, for the chart."""
    days = Counter((e.timestamp or "")[:10] for e in result.events if e.timestamp)
    return sorted(days.items())
