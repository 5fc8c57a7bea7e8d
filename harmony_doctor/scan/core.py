"""The byte-level scan core's seam: log bytes -> hit windows, id lines, tallies. Its records
(Window, IdLine, Stats, Batch), the interface both cores offer (CoreLike) and the Rust core
behind it (NativeCore). The Python reference is scan/reference_core.py; scan/cores.py chooses
(the reference loads only where the Rust core is not used)."""

from __future__ import annotations

import builtins
import re
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, NamedTuple, Protocol

from harmony_doctor.faults import catalogue, shapes
from harmony_doctor.faults.shapes import LineShape
from harmony_doctor.inputs.files import MAX_LINE
from harmony_doctor.inputs.log_words import PID_KEY
from harmony_doctor.native import new_core

if TYPE_CHECKING:
    from harmony_doctor.native import Batch as NativeBatch

Meta = list[tuple[int, bytes | None, int | None]]
# A failure window's reach, both cores' defaults (scan/source.py reads with them): the context
# bytes before an error line (the traceback) and after it (wrapped or multi-line messages), and
# the size past which a window of merged hits is emitted.
BEFORE = 3 * 1024
AFTER = 1024
MAX_WINDOW = 1024 * 1024
TallyKey = tuple[str, int | None, bytes | None]


_WS = rb"[ \t\n\r\f\v]"
_PID = rb"\b" + re.escape(PID_KEY.encode()) + rb"[=:]" + _WS + rb"*(\d+)"
# The failure forms' anchors (faults/catalogue.py): a line holding none holds no message; and
# what a line holding markup must show besides.
ERROR_ANCHORS = catalogue.ERROR_ANCHORS
MARKUP_LINE = catalogue.MARKUP_LINE
MARKUP = b"<|"
# The lines counted besides (faults/shapes.py): request lines, received requests, id lines.
LINE_SHAPES = shapes.LINE_SHAPES


class Window(NamedTuple):
    first_line: int
    text: bytes
    hit_lines: tuple[int, ...]
    stamp_before: bytes | None


class IdLine(NamedTuple):
    line: int
    text: bytes
    stamp: bytes | None
    pid: int | None
    cut: bool


class Stats(NamedTuple):
    lines: int
    cut_lines: int
    bytes: int
    access_lines: int
    received_lines: int
    tallies: dict[TallyKey, int]
    first_access_line: builtins.bytes | None


class Batch(NamedTuple):
    windows: list[Window]
    id_lines: list[IdLine]


class CoreLike(Protocol):
    # newlines: the number of b"\n" in data, when the caller has counted them (see Core.feed)
    def feed(self, data: bytes, meta: Meta | None = None, newlines: int | None = None) -> Batch: ...

    def finish(self) -> Batch: ...

    def stats(self) -> Stats: ...


def own_pid(head: bytes) -> int | None:
    m = _compiled(_PID).search(head)
    if m is None or len(m.group(1)) > 18:
        return None
    return int(m.group(1))


def hour_key(stamp: bytes | None) -> bytes | None:
    """b"YYYY-MM-DD HH" / b"MM-DD HH": the stamp without its last 6 bytes (":MM:SS")."""
    return None if stamp is None else stamp[: max(0, len(stamp) - 6)]


def is_hit(text: bytes) -> bool:
    return any(a in text for a in ERROR_ANCHORS) or (
        MARKUP in text and _compiled(MARKUP_LINE).search(text) is not None
    )


@cache
def _compiled(pattern: bytes) -> re.Pattern[bytes]:
    """A pattern of this module, compiled at its first use: a scan on the Rust core uses none
    (nor does one that finds no error): compiled at import, they cost every start."""
    return re.compile(pattern)


class NativeCore:
    """The Rust core (harmony_doctor._native) behind the same interface as Core. `threads`: 2
    scans the lines a feed() adds in two parts on two threads when they hold at least `split`
    bytes (None: the core's own threshold), 1 on one thread; the results are the same."""

    def __init__(
        self,
        before: int = BEFORE,
        after: int = AFTER,
        max_line: int = MAX_LINE,
        max_window: int = MAX_WINDOW,
        ids: bool = True,
        anchors: Sequence[bytes] = ERROR_ANCHORS,
        markup_line: bytes = MARKUP_LINE,
        threads: int = 2,
        split: int | None = None,
        line_shapes: Sequence[LineShape] = LINE_SHAPES,
    ) -> None:
        if threads not in (1, 2) or (split is not None and split < 1):
            raise ValueError("threads must be 1 or 2, split >= 1")
        self._core = new_core(
            anchors, markup_line.decode(), line_shapes, before, after, max_line, max_window, ids
        )
        self.threads = threads
        if threads == 1:
            self._core.set_split(None)
        elif split is not None:
            self._core.set_split(split)

    def feed(self, data: bytes, meta: Meta | None = None, newlines: int | None = None) -> Batch:
        try:
            return _batch(self._core.feed(bytes(data), meta, newlines))
        except OverflowError as e:  # a negative or huge meta line number or pid
            raise ValueError(str(e)) from e

    def finish(self) -> Batch:
        return _batch(self._core.finish())

    def stats(self) -> Stats:
        s = self._core.stats()
        return Stats(
            s.lines,
            s.cut_lines,
            s.bytes,
            s.access_lines,
            s.received_lines,
            s.tallies,
            s.first_access_line,
        )


def _batch(raw: NativeBatch) -> Batch:
    """Our records of the extension's (harmony_doctor/_native.pyi `Batch`)."""
    return Batch(
        [Window(w.first_line, w.text, w.hit_lines, w.stamp_before) for w in raw.windows],
        [IdLine(i.line, i.text, i.stamp, i.pid, i.cut) for i in raw.id_lines],
    )
