"""One source's bytes -> SourceScan: the byte-level core's windows, id lines and tallies read.

The byte work (finding anchor lines, cutting context windows, tallying request lines per
(pid, hour) exactly) is the scan core's (scan/core.py: Rust when built, else the Python
reference; `HARMONY_DOCTOR_NATIVE=0` forces the reference). This module feeds it the source's
text, unwrapped (Docker, CRI, journald...: inputs/wrappers.py), and interprets what it returns:
windows go through the extractor `explain` uses, id lines through the vLLM record parser, and
tallies become request counts per (pid, hour) with the year of year-less stamps inferred.

Reading runs in its own thread (decompression releases the GIL, and so does the Rust core), so
one large compressed file keeps two cores busy. Memory stays bounded: a few chunks in the
queue, the core's window state, and wrapper metadata for the last few MiB of lines.
"""

from __future__ import annotations

import re
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import islice
from typing import TYPE_CHECKING

from harmony_doctor.errors import InputError
from harmony_doctor.inputs.checks import CheckedLines, Checks
from harmony_doctor.inputs.files import MAX_LINE, Readable
from harmony_doctor.inputs.timestamps import HEAD, own_stamp
from harmony_doctor.inputs.wrappers import Unwrapped, Unwrapper
from harmony_doctor.logs.servers import server_in
from harmony_doctor.models import LogError
from harmony_doctor.native import reuse_large_buffers, use_native
from harmony_doctor.scan.completions import MAX_PENDING, CompletionReader, Diagnose
from harmony_doctor.scan.core import (
    AFTER,
    BEFORE,
    MAX_WINDOW,
    Batch,
    CoreLike,
    TallyKey,
    Window,
    own_pid,
)
from harmony_doctor.scan.cores import make_core
from harmony_doctor.scan.found import Clock, Mark, Place, SourceScan
from harmony_doctor.scan.threads import CHUNK, CORE_QUEUE, CoreThread, read_ahead
from harmony_doctor.streams.clean import CleanStreams

if TYPE_CHECKING:
    from harmony_doctor.logs.extract import _Extractor

ZEROED_RUN = 16  # NULs in a row that are a hole, not a quoted byte (as encodings.py decides)
# Wrapper metadata kept for lines this far behind the read position: windows reach back at most
# BEFORE + MAX_WINDOW bytes, plus the chunks the core has not settled yet, plus the chunks
# queued for (or being read by) the core's thread whose batches are not taken yet.
META_REACH = BEFORE + MAX_WINDOW + (3 + CORE_QUEUE + 1) * CHUNK
# Told, as the scan goes, the source so far and the lowest line of the input as given that any
# later finding can be on (scan/findings.py EventStream.advance): events below are final.
Settled = Callable[[SourceScan, int], None]


def scan_source(
    stream: Readable,
    label: str,
    reference: datetime,
    replay: bool,
    clean: CleanStreams | None = None,
    checks: Checks | None = None,
    diagnose: Diagnose | None = None,
    settled: Settled | None = None,
) -> SourceScan:
    """Scan one opened source to its end; damaged data stops it with `damage` set. The stream
    stays open (the caller closes it: a file held open keeps its inode while it is compared).
    `checks`: how far its compressed data passed its checks (files.open_checked); `diagnose`,
    `settled`: see scan_parts."""
    opener = (label, lambda: _Borrowed(stream))
    return scan_parts([opener], reference, replay, clean, [checks], diagnose, settled)


_NUL_RUN = re.compile(rb"\x00{%d,}" % ZEROED_RUN)


def zeroed_bytes(data: bytes) -> int:
    """Bytes of `data` in runs of at least ZEROED_RUN NULs: zeroed data, not text (a log may
    quote a NUL or two; a run that long is a hole). A run cut by a chunk's end counts from
    ZEROED_RUN bytes on either side."""
    return sum(len(m) for m in _NUL_RUN.findall(data))


class _Borrowed:
    """A stream read by the scan but closed by its owner."""

    def __init__(self, stream: Readable) -> None:
        self.stream = stream

    def read(self, size: int = -1, /) -> bytes:
        return self.stream.read(size)

    def close(self) -> None:
        pass


