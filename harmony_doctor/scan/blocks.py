"""One source's bytes -> failure events and request tallies, at block speed.

Logs are mostly lines that matter to nobody. The scanner never splits them: it searches
64 KiB blocks with one compiled pattern for the few things that matter (error vocabulary,
request lines, token-id lines) and materialises only the lines it hits. Around an error hit it
cuts a window of context (the traceback before it, wrapped continuation after it) and hands
that to the same extractor `explain` uses, so scan finds exactly what explain finds.

Memory stays bounded whatever the input: the buffer holds a block plus the context windows;
a line is only ever held whole up to sources.MAX_LINE bytes.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from harmony_doctor import logs
from harmony_doctor.errors import InputError
from harmony_doctor.inputs.sources import CHUNK, MAX_LINE, Readable
from harmony_doctor.inputs.timestamps import parse_timestamp
from harmony_doctor.inputs.tokens import RequestStreams, VllmRecord, parse_vllm_line
from harmony_doctor.models import LogError, TokenInput

BEFORE = 3 * 1024  # context bytes kept before an error line (the traceback)
AFTER = 1024  # context bytes read after its line (wrapped or multi-line messages)
MAX_PENDING = 10_000  # vLLM requests waiting for their last log line

# Literal anchors, found with bytes.find (memchr speed; Python's regex engine tries every
# alternative at every byte and is two orders of magnitude slower on this job). Error anchors
# are fragments of every failure message the extractor knows, in the case harmony and the
# servers print them, short enough that a wrapped message still holds one of them.
ERROR_ANCHORS = (
    b"HarmonyError",
    b"expecting start token",
    b"tokens remaining",
    b"nknown role",
    b"channel marker",
    b"Unexpected EOS",
    b"contain a role",
    b"decode header",
    b"vocab file",
    b"conversation JSON",
    b"tool call",
    b"parse input at pos",
    b"tags in the content",
)
# Harmony markup is only a failure where a server returned it as content; prompts logged with
# their markup are not (the extractor decides, but only such lines are worth a window).
MARKUP_ANCHOR = b"<|"
_CONTENT_FIELD = re.compile(
    rb"""(?:content|reasoning|text|output_text|name)["']?\s*[:=]\s*["']""", re.I
)
ANCHORS = (
    *((a, "error") for a in ERROR_ANCHORS),
    (MARKUP_ANCHOR, "markup"),
    (b"_token_ids", "ids"),
)
RECEIVED = b"Received request "
_ACCESS = re.compile(rb'"(?:POST|GET) /v1/(?:chat/completions|responses|completions)[ ?"]')
# Ollama's gin access lines: `[GIN] 2025/11/12 - 10:41:19 | 200 | 1.2s | ::1 | POST "/api/chat"`
_GIN_ACCESS = re.compile(rb'\| (?:POST|GET)\s+"/(?:api/chat|api/generate|v1/[a-z/]+)"')
_IDS = re.compile(rb"_token_ids\s*[:=]")
_PID = re.compile(rb"\bpid[=:]\s*(\d+)")
_STAMP = re.compile(
    rb"(?:19|20)\d\d-[01]\d-[0-3]\d[ T][0-2]\d:[0-5]\d:[0-6]\d"
    rb"|(?:INFO|ERROR|WARNING|DEBUG|CRITICAL|WARN)\s+[01]\d-[0-3]\d\s+[0-2]\d:[0-5]\d:[0-6]\d"
)
_SERVER_HINTS = (
    ("vllm", re.compile(rb"\(APIServer pid=|\[serving(?:_chat)?\.py:|vllm[/.]")),
    ("sglang", re.compile(rb"sglang|h11_impl\.py|tokenizer_manager")),
    ("lmdeploy", re.compile(rb"lmdeploy")),
)


@dataclass(frozen=True)
class Hit:
    """Something the scanner found, with the context it was found in."""

    line: int
    timestamp: datetime | None
    pid: int | None


@dataclass
class SourceScan:
    """Everything one source yields: errors, finished requests, and request counts."""

    label: str
    reference: datetime
    errors: list[tuple[LogError, Hit]] = field(default_factory=list)
    completions: list[tuple[TokenInput, Hit]] = field(default_factory=list)
    requests: Counter[tuple[int | None, str | None]] = field(default_factory=Counter)
    access_lines: int = 0
    received_lines: int = 0
    lines: int = 0
    cut_lines: int = 0
    server: str | None = None
    damage: str | None = None  # why the stream stopped early (damaged compressed data)
    bytes: int = 0
    replayed: int = 0  # completions replayed here (a request count when access lines lack)
    # Streaming records of a file scanned in ranges: joined in order by the caller.
    deferred: list[tuple[VllmRecord, Hit]] = field(default_factory=list)


