"""Log wrappers (Docker, CRI, journald, Vector/Promtail/Loki, logcli) removed while streaming.

Production logs are often stored inside a wrapper: one JSON record or one prefixed line per
line the server wrote. `Unwrapper` turns the bytes of such a file (already decompressed and
UTF-8: see sources.open_binary) into the inner text, in chunks, with each inner line's wrapper
metadata. Each line is classified on its own, so a file that mixes wrappers (or wrapped and
plain lines) is read too; plain lines pass through byte for byte.

Supported, each recognised by its shape, never by a file name:
  docker     {"log":"...\\n","stream":"stderr","time":"..."}  (records split at 16 KiB, with no
             trailing newline in "log", are rejoined per stream)
  cri        <RFC3339Nano> stdout|stderr P|F <text>             (P pieces rejoined per stream)
  journal    journalctl -o json (MESSAGE a string or a byte array), -o short (and -precise),
             -o short-iso, with or without the host (--no-hostname) (indented continuation
             lines of multi-line messages included)
  json       Vector / Promtail / Fluent Bit / logcli --output=jsonl: a "message", "line" or "log"
             field beside a timestamp, labels, host or stream field
  logcli     logcli's default output `<RFC3339> {labels} <line>`
  loki       a Loki query_range / query API response (one JSON document, whole or pretty-printed;
             values put in time order)

Per inner line: the wrapper's time as a canonical stamp (scan core forms: b"YYYY-MM-DD HH:MM:SS"
in UTC, or b"MM-DD HH:MM:SS" for syslog times without a year), pid, host, and the line of the
wrapped file where the line starts (a rejoined record starts at its first piece). The wrapper's
time is for lines without a time of their own, and only until the log has stamped a line itself:
from then on every line is on the log's own clock (a line without a stamp takes the last one
before it, as unwrapped), so that failures and requests are never placed on two clocks.

Speed: a reader that takes a line's own stamp and pid before its wrapper's (the scan:
`own_stamps_first`) needs no metadata for a line in the log's own clock but a journal's pid
where the line names none; then whole chunks of Docker, CRI and journald records are unwrapped
in Rust (native.unwrap_records), and the line-by-line reader here is the reference it is
tested equal to (tests/inputs/test_native_records.py). Anything it declines is read here.

Memory: with a line cap (scan: files.MAX_LINE), one partial line (capped near twice the cap),
one partial record per stream (capped at the cap; `cut_lines` counts the lines cut), and the
line map (one entry per change of the line offset; `LineMap.forget` drops the entries a consumer
no longer needs). Without a cap (explain, decode: inputs/reader.py, which bounds the whole
input) lines are kept whole. A Loki API document is parsed whole, up to DOCUMENT_LIMIT.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from harmony_doctor.inputs.json_records import Record, json_record, pid_of, text_or_none
from harmony_doctor.inputs.line_map import LineMap
from harmony_doctor.inputs.log_words import CRI_PIECE, CRI_STREAMS, CRI_WHOLE, MONTHS, either
from harmony_doctor.inputs.loki import document_start, loki_lines
from harmony_doctor.inputs.timestamps import (
    HEAD,
    canonical_epoch,
    canonical_syslog,
    canonical_utc,
    own_stamp,
)
from harmony_doctor.lazy_regex import Pattern
from harmony_doctor.native import chunk_lines, starts_like_wrapped, unwrap_records

DOCUMENT_LIMIT = 256 * 1024 * 1024  # a Loki API response is parsed whole up to this size
# White space held while the first bytes decide whether the input is one JSON document; past
# this it is read as lines (a file of blank lines was held whole, then read line by line at its
# end: about 93 bytes a line)
UNDECIDED_LIMIT = 64 * 1024
# The bytes of a line's start that tell whether it may be wrapped (native.starts_like_wrapped:
# the longest start it looks for is an ISO date and its T, `2026-11-27T`), and the first bytes
# of those starts (`{`, `-- `, a digit, a month): a line starting with another byte is plain
DECIDED = 11
# Lines of a chunk read one by one before the rest of it may go to Rust: a log's own clock
# starts on its first stamped line, within these as a rule
CLOCK_LINES = 64
CLOCK_BYTES = 16 * 1024  # a smaller chunk is read one line at a time, as a whole
FIRST_BYTES = frozenset(b"{-0123456789" + bytes(ord(month[0]) for month in MONTHS))


class LineMeta(NamedTuple):
    """What the wrapper said about one inner line (a NamedTuple: one is made per wrapped line,
    and a frozen dataclass costs a scan's start its class)."""

    line: int  # 1-based line number in the unwrapped stream
    source_line: int  # 1-based line of the wrapped file where this line starts
    stamp: bytes | None  # canonical stamp of the wrapper's time
    pid: int | None
    host: str | None
    wrapper: str  # docker, cri, journal, json, logcli, loki

    def core(self) -> tuple[int, bytes | None, int | None]:
        """The entry the scan core's `feed(data, meta)` takes."""
        return (self.line, self.stamp, self.pid)


@dataclass(frozen=True)
class Unwrapped:
    """A piece of the unwrapped stream: lines, the last of which may go on in the next piece
    (a plain line is handed on as it arrives, once its start shows it is not wrapped; the
    very last line of the stream may lack its newline)."""

    data: bytes
    meta: tuple[LineMeta, ...]  # one per wrapped line in `data`; plain lines have none
    lines: int  # the newlines in `data` (counted once, where the lines were found)

    def core_meta(self) -> list[tuple[int, bytes | None, int | None]]:
        """Entries for Core.feed: lines with a wrapper stamp or pid, sorted by line."""
        return [m.core() for m in self.meta if m.stamp is not None or m.pid is not None]


_ISO = rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)"
_CRI_STREAMS = either(CRI_STREAMS).encode()
_CRI_TAGS = either((CRI_PIECE, CRI_WHOLE)).encode()
_CRI = Pattern(rb"^(" + _ISO + rb") (" + _CRI_STREAMS + rb") (" + _CRI_TAGS + rb")(?: |$)")
# The host (left out by `journalctl --no-hostname`) is a word as the identifier is, without `:`
# or `[`: an identifier with its pid is never read as a host (`ollama[1914]:`), nor the text
# after it as an identifier (`time=2025-08-20T09`, cutting off the line's own date).
_SHORT = Pattern(
    rb"^(?:(" + either(MONTHS).encode() + rb") ([ \d]\d) (\d\d:\d\d:\d\d)(?:\.\d+)?"
    rb"|(" + _ISO + rb")) (?:([^\s:\[]+) )?([^\s:\[]+)(?:\[(\d+)\])?: ?"
)
_LOGCLI = Pattern(rb"^(" + _ISO + rb") (\{[^{}]*\}) ")
_JOURNAL_NOTE = Pattern(
    rb"^-- (?:Boot [0-9a-f]+|Reboot|Logs begin at |Journal begins at |No entries|Journal ).*--?$"
)