def scan_parts(
    parts: Sequence[tuple[str, Callable[[], Readable]]],
    reference: datetime,
    replay: bool,
    clean: CleanStreams | None = None,
    checks: Sequence[Checks | None] = (),
    diagnose: Diagnose | None = None,
    settled: Settled | None = None,
) -> SourceScan:
    """Scan the parts of one stream, (label, opener) each (rotated files, oldest first), as
    one stream labelled as its last part: a traceback, a streamed completion or a time cut by
    the rotation is read whole. Each part is opened when the one before it is read, and
    closed once read. A part that does not end with a newline ends its last line; damaged
    data, or a part that cannot be opened, ends that part only. `checks`, one per part (its
    opener fills it: files.open_binary), tells the lines read from data that did not pass its
    check: `unchecked_lines`. With more than one part, `parts` says what each
    held (its lines, bytes, requests, damage). `diagnose`: what a kept completion (one our
    replay does not find clean) holds, found when it is kept (`replayed`), so that its ids are
    not held to the end; None keeps the completions (`completions`). `settled`, if given, is
    told as the scan goes how far its findings are final (`starts` the parts' first lines)."""
    reuse_large_buffers()
    scanner = _SourceScanner(parts[-1][0], reference, replay, clean, diagnose, settled)
    return scanner.run(parts, checks)


@dataclass(frozen=True)
class _Read:
    """A window as read: its lines' heads (bytes), the time carried into it, its wrapper facts."""

    first: int
    last: int
    lines: list[bytes]  # each line's first HEAD bytes: all `_place` reads of a line
    stamp_before: bytes | None
    meta: dict[int, tuple[bytes | None, int | None]]


class _LineFacts:
    """What the wrapper said of each unwrapped line (its stamp and pid), and where each chunk
    started, for the lines a later window can still reach (bounded by META_REACH)."""

    def __init__(self, unwrapper: Unwrapper) -> None:
        self.unwrapper = unwrapper
        self.meta: dict[int, tuple[bytes | None, int | None]] = {}  # line -> stamp, pid
        self.marks: deque[tuple[int, int]] = deque()  # (unwrapped offset, first line) per chunk
        self.offset = 0  # unwrapped bytes fed to the core
        self.lines = 0  # unwrapped lines fed to the core

    def add(self, piece: Unwrapped) -> None:
        self.marks.append((self.offset, self.lines + 1))
        for m in piece.meta:
            if m.stamp is not None or m.pid is not None:
                self.meta[m.line] = (m.stamp, m.pid)
        self.offset += len(piece.data)
        self.lines += piece.lines

    def get(self, line: int) -> tuple[bytes | None, int | None]:
        return self.meta.get(line, (None, None))

    def forget(self) -> None:
        """Drop wrapper metadata and line-map runs no later window can reach."""
        while len(self.marks) > 1 and self.marks[1][0] <= self.offset - META_REACH:
            self.marks.popleft()
        keep = self.marks[0][1]
        if self.meta and min(self.meta) < keep:
            self.meta = {n: m for n, m in self.meta.items() if n >= keep}
        self.unwrapper.lines.forget(keep)