class Scanner:
    """Feeds a Readable through the block search; see the module docstring."""

    def __init__(
        self,
        stream: Readable,
        label: str,
        reference: datetime,
        replay: bool,
        preamble: bytes = b"",
        length: int | None = None,
    ) -> None:
        """Scan `stream`; in range mode, `preamble` is context read before the range (hits
        there are not counted: the previous range has them) and `length` is the range's size
        (the stream goes on past it only as far as context windows need)."""
        self.stream = stream
        self.out = SourceScan(label, reference)
        self.replay = replay
        self.buffer = preamble
        # Line 1 is the range's first line; preamble lines get numbers <= 0.
        self.cursor = (0, 1 - preamble.count(b"\n"))  # (offset, line) last counted to
        self.stamp: tuple[int, datetime] | None = None  # last timestamp seen (abs offset)
        self.consumed = 0  # absolute offset of buffer[0]
        self.done_until = len(preamble)  # buffer offset up to which hits were handled
        self.start = len(preamble)  # absolute offset of the range's first byte
        self.end = None if length is None else len(preamble) + length  # absolute, exclusive
        self.defer_streams = length is not None
        self.error_until_line = 0  # error windows already cover lines up to here
        self.seen_errors: set[tuple[int, str]] = set()
        self.streams = RequestStreams()
        self.finished_requests: set[str] = set()
        self.last_ids_line = 0
        self._parsed: dict[bytes, datetime | None] = {}  # raw timestamp -> parsed
        self._hours: dict[datetime, str] = {}
        self._pids: dict[bytes, int | None] = {}  # line prefix -> its pid

    # -- driving --

    def run(self, on_progress: Callable[[int], None] | None = None) -> SourceScan:
        """Scan to the end; damaged compressed data stops the scan with `out.damage` set."""
        try:
            while not self._past_range() and self._read_more():
                self._search(final=False)
                if on_progress is not None:
                    on_progress(self.consumed + len(self.buffer))
        except (OSError, EOFError, ValueError) as exc:
            self.out.damage = str(exc) or type(exc).__name__
        self._search(final=True)
        self._finish()
        return self.out

    def _past_range(self) -> bool:
        return self.end is not None and self.consumed + len(self.buffer) >= self.end + AFTER

    def _range_end(self) -> int:
        """The range's end as a buffer offset (the buffer's end when there is no range)."""
        if self.end is None:
            return len(self.buffer)
        return max(0, min(len(self.buffer), self.end - self.consumed))

    def _search(self, final: bool) -> None:
        limit = len(self.buffer) if final else max(0, len(self.buffer) - AFTER)
        limit = min(limit, self._range_end())
        start = self.done_until
        if start < limit:
            self._count_requests(start, limit)
        for position, kind in self._anchors(start, limit):
            self._handle(position, kind)
        self.done_until = max(self.done_until, limit)
        if final:
            end = self._range_end()
            first = self.start - self.consumed
            tail = 1 if end > max(first, 0) and self.buffer[end - 1 : end] != b"\n" else 0
            self.out.lines = self._line_at(end) - 1 + tail
            self.out.bytes = self.consumed + end - self.start
            return
        self._trim(self.done_until)

    def _anchors(self, start: int, limit: int) -> list[tuple[int, str]]:
        """Every anchor occurrence in buffer[start:limit], in order."""
        found: list[tuple[int, str]] = []
        buffer = self.buffer
        for anchor, kind in ANCHORS:
            end = limit + len(anchor) - 1  # an anchor may start before the limit and end after
            at = buffer.find(anchor, start, end)
            while at >= 0:
                found.append((at, kind))
                at = buffer.find(anchor, at + 1, end)
        found.sort()
        return found

    def _trim(self, upto: int) -> None:
        """Drop what no later window can need: keep BEFORE bytes of context."""
        drop = max(0, upto - BEFORE)
        if drop <= 0:
            return
        line = self._line_at(drop)
        self.buffer = self.buffer[drop:]
        self.consumed += drop
        self.done_until -= drop
        self.cursor = (0, line)

    def _line_at(self, offset: int) -> int:
        """Line number of the byte at `offset` (counting forward from the cursor)."""
        at, line = self.cursor
        if offset < at:
            return line - self.buffer.count(b"\n", offset, at)
        line += self.buffer.count(b"\n", at, offset)
        self.cursor = (offset, line)
        return line

    # -- hits --

    def _line_bounds(self, position: int, need_whole: bool) -> tuple[int, int, bool]:
        start = self.buffer.rfind(b"\n", 0, position) + 1
        end = self.buffer.find(b"\n", position)
        while end < 0 and need_whole and len(self.buffer) - start <= MAX_LINE:
            more = self._read_more()
            if not more:
                end = len(self.buffer)
                break
            end = self.buffer.find(b"\n", position)
        if end < 0:
            end = len(self.buffer)
        cut = end - start > MAX_LINE
        return start, min(end, start + MAX_LINE), cut

    def _read_more(self) -> bool:
        chunk = self.stream.read(CHUNK)
        self.buffer += chunk
        return bool(chunk)

    def _context(self, start: int, end: int) -> Hit:
        line = self._line_at(start)
        text = self.buffer[start:end]
        pid_match = _PID.search(text, 0, 200)
        return Hit(
            line,
            self._timestamp_before(start, text),
            int(pid_match.group(1)) if pid_match else None,
        )

    def _timestamp_before(self, start: int, text: bytes) -> datetime | None:
        """The hit line's own timestamp, else the nearest one on the few lines before it."""
        own = _STAMP.search(text, 0, 120)
        if own is not None:
            return self._remember(self.consumed + start, own.group())
        line_end = start
        for _ in range(8):
            if line_end <= 0 or (self.stamp and self.stamp[0] - self.consumed >= line_end):
                break
            line_start = self.buffer.rfind(b"\n", 0, line_end - 1) + 1
            found = _STAMP.search(self.buffer, line_start, min(line_start + 120, line_end))
            if found is not None:
                return self._remember(self.consumed + line_start, found.group())
            line_end = line_start
        return self.stamp[1] if self.stamp is not None else None

    def _remember(self, offset: int, raw: bytes) -> datetime | None:
        stamp = self._parsed.get(raw)
        if stamp is None:
            stamp = parse_timestamp(raw.decode("ascii", "replace"), self.out.reference)
            if len(self._parsed) > 4096:
                self._parsed.clear()
            self._parsed[raw] = stamp
        if stamp is not None:
            self.stamp = (offset, stamp)
        return stamp

    def _hour(self, stamp: datetime | None) -> str | None:
        if stamp is None:
            return None
        hour = self._hours.get(stamp)
        if hour is None:
            hour = self._hours[stamp] = stamp.strftime("%Y-%m-%dT%H")
            if len(self._hours) > 4096:
                self._hours.clear()
        return hour

    def _count_requests(self, start: int, limit: int) -> None:
        """Request lines of buffer[start:limit], tallied by process and hour.

        Done in bulk: one regex pass for access lines with a `pid=` prefix, one for all of
        them, and the hour of the whole segment when it does not change inside it (the usual
        case); only a segment that crosses an hour is walked line by line.
        """
        buffer = self.buffer
        end = min(len(buffer), limit + 256)  # a request line may start before limit, end after
        self.out.received_lines += buffer.count(RECEIVED, start, limit + len(RECEIVED) - 1)
        positions = [m.start() for m in _ACCESS.finditer(buffer, start, end) if m.start() < limit]
        if b"[GIN]" in buffer[start:limit]:
            gin = _GIN_ACCESS.finditer(buffer, start, end)
            positions = sorted([*positions, *(m.start() for m in gin if m.start() < limit)])
        if not positions:
            return
        self.out.access_lines += len(positions)
        if self.out.server is None:
            first = buffer.rfind(b"\n", 0, positions[0]) + 1
            self._note_server(first, positions[0])
        opening = self._timestamp_at_line(positions[0])
        closing = self._timestamp_at_line(positions[-1])
        same_hour = self._hour(opening) == self._hour(closing)
        hour = self._hour(closing)
        rfind, find, pids = buffer.rfind, buffer.find, self._pids
        for position in positions:
            line_start = rfind(b"\n", 0, position) + 1
            close = find(b")", line_start, min(position, line_start + 64))
            prefix = buffer[line_start:close] if close >= 0 else b""
            pid = pids.get(prefix, -1)
            if pid == -1:  # a process prefix not seen yet: read its pid once
                at = prefix.find(b"pid=")
                digits = prefix[at + 4 :] if at >= 0 else b""
                pid = pids[prefix] = int(digits) if digits.isdigit() else None
                if len(pids) > 4096:
                    pids.clear()
            if not same_hour:
                hour = self._hour(self._timestamp_at_line(position))
            self.out.requests[(pid, hour)] += 1

    def _timestamp_at_line(self, position: int) -> datetime | None:
        start = self.buffer.rfind(b"\n", 0, position) + 1
        end = self.buffer.find(b"\n", position)
        return self._timestamp_before(start, self.buffer[start : end if end >= 0 else None])

    def _handle(self, position: int, kind: str) -> None:
        if kind == "ids":
            if self.replay and _IDS.match(self.buffer, position):
                self._ids_line(position)
        elif kind == "markup":
            start, end, _ = self._line_bounds(position, need_whole=False)
            if _CONTENT_FIELD.search(self.buffer, start, end):
                self._error(position)
        else:
            self._error(position)

    def _note_server(self, start: int, end: int) -> None:
        if self.out.server is None:
            for name, hint in _SERVER_HINTS:
                if hint.search(self.buffer, start, end):
                    self.out.server = name
                    return

    def _ids_line(self, position: int) -> None:
        start, end, cut = self._line_bounds(position, need_whole=True)
        self.out.cut_lines += cut
        hit = self._context(start, end)
        if hit.line <= self.last_ids_line:
            return  # one line can hold both prompt_token_ids and output_token_ids
        self.last_ids_line = hit.line
        self._note_server(start, end)
        text = self.buffer[start:end].decode("utf-8", "replace")
        try:
            record = parse_vllm_line(text, hit.line)
        except InputError:
            return  # a damaged id list is not a Harmony failure
        if record is not None:
            self._add_record(record, hit)

    def _add_record(self, record: VllmRecord, hit: Hit) -> None:
        if self.defer_streams and (record.delta or record.kind == "complete"):
            self.out.deferred.append((record, hit))  # may have begun in an earlier range
            return
        if record.request_id in self.finished_requests and record.kind == "complete":
            return
        self.streams.add(record)
        if record.finish_reason is not None or record.kind == "complete":
            self._complete(record.request_id, hit)
        if len(self.streams.streams) > MAX_PENDING:
            self._complete(next(iter(self.streams.streams)), hit)

    def _complete(self, request_id: str, hit: Hit) -> None:
        inp = self.streams.pop(request_id)
        self.finished_requests.add(request_id)
        if len(self.finished_requests) > MAX_PENDING:
            self.finished_requests.clear()
        if inp is not None:
            self.out.completions.append((inp, hit))
            self.out.replayed += 1

    def _error(self, position: int) -> None:
        start, end, _ = self._line_bounds(position, need_whole=False)
        line = self._line_at(start)
        if line <= self.error_until_line:
            return  # an earlier window already read this line
        window_start = self.buffer.rfind(b"\n", 0, max(0, start - BEFORE)) + 1
        window_end = self.buffer.rfind(b"\n", end, end + AFTER)
        if window_end < 0 or window_end <= end:
            window_end = min(len(self.buffer), end + AFTER)
        first_line = self._line_at(window_start)
        text = self.buffer[window_start:window_end].decode("utf-8", "replace")
        last_line = first_line + text.count("\n")
        # Lines near the window's end may continue past it: leave them to the next window.
        settled = last_line - 20 if window_end < len(self.buffer) else last_line
        self.error_until_line = max(line, settled)
        self._note_server(start, end)
        for error in logs.extract_errors(text.split("\n"), first_line=first_line):
            if error.line < line or error.line > self.error_until_line:
                continue
            key = (error.line, error.kind)
            if key in self.seen_errors:
                continue
            self.seen_errors.add(key)
            at = self._line_offset(error.line, window_start, first_line)
            hit = self._context(at, self.buffer.find(b"\n", at) if at >= 0 else end)
            self.out.errors.append((error, hit))
        self._line_at(end)  # keep the cursor moving forward

    def _line_offset(self, line: int, start: int, first_line: int) -> int:
        at = start
        for _ in range(line - first_line):
            at = self.buffer.find(b"\n", at) + 1
        return at

    def _finish(self) -> None:
        for request_id in list(self.streams.streams):
            inp = self.streams.pop(request_id)
            if inp is not None:
                self.out.completions.append((inp, Hit(self.out.lines, None, None)))
                self.out.replayed += 1
