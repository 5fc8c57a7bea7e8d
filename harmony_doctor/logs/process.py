"""What one process has shown lately: the traceback in progress, its server and releases, time,
where its last chained exception and its last request began."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from harmony_doctor.lazy_regex import Pattern
from harmony_doctor.logs.lines import (
    CARETS,
    CHAIN,
    FRAME,
    FRAME_SHORT,
    FRAME_SOURCE,
    FRAME_START,
    TRACEBACK_FURNITURE,
    TRACEBACK_START,
    Line,
)
from harmony_doctor.logs.messages import holds_form
from harmony_doctor.logs.recall import Recent
from harmony_doctor.logs.servers import frame_versions, path_server
from harmony_doctor.models import Server

# Distances in lines: how long a traceback may pause, how close its last line the error line
# must follow.
TRACEBACK_REACH: Final = 40
TRACEBACK_END: Final = 2
_LONG_AGO: Final = -(10**9)

# A line that begins one request's record: vLLM's `Received request ID` (or `Added request`),
# llama.cpp's `log_server_r: request: POST /...` (its response line follows), lmdeploy's
# `session N start`, SGLang's `Receive: obj=`. A failure seen after one is not an echo of a
# failure seen before it: a request came between.
_REQUEST_START = Pattern(
    r"\b(?:Received|Added) request \S|\brequest: [A-Z]+ /|\bsession \d+ start\b|\bReceive: obj="
)
_REQUEST_WORDS = ("request", "session", "Receive")
_ANY_REQUEST_WORD = Pattern("|".join(map(re.escape, _REQUEST_WORDS)))
# The last line of a traceback: the exception's type and message (`ExceptionGroup: ...`).
_EXCEPTION_LINE = Pattern(r"^[\w.]*(?:Error|Exception|ExceptionGroup|Warning|Interrupt)\b:")
# The line shapes `_follow_traceback` tries in turn, in one regex: a line none of them matches
# (most lines of a window) skips to the last test at once.
_ANY_TRACEBACK_SHAPE = Pattern(
    "|".join(
        f"(?:{shape.pattern})"
        for shape in (TRACEBACK_START, CHAIN, _EXCEPTION_LINE, FRAME, CARETS, TRACEBACK_FURNITURE)
    )
)


@dataclass
class ProcessState:
    """What one process prefix has shown lately; a few numbers and a server, never lines."""

    episode_start: int = 0  # line of the last traceback that was not chained to the previous
    last_traceback_line: int = _LONG_AGO
    chain_line: int = _LONG_AGO
    versions: frozenset[int] | None = None  # from openai_harmony/__init__.py frames
    traceback_server: Server | None = None
    traceback_start: int | None = None
    server: Server | None = None
    server_line: int = _LONG_AGO
    timestamp: str | None = None
    timestamp_line: int = _LONG_AGO
    pid: int | None = None
    # Lines this prefix has shown, and the count at its last traceback line: when several
    # processes interleave, distances within one traceback are counted in its own lines.
    seen: int = 0
    last_traceback_seen: int = _LONG_AGO
    request_line: int = _LONG_AGO  # the last line that began a request's record
    # The last line a failure of this process ended on, and the one that was being handled
    # when the last chained exception began (`During handling of the above exception...`).
    error_line: int = _LONG_AGO
    handled_line: int = _LONG_AGO
    # The last two lines read that are neither blank nor part of a traceback (a record's
    # first line, an access line, an error line): what stands between two failures.
    record_line: int = _LONG_AGO
    earlier_record_line: int = _LONG_AGO

    def requests_since(self, number: int) -> bool:
        """Whether a request's record began on a line after `number`."""
        return self.request_line > number

    def traceback_distance(self, number: int, keyed: bool) -> int:
        """How far back this prefix's last traceback line is, in lines of this prefix."""
        distance = number - self.last_traceback_line
        return min(distance, self.seen - self.last_traceback_seen) if keyed else distance

    def ends_traceback(self, line: Line) -> bool:
        """Whether an error on `line` is the last line of the traceback before it."""
        return self.traceback_distance(line.number, bool(line.key)) <= TRACEBACK_END

    def close_traceback(self) -> None:
        """An error line ended the traceback: the next line cannot continue it."""
        self.last_traceback_line = _LONG_AGO

    def saw_error(self, last_line: int) -> None:
        """A failure of this process ended on `last_line`."""
        self.error_line = last_line

    def reraises(self, last_line: int) -> bool:
        """Whether a chained exception began while the failure ending on `last_line` was
        handled, with no unchained traceback since: its re-raise is the same failure."""
        return last_line == self.handled_line < self.chain_line and self.episode_start <= last_line

    def record_before(self, number: int) -> int:
        """The last line before `number` that is neither blank nor part of a traceback."""
        return self.earlier_record_line if self.record_line >= number else self.record_line

    def observe(self, line: Line, formless: bool = False, shape: Shape | None = None) -> None:
        """Keep what later errors need from this line: tracebacks, versions, time, server.
        `formless`: the caller knows no message form matches in the line's text (the first
        pass read it: logs/firstpass.py QUIET), so `holds_form` need not be asked; `shape`:
        the text's `shape_of`, when the caller has it (`Shapes`)."""
        number = line.number
        self.seen += 1
        if line.timestamp is not None:
            self.timestamp, self.timestamp_line = line.timestamp, number
        if line.pid is not None:
            self.pid = line.pid
        if line.evidence is not None:
            self.server, self.server_line = line.evidence, number
        text = line.text
        if shape is None:
            shape = shape_of(text, line.gutter)
        if shape.request:
            self.request_line = number
        in_traceback = self._follow_traceback(line, shape, formless)
        if text and not in_traceback and not line.rest[:1].isspace():
            self.earlier_record_line, self.record_line = self.record_line, number

    def absorb(
        self,
        lines: int,
        timestamp: str | None,
        timestamp_line: int | None,
        pid: int | None,
        server: Server | None,
        server_line: int | None,
        request_line: int | None,
        record_line: int | None,
        earlier_record_line: int | None,
    ) -> None:
        """`observe` of `lines` ordinary lines at once, from what they left (the Rust first
        pass's sums, logs/firstpass.py): a line that no traceback shape matches, not indented,
        and holds no message only counts, and stamps what it carries."""
        self.seen += lines
        if timestamp is not None and timestamp_line is not None:
            self.timestamp, self.timestamp_line = timestamp, timestamp_line
        if pid is not None:
            self.pid = pid
        if server is not None and server_line is not None:
            self.server, self.server_line = server, server_line
        if request_line is not None:
            self.request_line = request_line
        if record_line is not None:
            earlier = self.record_line if earlier_record_line is None else earlier_record_line
            self.earlier_record_line, self.record_line = earlier, record_line

    def _follow_traceback(self, line: Line, shape: Shape, formless: bool = False) -> bool:
        """Follow the traceback `line` (whose text has `shape`) may belong to; whether it does
        (`formless`: see `observe`)."""
        number, kind = line.number, shape.kind
        if kind == OTHER:
            return self._source_line(line, formless)  # what the tests below come to for such a line
        if kind == START:
            chained = number - self.chain_line <= 4 or line.gutter
            if not chained:
                self.episode_start = number
                self._new_traceback(number)
            elif number - self.last_traceback_line > TRACEBACK_REACH:
                self._new_traceback(number)
            self._mark(number)
            return True
        if kind == CHAINED:
            self.chain_line = number
            recent = number - self.error_line <= TRACEBACK_REACH
            self.handled_line = self.error_line if recent else _LONG_AGO
            self._mark(number)
            return True
        if (
            shape.exception
            and self.ends_traceback(line)
            and (formless or not holds_form(line.text))
        ):
            self.close_traceback()  # an exception of its own ended it: the next line is not its
            return True
        if kind == FRAMED:
            self._enter_frame(number, shape)
        elif kind == MARKED:
            self._mark(number)
        else:
            return self._source_line(line, formless)
        return True

    def _source_line(self, line: Line, formless: bool = False) -> bool:
        """Whether `line` is the source line under a frame (indented, right after it): mark it."""
        if (
            line.rest.startswith((" ", "\t"))
            and self.traceback_distance(line.number, bool(line.key)) <= 1
            and (formless or not holds_form(line.text))
        ):
            self._mark(line.number)
            return True
        return False

    def _enter_frame(self, number: int, frame: Shape) -> None:
        if number - self.last_traceback_line > TRACEBACK_REACH:
            self._new_traceback(number)  # its head was cut or elided
        self._mark(number)
        if frame.server is not None and self.traceback_server is None:
            self.traceback_server = frame.server
        if frame.versions is not None:
            self.versions = frame.versions

    def _mark(self, number: int) -> None:
        self.last_traceback_line = number
        self.last_traceback_seen = self.seen

    def _new_traceback(self, number: int) -> None:
        self.traceback_start = number
        self.versions = None
        self.traceback_server = None