class _ErrorReader:
    """The core's windows through the extractor `explain` uses: each failure once, placed on
    the line of the source as given, with its time and process."""

    def __init__(self, out: SourceScan, facts: _LineFacts, clock: Clock) -> None:
        self.out = out
        self.facts = facts
        self.clock = clock
        self.extractor: _Extractor | None = None  # made at the first window: most sources have none
        self.fed_until = 0  # the last line fed to the extractor
        self.reach: deque[tuple[int, int]] = deque()  # (first hit line, last line) of windows
        self.seen: set[tuple[int, str]] = set()
        self.read: deque[_Read] = deque()  # the windows read lately, for the errors' `_place`
        self.window_lines = 0  # lines in `read`
        self.hits_from = 0  # lines below this are no longer looked up in `read`
        self.declined_from = 0  # logs.extract.declined() when the extractor was made

    def window(self, window: Window) -> None:
        if self.extractor is None:
            from harmony_doctor.logs.extract import _Extractor, declined

            self.declined_from = declined()
            self.extractor = _Extractor()
        extractor = self.extractor
        last = window.first_line + window.text.count(b"\n")
        self.reach.append((window.hit_lines[0], last))
        # Lines between two windows were not read: end what was open, as a blank line would
        # (fed with the window's lines, in one call).
        gap = window.first_line > self.fed_until + 1 and self.fed_until
        self._keep(window)
        # a window cut by MAX_WINDOW repeats context already read (never after a gap)
        skip = max(0, self.fed_until + 1 - window.first_line)
        if skip <= last - window.first_line:
            self.fed_until = last
            lines = _decoded(window.text, skip)
            first = window.first_line + skip
            if gap:
                lines.insert(0, "")
                first -= 1
            self._errors(extractor.feed_window(first, lines))

    def close(self) -> None:
        if self.extractor is not None:
            self._errors(self.extractor.close(self.fed_until))

    def declined(self) -> int:
        """Window lines the Rust reader or search declined in this source so far (counted as
        windows are read: one at a rotated part's end may count in the next part)."""
        if self.extractor is None:
            return 0
        from harmony_doctor.logs.extract import declined

        return declined() - self.declined_from

    def skip_to(self, keep: int) -> None:
        """No window reaches below `keep` any more: the extractor emits what no later window can
        repeat (logs.extract `skip_to`)."""
        if self.extractor is not None and keep > self.fed_until + 1:
            self._errors(self.extractor.skip_to(keep))

    def floor(self, keep: int) -> int:
        """The lowest (unwrapped) line an error still to come can be on: one the extractor holds
        (open or pending), else the last line fed or a later one (no window reaches below
        `keep`, the first line META_REACH keeps)."""
        held = [max(self.fed_until, keep)]
        extractor = self.extractor
        if extractor is not None:
            if extractor.open is not None:
                held.append(extractor.open.line.number)
            held.extend(p.error.line for p in extractor.pending)
        return min(held)

    def _keep(self, window: Window) -> None:
        """Keep the window's lines (and their wrapper facts) for `_place`: most lines of a
        window are context, so their time and pid are worked out only for the lines errors are
        on."""
        if self.window_lines > 100_000:  # the extractor holds an error back a few hundred lines
            self.hits_from = self.fed_until - 10_000
            while self.read and self.read[0].last < self.hits_from:
                self.window_lines -= len(self.read.popleft().lines)
        lines = _heads(window.text)
        last = window.first_line + len(lines) - 1
        span = range(window.first_line, last + 1)
        known = self.facts.meta
        meta = {n: known[n] for n in span if n in known} if known else {}
        self.read.append(_Read(window.first_line, last, lines, window.stamp_before, meta))
        self.window_lines += len(lines)

    def _place(self, line: int) -> Place | None:
        """The time and pid of a window line by the core's rules: its own stamp, else the
        wrapper's, else the last one before it (back to the window's `stamp_before`); its own
        pid, else the wrapper's. The newest window holding the line decides."""
        if line < self.hits_from:
            return None
        read = next((r for r in reversed(self.read) if r.first <= line <= r.last), None)
        if read is None:
            return None
        head = read.lines[line - read.first][:HEAD]
        wrapper_pid = read.meta.get(line, (None, None))[1]
        pid = own_pid(head)
        stamp = read.stamp_before
        for number in range(line, read.first - 1, -1):
            found = own_stamp(read.lines[number - read.first][:HEAD])
            found = found or read.meta.get(number, (None, None))[0]
            if found:
                stamp = found
                break
        return Place(line, self.clock.parse(stamp), pid if pid is not None else wrapper_pid)

    def _late_place(self, line: int) -> Place:
        """An error the extractor held back past its window: the wrapper's facts only."""
        stamp, pid = self.facts.get(line)
        return Place(line, self.clock.parse(stamp), pid)

    def _errors(self, errors: Iterator[LogError]) -> None:
        unwrapper = self.facts.unwrapper
        for error in errors:
            if not self._in_reach(error.line):
                continue
            key = (error.line, error.kind)
            if key in self.seen:
                continue
            self.seen.add(key)
            if len(self.seen) > 4 * MAX_PENDING:
                self.seen = {k for k in self.seen if k[0] >= error.line - 1000}
            place = self._place(error.line) or self._late_place(error.line)
            line = unwrapper.source_line(error.line)
            placed = Place(line, place.timestamp, place.pid)
            from harmony_doctor.models import LoggedFailure  # loads with the first failure

            self.out.errors.append((LoggedFailure.of(error, line), placed))

    def _in_reach(self, line: int) -> bool:
        """Whether `line` lies between a window's first hit and its end (errors the extractor
        finds in the context before a window's first hit belong to no hit)."""
        while len(self.reach) > 64:
            self.reach.popleft()
        # newest first: an error is most often in the window just read
        return any(first <= line <= last for first, last in reversed(self.reach))


