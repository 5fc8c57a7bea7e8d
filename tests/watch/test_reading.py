"""The reader hands scan whole lines: each chunk ends at a line end, the line still being
written is left for the next read, a rotated part is read to its very end."""

from __future__ import annotations

import os
from pathlib import Path

from harmony_doctor.watch.follow import Piece, identity_of
from harmony_doctor.watch.reading import PieceStream


def _piece(path: Path, data: bytes, live: bool) -> Piece:
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    return Piece(fd, identity_of(fd, len(data)), 0, len(data), live)


def _chunks(stream: PieceStream, size: int) -> list[bytes]:
    return list(iter(lambda: stream.read(size), b""))


def test_chunks_end_at_line_ends_and_the_unended_line_waits(tmp_path: Path) -> None:
    old = _piece(tmp_path / "a.log.1", b"one\ntwo\nthree", live=False)
    live = _piece(tmp_path / "a.log", b"four\nfive\nsix-being-writ", live=True)
    chunks = _chunks(PieceStream([old, live], lambda: False), 6)
    assert b"".join(chunks) == b"one\ntwo\nthree" + b"four\nfive\n"
    assert all(c.endswith(b"\n") for c in chunks if b"three" not in c)
    assert (old.pos, live.pos) == (old.end, len(b"four\nfive\n"))
    for piece in (old, live):
        os.close(piece.fd)


def test_stopped_reading_stops_at_a_line_end(tmp_path: Path) -> None:
    live = _piece(tmp_path / "a.log", b"".join(b"line %d\n" % n for n in range(100)), True)
    reads = iter(range(1000))
    stream = PieceStream([live], lambda: next(reads) >= 3)
    chunks = _chunks(stream, 50)
    assert len(chunks) == 3
    assert live.pos == sum(map(len, chunks))
    assert chunks[-1].endswith(b"\n")
    os.close(live.fd)
