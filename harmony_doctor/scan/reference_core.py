"""The byte-level scan core in Python: the reference the Rust core (native/src/core.rs) is
tested equal to, and the core where the extension is not built or HARMONY_DOCTOR_NATIVE=0. Its
records and interface are scan/core.py's."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from harmony_doctor.faults.shapes import LineShape
from harmony_doctor.inputs.files import MAX_LINE
from harmony_doctor.inputs.timestamps import HEAD, own_stamp
from harmony_doctor.scan.core import (
    AFTER,
    BEFORE,
    ERROR_ANCHORS,
    LINE_SHAPES,
    MARKUP,
    MARKUP_LINE,
    MAX_WINDOW,
    Batch,
    IdLine,
    Meta,
    Stats,
    TallyKey,
    Window,
    hour_key,
    own_pid,
)

# Every line that can matter contains one of these literals or an error anchor (the regex rules
# are checked only on such lines); the bit says which rule the literal belongs to: bit 4 << i
# for the literals of line shape i.
_ANCHOR, _MARKUP = 1, 2


def _structural(line_shapes: Sequence[LineShape]) -> tuple[tuple[bytes, int], ...]:
    literals = (
        (literal, 4 << i) for i, shape in enumerate(line_shapes) for literal in shape.literals
    )
    return ((MARKUP, _MARKUP), *literals)


@dataclass
class _HitLine:
    line: int
    e: int  # cut-stream offset of the line's end ("\n" or end of stream)
    ws: int  # window start (a line start)
    ws_line: int


@dataclass
class _Pending:
    start: int
    first_line: int
    end: int
    stamp_before: bytes | None
    hits: list[int] = field(default_factory=list)


def _check_anchors(anchors: Sequence[bytes]) -> None:
    """ValueError for error anchors no core can search line by line (the Rust core refuses
    these and, rarely, duplicated short ones: native/src/anchors.rs)."""
    for a in anchors:
        if not a:
            raise ValueError("an error anchor is empty: every line would be a hit")
        if b"\n" in a:
            raise ValueError(f"error anchor {a!r} holds a newline: no line does")


class Core:
    """One stream's scan state; feed() it bytes in any chunking, then finish(). A line holding
    one of the error `anchors` is a hit."""

    def __init__(
        self,
        before: int = BEFORE,
        after: int = AFTER,
        max_line: int = MAX_LINE,
        max_window: int = MAX_WINDOW,
        ids: bool = True,
        anchors: Sequence[bytes] = ERROR_ANCHORS,
        markup_line: bytes = MARKUP_LINE,
        line_shapes: Sequence[LineShape] = LINE_SHAPES,
    ) -> None:
        if before < 0 or after < 0 or max_line < 1 or max_window < 1:
            raise ValueError("before/after must be >= 0, max_line/max_window >= 1")
        _check_anchors(anchors)
        self._prefilter = (*((bytes(a), _ANCHOR) for a in anchors), *_structural(line_shapes))
        self._shapes = tuple(
            (4 << i, shape.counts, re.compile(shape.regex())) for i, shape in enumerate(line_shapes)
        )
        self._markup_rule = re.compile(markup_line)
        self._before = before
        self._after = after
        self._max_line = max_line
        self._max_window = max_window
        self._ids = ids
        # The cut stream (each line cut to max_line bytes) from offset _off (a line start, line
        # number _off_line) to _pos (just past the last processed line).
        self._buf = b""
        self._off = 0
        self._off_line = 1
        self._pos = 0
        self._part = bytearray()  # the incomplete last line, cut to max_line
        self._part_cut = False
        # Known effective stamps: line _kl[i] has effective stamp _ks[i]; _kl[0] is _off_line - 1.
        self._kl: list[int] = [0]
        self._ks: list[bytes | None] = [None]
        self._meta: dict[int, tuple[bytes | None, int | None]] = {}
        self._hits: deque[_HitLine] = deque()
        self._pending: _Pending | None = None
        self._done = False
        self._lines = 0
        self._cut_lines = 0
        self._bytes = 0
        self._access = 0
        self._received = 0
        self._tallies: dict[TallyKey, int] = {}
        self._first_access: bytes | None = None

    # -- public -------------------------------------------------------------------------------

    def feed(self, data: bytes, meta: Meta | None = None, newlines: int | None = None) -> Batch:
        """Scan one chunk. `newlines` (the caller's count of data's newlines) spares the Rust
        core a count of its own; this reference counts them all the same."""
        if self._done:
            raise ValueError("feed() after finish()")
        data = bytes(data)
        if meta:
            self._add_meta(meta)
        self._bytes += len(data)
        last = data.rfind(b"\n")
        if last < 0:
            self._extend_part(data)
            return Batch([], [])
        first = data.find(b"\n")
        ml = self._max_line
        part = bytes(self._part)
        cuts: list[int] = []
        if self._part_cut or len(part) + first > ml:
            region = part + data[: max(0, ml - len(part))][: max(0, first)] + data[first : last + 1]
            cuts.append(0)
        else:
            region = part + data[: last + 1]
        tail = data[last + 1 :]
        self._part = bytearray(tail[:ml])
        self._part_cut = len(tail) > ml
        region, more = self._cut_long(region)
        cuts.extend(more)
        ids = self._process(region, set(cuts), final=False)
        return Batch(self._settle(eof=False), ids)

    def finish(self) -> Batch:
        if self._done:
            raise ValueError("finish() called twice")
        self._done = True
        ids: list[IdLine] = []
        if self._part:
            region = bytes(self._part)
            ids = self._process(region, {0} if self._part_cut else set(), final=True)
            self._part = bytearray()
        batch = Batch(self._settle(eof=True), ids)
        self._buf = b""  # nothing is read after the end: every byte given back
        return batch

    def stats(self) -> Stats:
        return Stats(
            self._lines,
            self._cut_lines,
            self._bytes,
            self._access,
            self._received,
            dict(self._tallies),
            self._first_access,
        )

    # -- input --------------------------------------------------------------------------------

    def _add_meta(self, meta: Meta) -> None:
        prev = self._lines
        for line, _, _ in meta:
            if line <= prev:
                raise ValueError(
                    f"meta line {line}: line numbers must increase and follow line {self._lines}"
                )
            prev = line
        for line, stamp, pid in meta:
            self._meta[line] = (stamp, pid)

    def _extend_part(self, data: bytes) -> None:
        room = self._max_line - len(self._part)
        if len(data) > room:
            self._part += data[:room]
            self._part_cut = True
        else:
            self._part += data

    def _cut_long(self, region: bytes) -> tuple[bytes, list[int]]:
        """Cut every line of `region` to max_line bytes; returns the new region, cut line starts."""
        ml = self._max_line
        n = len(region)
        pos = 0
        pieces: list[bytes] = []
        cuts: list[int] = []
        copy_from = 0
        removed = 0
        while n - pos > ml:
            q = region.rfind(b"\n", pos, pos + ml + 1)
            if q >= 0:
                pos = q + 1
                continue
            nl = region.find(b"\n", pos + ml)
            if nl < 0:
                nl = n
            pieces.append(region[copy_from : pos + ml])
            cuts.append(pos - removed)
            removed += nl - (pos + ml)
            copy_from = nl
            pos = nl + 1
        if not cuts:
            return region, cuts
        pieces.append(region[copy_from:])
        return b"".join(pieces), cuts

    # -- lines --------------------------------------------------------------------------------

    def _process(self, region: bytes, cuts: set[int], final: bool) -> list[IdLine]:
        """Account for the complete lines of `region` (the last one too when final)."""
        base = len(self._buf)
        buf = self._buf = self._buf + region
        end = len(buf)
        nlines = region.count(b"\n") + (1 if final else 0)
        self._cut_lines += len(cuts)
        line0 = self._lines + 1  # number of the region's first line
        self._lines += nlines
        self._pos += len(region)
        cands: dict[int, int] = {}  # line start -> rule bits of the literals it holds
        for pat, bit in self._prefilter:
            i = buf.find(pat, base, end)
            while i >= 0:
                j = buf.rfind(b"\n", base, i)
                ls = base if j < 0 else j + 1
                cands[ls] = cands.get(ls, 0) | bit
                le = buf.find(b"\n", i, end)
                if le < 0:
                    break
                i = buf.find(pat, le + 1, end)
        out: list[IdLine] = []
        at, at_line = base, line0
        for ls in sorted(cands):
            bits = cands[ls]
            le = buf.find(b"\n", ls, end)
            if le < 0:
                le = end
            text = buf[ls:le]
            hit = bool(bits & _ANCHOR) or (
                bool(bits & _MARKUP) and self._markup_rule.search(text) is not None
            )
            counted = {
                counts
                for bit, counts, rule in self._shapes
                if bits & bit and rule.search(text) is not None
            }
            access = "access" in counted
            received = not access and "received" in counted
            ids = self._ids and "ids" in counted
            if not (hit or access or received or ids):
                continue
            at_line += buf.count(b"\n", at, ls)
            at = ls
            line = at_line
            if access or received or ids:
                stamp = self._eff(line, le)
                pid = own_pid(text[:HEAD])
                if pid is None:
                    pid = self._meta.get(line, (None, None))[1]
                if access or received:
                    kind = "access" if access else "received"
                    key = (kind, pid, hour_key(stamp))
                    self._tallies[key] = self._tallies.get(key, 0) + 1
                    if access:
                        self._access += 1
                        if self._first_access is None:
                            self._first_access = text
                    else:
                        self._received += 1
                if ids:
                    out.append(IdLine(line, text, stamp, pid, ls - base in cuts))
            if hit:
                s = self._off + ls
                wi = max(0, s - self._before) - self._off
                ws = buf.rfind(b"\n", 0, wi) + 1
                if ls - ws > self._max_window:  # context longer than a window: left out
                    ws = buf.find(b"\n", wi, ls) + 1 or ls
                ws_line = line - buf.count(b"\n", ws, ls)
                self._hits.append(_HitLine(line, self._off + le, self._off + ws, ws_line))
        return out

    def _line_stamp(self, line: int, text: bytes) -> bytes | None:
        stamp = own_stamp(text[:HEAD])
        if stamp is None:
            stamp = self._meta.get(line, (None, None))[0]
        return stamp

    def _eff(self, line: int, end: int) -> bytes | None:
        """Effective stamp of `line`, which ends at buffer index `end`."""
        k = bisect_right(self._kl, line) - 1
        known = self._kl[k]
        if known == line:
            return self._ks[k]
        result = self._ks[k]
        buf = self._buf
        cur = line
        while cur > known:
            j = buf.rfind(b"\n", 0, end)
            stamp = self._line_stamp(cur, buf[j + 1 : end])
            if stamp is not None:
                result = stamp
                break
            cur -= 1
            end = j
        self._kl.insert(k + 1, line)
        self._ks.insert(k + 1, result)
        return result

    # -- windows ------------------------------------------------------------------------------

    def _settle(self, eof: bool) -> list[Window]:
        out: list[Window] = []
        off, pos, after = self._off, self._pos, self._after
        while self._hits:
            h = self._hits[0]
            if not eof and h.e + after > pos:
                break
            self._hits.popleft()
            j = self._buf.rfind(b"\n", h.e - off, min(h.e + after, pos) - off)
            end = off + j if j >= 0 else min(h.e + after, pos)
            p = self._pending
            if p is not None and h.ws <= p.end and max(p.end, end) - p.start <= self._max_window:
                p.end = max(p.end, end)
                p.hits.append(h.line)
                continue
            if p is not None:
                out.append(self._window(p))
            stamp = self._eff(h.ws_line - 1, h.ws - 1 - off)
            self._pending = _Pending(h.ws, h.ws_line, end, stamp, [h.line])
        p = self._pending
        if p is not None and not self._hits and (eof or pos - self._before > p.end):
            out.append(self._window(p))
            self._pending = None
        if not eof:
            self._trim()
        return out

    def _window(self, p: _Pending) -> Window:
        text = self._buf[p.start - self._off : p.end - self._off]
        return Window(p.first_line, text, tuple(p.hits), p.stamp_before)

    def _trim(self) -> None:
        """Drop buffered lines no future window or stamp look-up can reach."""
        off = self._off
        wi = max(0, self._pos - self._before) - off
        keep = off + self._buf.rfind(b"\n", 0, max(0, wi)) + 1
        if self._pending is not None:
            keep = min(keep, self._pending.start)
        if self._hits:
            keep = min(keep, self._hits[0].ws)
        if keep <= off:
            return
        idx = keep - off
        keep_line = self._off_line + self._buf.count(b"\n", 0, idx)
        stamp = self._eff(keep_line - 1, idx - 1)
        self._buf = self._buf[idx:]
        self._off = keep
        self._off_line = keep_line
        k = bisect_right(self._kl, keep_line - 1) - 1
        self._kl = [keep_line - 1, *self._kl[k + 1 :]]
        self._ks = [stamp, *self._ks[k + 1 :]]
        if self._meta:
            self._meta = {n: m for n, m in self._meta.items() if n >= keep_line}