def _decoded(text: bytes, skip: int) -> list[str]:
    """The lines of `text` after the first `skip`, each decoded from the window itself: no
    copy of the window whole, decoded or split (`text.decode().split("\\n")[skip:]`)."""
    view = memoryview(text)
    return [str(view[a:b], "utf-8", "replace") for a, b in islice(_spans(text), skip, None)]


def _heads(text: bytes) -> list[bytes]:
    """Each line's first HEAD bytes, without a copy of the whole line: a window of lines of
    mebibytes is held as kilobytes (it was held whole, and split whole, for `_place`)."""
    return [text[a : min(b, a + HEAD)] for a, b in _spans(text)]


def _spans(text: bytes) -> Iterator[tuple[int, int]]:
    """(start, end) of each line of `text` as `text.split(b"\\n")` cuts it."""
    start = 0
    while (end := text.find(b"\n", start)) >= 0:
        yield start, end
        start = end + 1
    yield start, len(text)


class _SourceScanner:
    """One source's scan, driven: bytes read ahead and unwrapped, the core fed in its thread,
    its batches handed to the error and completion readers, the tallies read at the end."""

    def __init__(
        self,
        label: str,
        reference: datetime,
        replay: bool,
        clean: CleanStreams | None,
        diagnose: Diagnose | None = None,
        settled: Settled | None = None,
    ) -> None:
        self.out = SourceScan(label, reference)
        self.settled = settled
        self.submitted: deque[int] = deque()  # unwrapped lines fed with each chunk, cumulated
        self.scanned = 0  # lines whose id lines the core has handed back
        self.replay = replay
        native = use_native()  # decided once: the environment is read at start only
        self.core: CoreLike = make_core(BEFORE, AFTER, ids=replay, native=native)
        self.unwrapper = Unwrapper(MAX_LINE, own_stamps_first=True)
        self.facts = _LineFacts(self.unwrapper)
        self.clock = Clock(reference)
        self.errors = _ErrorReader(self.out, self.facts, self.clock)
        self.completions = CompletionReader(
            self.out, self.unwrapper, self.clock, clean, native, diagnose
        )
        self.raw_tail = b""  # the last byte read (does the last line end with a newline?)

    def run(
        self,
        parts: Sequence[tuple[str, Callable[[], Readable]]],
        checks: Sequence[Checks | None] = (),
    ) -> SourceScan:
        self.core_thread = CoreThread(self.core)
        marks: list[Mark] = []
        damages: list[str | None] = []
        unchecked: list[int] = []
        zeroed: list[int] = []
        latin1: list[int] = []
        not_text: list[str | None] = []
        try:
            for index, (_, open_part) in enumerate(parts):
                before = self.out.zeroed
                damage, lines = self._read_part(open_part, checks[index] if checks else None)
                damages.append(damage)
                unchecked.append(lines)
                zeroed.append(self.out.zeroed - before)
                part_checks = checks[index] if checks else None
                latin1.append(part_checks.latin1_lines if part_checks is not None else 0)
                not_text.append(part_checks.not_text if part_checks is not None else None)
                if damages[-1] and self.raw_tail not in (b"", b"\n"):
                    self.completions.cut_by_damage.add(self.unwrapper.newlines + 1)
                if index < len(parts) - 1:
                    marks.append(self._end_part())
                    self.out.starts.append(marks[-1].lines)
            self._feed(self.unwrapper.finish())
            for batch in self.core_thread.batches(wait=True):
                self._take(batch, final=False)
        finally:
            self.core_thread.close()
        self._take(self.core.finish(), final=True)
        self.out.damage = damages[-1]
        self.out.unchecked_lines = sum(unchecked)
        self.out.latin1_lines = sum(latin1)
        self.out.not_text = next((reason for reason in not_text if reason), None)
        self._finish()
        self._drop_cut_failures()
        if len(parts) > 1:
            marks.append(self._mark(self.out.lines))
            self.out.parts = self._parts([name for name, _ in parts], marks, damages)
            for part, lines, nul, odd in zip(
                self.out.parts, unchecked, zeroed, latin1, strict=True
            ):
                part.unchecked_lines, part.zeroed, part.latin1_lines = lines, nul, odd
            for part, reason in zip(self.out.parts, not_text, strict=True):
                part.not_text = reason
            self.out.damage = next((d for d in damages if d), None)
        return self.out

    def _end_part(self) -> Mark:
        """A part read to its end: its last line ended, and everything it held counted."""
        if self.raw_tail not in (b"", b"\n"):
            self.raw_tail = b"\n"
            self._feed(self.unwrapper.feed(b"\n"))
        for batch in self.core_thread.batches(wait=True):
            self._take(batch, final=False)
        return self._mark(self.unwrapper.newlines)

    def _mark(self, lines: int) -> Mark:
        stats = self.core.stats()
        return Mark(
            lines,
            self.out.bytes,
            stats.cut_lines + self.unwrapper.cut_lines,
            self.unwrapper.python_lines,
            stats.access_lines,
            stats.received_lines,
            dict(stats.tallies),
            Counter(self.out.completed),
            self.errors.declined(),
        )

    def _parts(
        self, labels: list[str], marks: list[Mark], damages: list[str | None]
    ) -> list[SourceScan]:
        """What each part held: the differences between the marks at the parts' ends."""
        parts = []
        before = Mark(0, 0, 0, 0, 0, 0, {}, Counter())
        for label, mark, damage in zip(labels, marks, damages, strict=True):
            part = SourceScan(label, self.out.reference, server=self.out.server, damage=damage)
            part.lines = mark.lines - before.lines
            part.bytes = mark.bytes - before.bytes
            part.cut_lines = mark.cut_lines - before.cut_lines
            part.python_lines = mark.python_lines - before.python_lines
            part.declined = mark.declined - before.declined
            part.access_lines = mark.access_lines - before.access_lines
            part.received_lines = mark.received_lines - before.received_lines
            for key, n in mark.tallies.items():
                if n - before.tallies.get(key, 0):
                    self._tally(part, key, n - before.tallies.get(key, 0))
            part.completed = mark.completed - before.completed
            parts.append(part)
            before = mark
        return parts

    def _tally(self, out: SourceScan, key: TallyKey, n: int) -> None:
        kind, pid, hour = key
        target = out.requests if kind == "access" else out.received
        target[(pid, self.clock.hour(hour))] += n

    def _read_part(
        self, open_part: Callable[[], Readable], checks: Checks | None
    ) -> tuple[str | None, int]:
        """Open one part, read it to its end and close it: why it stopped early, if it did,
        and how many of its lines came from data that did not pass its check."""
        try:
            stream = open_part()
        except (InputError, OSError) as exc:
            return str(exc) or type(exc).__name__, 0
        try:
            return self._read(stream, checks)
        finally:
            stream.close()

    def _read(self, stream: Readable, checks: Checks | None) -> tuple[str | None, int]:
        """Read one stream to its end: why it stopped early, if damaged data stopped it, and
        how many of its lines came from data that did not pass its check."""
        checked = CheckedLines(checks, self.unwrapper.newlines)
        damage = None
        stop = threading.Event()
        for item in read_ahead(stream, stop):
            if isinstance(item, BaseException):
                if not isinstance(item, (OSError, EOFError, ValueError, InputError)):
                    raise item
                damage = str(item) or type(item).__name__
                break
            if not item:
                break
            self.out.bytes += len(item)
            if b"\0" in item:
                self.out.zeroed += zeroed_bytes(item)
            self.raw_tail = item[-1:]
            self._feed(self.unwrapper.feed(item))
            checked.read(item, self.unwrapper.newlines)
        unended = self.raw_tail not in (b"", b"\n")
        return damage, checked.unchecked(self.unwrapper.newlines + unended)

    def _feed(self, piece: Unwrapped) -> None:
        if not piece.data and not piece.meta:
            return
        self.facts.add(piece)
        self.core_thread.submit(piece.data, piece.core_meta() or None, piece.lines)
        self.submitted.append(self.facts.lines)
        for batch in self.core_thread.batches(wait=False):
            self._take(batch, final=False)
        self.facts.forget()
        if self.settled is not None:
            self._settle(self.settled)

    def _settle(self, settled: Settled) -> None:
        """Tell `settled` the lowest line of the input as given a later finding can be on: an
        error (ErrorReader.floor) or an id line past those the core handed back. In a wrapped
        input, the line before it, as mapped (the map only guesses lines not read yet, and
        keeps lines from `keep` on): one unwrapped line may be several lines of the input, or
        several unwrapped lines one; below `keep`, nothing is told yet."""
        keep = self.facts.marks[0][1] if self.facts.marks else 1
        self.errors.skip_to(keep)
        floor = min(self.errors.floor(keep), self.scanned + 1)
        if not self.unwrapper.wrappers:
            settled(self.out, floor)
        elif floor - 1 >= keep:
            settled(self.out, self.unwrapper.source_line(floor - 1))

    def _take(self, batch: Batch, final: bool) -> None:
        windows, id_lines = batch
        if not final:  # a chunk's batch: the core has read its lines
            self.scanned = self.submitted.popleft()
        # A window and the id lines of one call are independent: errors and completions are
        # events of their own, ordered by line when the events are assembled.
        for window in windows:
            self._note_server(window.text)
            self.errors.window(window)
        if self.replay:
            for id_line in id_lines:
                self._note_server(id_line.text)
                self.completions.id_line(id_line)
        if final:
            self.errors.close()

    def _finish(self) -> None:
        stats = self.core.stats()
        out = self.out
        wrapped = bool(self.unwrapper.wrappers)
        if wrapped:
            out.lines = self.unwrapper.newlines + (1 if self.raw_tail not in (b"", b"\n") else 0)
        else:
            out.lines = stats.lines
        out.cut_lines = stats.cut_lines + self.unwrapper.cut_lines  # cut once: by one or other
        out.python_lines = self.unwrapper.python_lines
        out.declined = self.errors.declined()
        out.access_lines = stats.access_lines
        out.received_lines = stats.received_lines
        for key, n in stats.tallies.items():
            self._tally(out, key, n)
        if out.server is None and stats.first_access_line is not None:
            self._note_server(stats.first_access_line)
        if out.damage is None:  # else requests still open were cut by the damage, not the server
            self.completions.close(out.lines)

    def _drop_cut_failures(self) -> None:
        """A failure on a line damaged data cut short is not diagnosed from half its words (a
        cut `Unexpected token 200012` reads as text where a message should start): it is
        counted, and the reason says so, as ids cut there are not called rejected."""
        cut = self.completions.cut_by_damage
        if cut:
            kept = [error for error in self.out.errors if error[1].line not in cut]
            self.out.cut_failures = len(self.out.errors) - len(kept)
            self.out.errors = kept

    def _note_server(self, text: bytes) -> None:
        if self.out.server is None:
            self.out.server = server_in(text.decode("utf-8", "replace"))