# What `_follow_traceback` makes of a line, by its text and gutter alone (the tests in the order
# it makes them): no traceback shape; a traceback's head; a chain marker; else, after asking
# whether an exception line ends the traceback, a frame, a line marked as the traceback's (a
# gutter, carets, IPython's or rich's furniture), or a candidate source line.
OTHER, START, CHAINED, FRAMED, MARKED, SOURCE = range(6)


@dataclass(frozen=True, slots=True)
class Shape:
    """A line's text as `observe` reads it: pure, so a text seen again is not read again."""

    request: bool  # a request's record begins on it (`_REQUEST_START`)
    kind: int  # OTHER .. SOURCE
    exception: bool = False  # `_EXCEPTION_LINE` (asked for FRAMED, MARKED and SOURCE)
    server: Server | None = None  # a frame's: its path's server, the releases it is from
    versions: frozenset[int] | None = None


def shape_of(text: str, gutter: bool) -> Shape:
    """What `_follow_traceback` and `observe` find in a line's `text` with `gutter`."""
    request = bool(_ANY_REQUEST_WORD.search(text) and _REQUEST_START.search(text))
    short = FRAME_SOURCE in text and text.startswith((FRAME_START, "│"))
    if not gutter and _ANY_TRACEBACK_SHAPE.match(text) is None and not short:
        return Shape(request, OTHER)
    if TRACEBACK_START.match(text):
        return Shape(request, START)
    if CHAIN.match(text):
        return Shape(request, CHAINED)
    exception = _EXCEPTION_LINE.match(text) is not None
    frame = FRAME.match(text)
    if frame is None and short:
        frame = FRAME_SHORT.match(text.lstrip("│ "))
    if frame is not None:
        path = frame["path"]
        versions = frame_versions(path, int(frame["line"]), frame["func"])
        return Shape(request, FRAMED, exception, path_server(path), versions)
    if gutter or CARETS.match(text) or TRACEBACK_FURNITURE.match(text):
        return Shape(request, MARKED, exception)
    return Shape(request, SOURCE, exception)


class Shapes:
    """`shape_of`, remembered for the short texts one reader saw lately (a failure that recurs
    writes the same traceback lines), within `Recent`'s bound."""

    def __init__(self) -> None:
        self.known: Recent[tuple[str, bool], Shape] = Recent()

    def of(self, text: str, gutter: bool) -> Shape:
        key = (text, gutter)
        shape = self.known.get(key)
        if shape is None:
            shape = shape_of(text, gutter)
            self.known.keep(key, shape, len(text))
        return shape


def ordinary_shapes() -> tuple[Pattern[str], Pattern[str]]:
    """The traceback shapes a line `observe` only counts matches none of, and the start of a
    request's record (logs/firstpass.py hands both to Rust)."""
    return _ANY_TRACEBACK_SHAPE, _REQUEST_START