class _Partial:
    """The pieces of one split line read so far (CRI `P` lines, Docker's 16 KiB pieces)."""

    __slots__ = ("cut", "host", "parts", "pid", "size", "source_line", "stamp", "wrapper")

    def __init__(
        self, source_line: int, stamp: bytes | None, pid: int | None, host: str | None, wrapper: str
    ) -> None:
        self.source_line = source_line
        self.stamp = stamp
        self.pid = pid
        self.host = host
        self.wrapper = wrapper
        self.parts: list[bytes] = []
        self.size = 0
        self.cut = False  # longer than the cap: only its start is kept


class Unwrapper:
    """Wrapped bytes in, inner text bytes and per-line metadata out, in chunks.

    Usage: `out = u.feed(chunk)` for each chunk, then `u.finish()`; then `u.source_line(n)`
    gives the wrapped file's line of unwrapped line n. `u.wrappers` counts the wrapped lines
    seen per wrapper (empty for a plain file); `u.newlines` the newlines fed.

    Each chunk fed is searched for newlines once (native.chunk_lines): its count is the
    wrapped file's lines, and, when no line in it starts like a wrapped one, the count of the
    unwrapped piece it passes through as it is. A plain chunk is handed on as the very object
    fed, not copied: the line it ends with goes with it when its first bytes (DECIDED) show
    that it is plain, and the next piece begins with that line's rest.
    """

    def __init__(self, max_line: int | None = None, own_stamps_first: bool = False) -> None:
        self.lines = LineMap()
        # None: lines are read whole (a whole-input reader bounds the input instead); a cap
        # (scan's MAX_LINE) keeps that much of a longer line, and counts the line in `cut_lines`
        self.max_line = max_line
        # The reader takes a line's own stamp before the wrapper's (the scan does; explain
        # shows the wrapper's time). Then, once the log keeps its own clock, the wrapper's
        # time says nothing a line does not, and chunks of whole Docker/CRI records are
        # unwrapped in Rust with no metadata per line (`_records`).
        self.own_stamps_first = own_stamps_first
        self.cut_lines = 0
        self.python_lines = 0  # lines read one by one in `_lines_into` (not by Rust, not plain)
        self.wrappers: Counter[str] = Counter()
        self.newlines = 0  # newlines fed (the wrapped file's lines, but for an unended last)
        self._tail = b""  # the partial wrapped line at the end of the last chunk (not handed on)
        self._open = 0  # bytes of a plain line already handed on before `_tail` (0: none)
        self._held: list[bytes] = []  # and the chunks after it, without a newline (not joined:
        self._held_size = 0  # joining them chunk after chunk would cost the square of a line)
        self._skipping = False  # inside a line longer than twice the cap
        self._source = 0  # wrapped lines read
        self._inner = 0  # unwrapped lines written
        self._partials: dict[str, _Partial] = {}
        self._indent: tuple[int, Record] | None = None  # journal short: continuation lines
        self._document: list[bytes] | None = None  # buffering a Loki API response
        self._document_size = 0
        self._started = False
        self._finished = False
        self._last_plain = False  # the last line written was a plain one
        self._own_clock = False  # a wrapped line carried a stamp of its own

    def source_line(self, line: int) -> int:
        return self.lines.source_line(line)

    def feed(self, data: bytes) -> Unwrapped:
        """The unwrapped lines completed by this chunk of the wrapped file."""
        if self._finished:
            raise ValueError("feed after finish")
        count, wrapped = chunk_lines(data)
        self.newlines += count
        facts: tuple[int, bool] | None = (count, wrapped)
        if not self._started:
            # Decide whether this is one JSON document from its first bytes, whatever the
            # chunking: wait for enough of them.
            self._tail += data
            head = self._tail.lstrip()
            if len(head) < 16 and b"\n" not in head and len(self._tail) < UNDECIDED_LIMIT:
                return _EMPTY
            data, self._tail = self._tail, b""
            self._start(data)
            facts = None  # `data` holds the bytes held before it too
        if self._document is not None:
            return self._buffer_document(data)
        return self._feed_lines(data, facts)

    def _start(self, data: bytes) -> None:
        self._started = True
        if document_start(data):
            self._document = []

    def finish(self) -> Unwrapped:
        """The end of the input: partial lines and split records left over come out."""
        if self._finished:
            return _EMPTY
        self._finished = True
        if not self._started:
            data, self._tail = self._tail, b""
            self._start(data)
            if self._document is None:
                # lines, as a chunk fed after the start is read (a blank or short input too)
                return self._concat(self._feed_lines(data), self._flush())
            self._document.append(data)
        if self._document is not None:
            document, self._document = b"".join([*self._document, self._tail]), None
            self._tail = b""
            loki = loki_lines(document)
            if loki is not None:
                return self._emit_loki(loki)
            return self._concat(self._feed_lines(document), self._flush())
        return self._flush()

    # -- lines -----------------------------------------------------------------------------

    def _feed_lines(self, data: bytes, facts: tuple[int, bool] | None = None) -> Unwrapped:
        """`facts`: chunk_lines(data), when known. The partial line before `data` holds no
        newline, so the complete lines it ends are as many, and start at the same places but
        the first."""
        if self._skipping:
            newline = data.find(b"\n")
            if newline < 0:
                return _EMPTY
            self._skipping = False  # the cut line ends here (it was counted when cut)
            data = data[newline + 1 :]
            facts = None
        if (facts[0] == 0) if facts is not None else (b"\n" not in data):  # the line goes on
            self._held.append(data)
            self._held_size += len(data)
            if self.max_line is None or self._held_size <= 2 * self.max_line + 4096:
                return _EMPTY
            data = b""
        if self._tail or self._held:  # joined only when there is a line begun before `data`
            data = b"".join((self._tail, *self._held, data))  # one copy of a long line, not two
            self._tail, self._held, self._held_size = b"", [], 0
        end = data.rfind(b"\n") + 1
        if end:
            out = self._lines(data, end, facts)
        else:
            out, self._tail = _EMPTY, data
        if self.max_line is not None and self._open + len(self._tail) > 2 * self.max_line + 4096:
            # too long to be a record (JSON escapes double a text at most): a plain, cut line
            cut = self._tail[: self.max_line - self._open] + b"\n"
            self._tail, self._skipping = b"", True
            self.cut_lines += 1
            if self._open:
                self._open_line_ends()
                out = self._concat(out, Unwrapped(cut, (), 1))
            else:
                out = self._concat(out, self._lines(cut, len(cut)))
        return out

    def _flush(self) -> Unwrapped:
        parts: list[bytes] = []  # one line each, ending with its newline
        meta: list[LineMeta] = []
        self._tail += b"".join(self._held)
        self._held, self._held_size = [], 0
        unended = 0
        if self._open:  # the rest of a plain last line handed on in part, without a newline
            tail, self._tail = self._tail, b""
            self._open_line_ends()
            if tail:
                parts.append(tail)
                unended = 1
        elif self._tail:
            tail, self._tail = self._tail, b""
            self._lines_into(tail + b"\n", parts, meta)
            if self._last_plain:  # a plain last line without a newline stays without one
                parts[-1] = parts[-1][:-1]
                unended = 1
        for key in list(self._partials):
            self._close_partial(key, parts, meta)
        return Unwrapped(b"".join(parts), tuple(meta), len(parts) - unended)

    def _lines(self, data: bytes, end: int, facts: tuple[int, bool] | None = None) -> Unwrapped:
        """The lines of `data` up to `end` (just past its last newline), the first of which
        may be the rest of a plain line handed on before; what follows `end` (the start of a
        line) is handed on too if it shows it is plain, else kept in `_tail`. `facts`: the
        newlines in `data`, and whether a line after the first starts like a wrapped one
        (chunk_lines of the chunk that ended them), when known."""
        if not self._partials and self._indent is None:
            count, wrapped = facts if facts is not None else chunk_lines(data)
            if not wrapped and (self._open or not starts_like_wrapped(data)):
                # nothing wrapped here: the chunk passes through, without a copy when its
                # last line is handed on too
                self.lines.add(self._inner + 1, self._source + 1, count)
                self._inner += count
                self._source += count
                if end < len(data) and not self._plain_start(data, end):
                    self._open, self._tail = 0, data[end:]
                    return Unwrapped(data[:end], (), count)
                self._open = len(data) - end
                return Unwrapped(data, (), count)
        self._tail = data[end:]
        if not self._open and self.own_stamps_first and not self._partials:
            if self._own_clock:
                body = data[:end]
                records = None if self._continued(body) else unwrap_records(body)
                if records is not None:
                    self._indent = None  # the first line does not go on the journal line above
                    return self._records(body, records)
            elif end > CLOCK_BYTES:  # a large chunk before the log's own clock
                return self._until_own_clock(data, end)
        parts: list[bytes] = []  # one line each, ending with its newline
        meta: list[LineMeta] = []
        start = 0
        if self._open:
            start = data.index(b"\n") + 1
            self._open_line_ends()
            parts.append(data[:start])
        self._lines_into(data, parts, meta, start, end)
        return Unwrapped(b"".join(parts), tuple(meta), len(parts))

    def _until_own_clock(self, data: bytes, end: int) -> Unwrapped:
        """A chunk before the log's own clock: its first CLOCK_LINES lines one by one, and the
        rest as any chunk is read (by Rust, once those lines started the log's own clock)."""
        stop = 0
        for _ in range(CLOCK_LINES):
            stop = data.index(b"\n", stop) + 1
            if stop == end:
                break
        parts: list[bytes] = []
        meta: list[LineMeta] = []
        self._lines_into(data, parts, meta, 0, stop)
        if not self._own_clock:  # a log without stamps of its own: all of it, line by line
            self._lines_into(data, parts, meta, stop, end)
            stop = end
        first = Unwrapped(b"".join(parts), tuple(meta), len(parts))
        if stop == end:
            return first
        # The rest decides what becomes of the bytes after `end` (kept, or handed on as the
        # start of a plain line): kept already, they would be handed on twice.
        self._tail = b""
        return self._concat(first, self._lines(data[stop:], end - stop))

    def _continued(self, body: bytes) -> bool:
        """Whether the first of these lines goes on the journal line before them."""
        if self._indent is None:
            return False
        line = body[: body.find(b"\n")]
        line = line[:-1] if line.endswith(b"\r") else line
        return self._continuation(line, self._indent[0]) is not None

    def _records(
        self,
        body: bytes,
        unwrapped: tuple[bytes, tuple[int, int, int, int], list[tuple[int, int, str]]],
    ) -> Unwrapped:
        """Whole records unwrapped by native.unwrap_records, one inner line each, as
        `_lines_into` writes them but for the metadata, which holds what a line does not say
        itself: in the log's own clock a line without a stamp takes none from its wrapper
        (and one with a stamp is read by it first); a journal's pid is kept for the lines
        that name none."""
        text, counts, pids = unwrapped
        count = sum(counts)
        first, source = self._inner + 1, self._source + 1
        self.lines.add(first, source, count)
        self._inner += count
        self._source += count
        for wrapper, records in zip(("docker", "cri", "journal", "json"), counts, strict=True):
            if records:
                self.wrappers[wrapper] += records
        self._last_plain = False
        last = body[body.rfind(b"\n", 0, len(body) - 1) + 1 : -1]
        if counts[2] and not last.startswith(b"{"):  # a journal line may go on in the next
            self._classify(last[:-1] if last.endswith(b"\r") else last)  # chunk's indents
        meta = tuple(
            LineMeta(first + k, source + k, None, pid, None, wrapper) for k, pid, wrapper in pids
        )
        return Unwrapped(text, meta, count)

    def _plain_start(self, data: bytes, start: int) -> bool:
        """Whether the line from `start` to the end of `data` (unended) is a plain one,
        whatever follows: its first byte, or DECIDED bytes, do not start like a wrapped line (nor a
        journal continuation or record piece: only asked when none is open), and it is within
        the cap (a longer one is cut from what is kept)."""
        size = len(data) - start
        if size == 0 or (self.max_line is not None and size > self.max_line):
            return False
        if size < DECIDED:
            return data[start] not in FIRST_BYTES
        return not starts_like_wrapped(data[start : start + DECIDED])

    def _open_line_ends(self) -> None:
        """The plain line handed on in part ends (its rest is written by the caller)."""
        self._open = 0
        self._source += 1
        self._inner += 1
        self.lines.add(self._inner, self._source)
        self._last_plain = True

    def _lines_into(
        self,
        body: bytes,
        parts: list[bytes],
        meta: list[LineMeta],
        start: int = 0,
        stop: int | None = None,
    ) -> None:
        """The whole lines of body[start:stop] (`stop` just past a newline), one by one."""
        if stop is None:
            stop = len(body)
        while start < stop:
            end = body.index(b"\n", start)
            raw = body[start:end]
            start = end + 1
            self._source += 1
            self.python_lines += 1
            self._last_plain = False
            line = raw[:-1] if raw.endswith(b"\r") else raw
            if self._indent is not None:
                continued = self._continuation(line, self._indent[0])
                if continued is not None:
                    self._write(continued, self._source, self._indent[1], parts, meta)
                    continue
                self._indent = None
            record = self._classify(line)
            if record is None:
                if _JOURNAL_NOTE.match(line) is not None:
                    continue  # journalctl's own `-- Boot ... --` lines: not the server's
                self._inner += 1
                self.lines.add(self._inner, self._source)
                parts.append(raw + b"\n")
                self._last_plain = True
                continue
            self.wrappers[record.wrapper] += 1
            self._take(record, parts, meta)

    @staticmethod
    def _continuation(line: bytes, width: int) -> bytes | None:
        """A journalctl -o short continuation: indented by the width of the prefix above."""
        if len(line) > width and not line[:width].strip(b" "):
            return line[width:]
        return None

    def _take(self, record: Record, parts: list[bytes], meta: list[LineMeta]) -> None:
        key = record.key
        partial = self._partials.get(key) if key is not None else None
        if partial is None and (record.complete or key is None):
            self._write(record.text, self._source, record, parts, meta)
            return
        if partial is None:
            partial = _Partial(self._source, record.stamp, record.pid, record.host, record.wrapper)
            self._partials[key] = partial  # type: ignore[index]
        room = len(record.text) if self.max_line is None else self.max_line - partial.size
        if room > 0:  # longer lines are cut at the cap: the scan core looks no further
            partial.parts.append(record.text[:room])
            partial.size += min(room, len(record.text))
        if room < len(record.text) and not partial.cut:
            partial.cut = True
            self.cut_lines += 1
        if record.complete:
            self._close_partial(key, parts, meta)  # type: ignore[arg-type]

    def _close_partial(self, key: str, parts: list[bytes], meta: list[LineMeta]) -> None:
        p = self._partials.pop(key)
        first = Record(b"".join(p.parts), True, key, p.stamp, p.pid, p.host, p.wrapper)
        self._write(first.text, p.source_line, first, parts, meta)

    def _write(
        self,
        text: bytes,
        source_line: int,
        record: Record,
        parts: list[bytes],
        meta: list[LineMeta],
    ) -> None:
        for inner in text.split(b"\n"):
            self._inner += 1
            self.lines.add(self._inner, source_line)
            parts.append(inner + b"\n")
            stamp = record.stamp
            if stamp is not None:
                # One clock per log: once the log has stamped a line itself, a line without a
                # stamp of its own takes the last one before it, as it would unwrapped, never
                # the wrapper's (which may run hours apart: journald in UTC, the log local).
                if own_stamp(inner[:HEAD]) is not None:
                    self._own_clock = True
                elif self._own_clock:
                    stamp = None
            meta.append(
                LineMeta(self._inner, source_line, stamp, record.pid, record.host, record.wrapper)
            )

    def _classify(self, line: bytes) -> Record | None:
        first = line[:1]
        if first == b"{":
            return json_record(line)
        if first.isdigit():
            match = _CRI.match(line)
            if match is not None:
                text = line[match.end() :]
                stamp = canonical_utc(match[1].decode())
                key = "cri:" + match[2].decode()
                return Record(text, match[3] == CRI_WHOLE.encode(), key, stamp, None, None, "cri")
            match = _LOGCLI.match(line)
            if match is not None:
                stamp = canonical_utc(match[1].decode())
                return Record(line[match.end() :], True, None, stamp, None, None, "logcli")
        match = _SHORT.match(line)
        if match is None:
            return None
        if match[1] is not None:
            stamp = canonical_syslog(match[1].decode(), match[2].decode(), match[3].decode())
        else:
            stamp = canonical_utc(match[4].decode())
        pid = int(match[7]) if match[7] is not None and len(match[7]) <= 18 else None
        record = Record(
            line[match.end() :],
            True,
            None,
            stamp,
            pid,
            match[5].decode(errors="replace") if match[5] is not None else None,
            "journal",
        )
        self._indent = (match.end(), record)
        return record

    # -- Loki API documents ----------------------------------------------------------------

    def _buffer_document(self, data: bytes) -> Unwrapped:
        assert self._document is not None
        self._document.append(data)
        self._document_size += len(data)
        if self._document_size <= DOCUMENT_LIMIT:
            return _EMPTY
        document, self._document = b"".join(self._document), None  # too large: read as lines
        return self._feed_lines(document)

    def _emit_loki(self, values: list[tuple[int, bytes, int, dict[str, Any]]]) -> Unwrapped:
        parts: list[bytes] = []
        meta: list[LineMeta] = []
        for ts, text, source_line, labels in values:
            self.wrappers["loki"] += 1
            host = labels.get("host") or labels.get("hostname") or labels.get("instance")
            stamp = canonical_epoch(ts, 1_000_000_000)
            record = Record(text, True, None, stamp, pid_of(labels), text_or_none(host), "loki")
            self._write(text, source_line, record, parts, meta)
        return Unwrapped(b"".join(parts), tuple(meta), len(parts))

    @staticmethod
    def _concat(a: Unwrapped, b: Unwrapped) -> Unwrapped:
        if not a.data and not a.meta:
            return b
        if not b.data and not b.meta:
            return a
        return Unwrapped(a.data + b.data, a.meta + b.meta, a.lines + b.lines)


_EMPTY = Unwrapped(b"", (), 0)


def unwrap(chunks: Iterable[bytes]) -> Iterator[Unwrapped]:
    """Every piece of the unwrapped stream of `chunks` (see Unwrapper for the line map)."""
    unwrapper = Unwrapper()
    for chunk in chunks:
        out = unwrapper.feed(chunk)
        if out.data:
            yield out
    out = unwrapper.finish()
    if out.data:
        yield out


def unwrap_text(data: bytes) -> tuple[bytes, Unwrapper]:
    """A whole input unwrapped at once; the Unwrapper gives source lines and wrappers seen."""
    unwrapper = Unwrapper()
    first = unwrapper.feed(data)
    last = unwrapper.finish()
    return first.data + last.data, unwrapper
