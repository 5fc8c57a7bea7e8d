"""The incremental reading: what followers noted, read as one stream through scan's own reading
(scan_stream: the same unwrapping, windows, extractor, replay and events as `scan`).

A read ends only where the log paused (watch/run.py decides when), never in the middle of a
write: the extractor's open state and the incomplete last line are carried across every look
at the file until then. The live file is read to its last newline (the line being written is
read whole next time), a rotated part to its end; each chunk handed out ends at a line end, so
that a read stopped early (SIGTERM during a backlog) stops at a line end too.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Sequence
from datetime import datetime

from harmony_doctor.inputs.files import MAX_LINE
from harmony_doctor.scan.found import SourceScan
from harmony_doctor.scan.records import FileScan, ScanOptions
from harmony_doctor.scan.run import scan_stream, scanned_stream
from harmony_doctor.watch.follow import Piece, last_line_end

UNENDED = 2 * MAX_LINE  # bytes without a newline at the live file's end that are read anyway


class PieceStream(io.RawIOBase):
    """Pieces of open files read in order as one stream; `stopped` ends it early, at a line
    end. Reading moves each piece's `pos`."""

    def __init__(self, pieces: Sequence[Piece], stopped: Callable[[], bool]) -> None:
        super().__init__()
        self.pieces = list(pieces)
        self.stopped = stopped
        self.index = 0
        self.failed: str | None = None  # a read error, which ends the stream
        self.ends: int | None = None  # where the live file's last whole line ends

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1, /) -> bytes:
        """Up to `size` bytes ending at a line end (the bytes themselves: no copy)."""
        if size is None or size < 0:
            return b"".join(iter(lambda: self._next(1 << 20), b""))
        return self._next(size)

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        data = self._next(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def _next(self, size: int) -> bytes:
        while self.index < len(self.pieces) and not self.stopped():
            piece = self.pieces[self.index]
            if piece.live and self.ends is None:
                try:  # read the live file to its last newline: the rest is being written
                    self.ends = whole_lines_end(piece)
                except OSError as exc:
                    self.failed = exc.strerror or type(exc).__name__
                    return b""
            end = self.ends if piece.live and self.ends is not None else piece.end
            want = min(size, end - piece.pos)
            data = b""
            if want > 0:
                try:
                    data = os.pread(piece.fd, want, piece.pos)
                except OSError as exc:
                    self.failed = exc.strerror or type(exc).__name__
                    return b""
            if not data:  # read to its end (or it shrank under us)
                piece.end = piece.pos if want > 0 else piece.end
                if piece.live:
                    return b""  # the live file is last: nothing follows it
                self.index += 1
                continue
            whole = piece.pos + len(data) >= end
            if not whole and not data.endswith(b"\n"):
                cut = data.rfind(b"\n")
                if cut >= 0:
                    data = data[: cut + 1]  # else a line longer than `size`: given in pieces
            piece.pos += len(data)
            return data
        return b""


def whole_lines_end(piece: Piece) -> int:
    """Where the live piece's last newline ends; its end if the last UNENDED bytes (no newline
    in them) are many: a line that long is cut by scan anyway, and is not searched again."""
    floor = max(piece.pos, piece.end - UNENDED)
    found = last_line_end(piece.fd, piece.end, floor)
    return piece.end if found == floor > piece.pos else found


def read_pieces(
    pieces: Sequence[Piece],
    label: str,
    options: ScanOptions,
    stopped: Callable[[], bool],
    now: datetime | None = None,
) -> tuple[FileScan, str | None]:
    """Read the pieces through scan: what they held, and a read error if one ended it; `now`
    dates year-less stamps (default: the current time)."""
    found, _, failed = read_source(pieces, label, options, stopped, now)
    return found, failed


def read_source(
    pieces: Sequence[Piece],
    label: str,
    options: ScanOptions,
    stopped: Callable[[], bool],
    now: datetime | None = None,
) -> tuple[FileScan, SourceScan | None, str | None]:
    """read_pieces, with what scan found in the source before it became a FileScan (its
    server, its completions; None when it could not be read)."""
    stream = PieceStream(pieces, stopped)
    found, source = scanned_stream(stream, label, options, now)  # type: ignore[arg-type]
    return found, source, stream.failed


def read_bytes(data: bytes, label: str, options: ScanOptions) -> FileScan:
    """Bytes from a pipe (whole lines), read through scan."""
    return scan_stream(io.BytesIO(data), label, options)
