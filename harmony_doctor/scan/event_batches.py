"""Event files read a batch of records at a time (scan/event_files.py owns the format): a CSV or
JSONL file is cut into pieces of whole records of about BATCH_BYTES, so that `report` holds one
piece and what it has folded, never a whole file; a CSV record longer than LONG_RECORD is read
in pieces with each cell cut to MAX_CELL as it is read (never held whole). A JSONL line longer
than LONG_RECORD is refused: scan writes lines far shorter, and one cannot be cut safely
without holding it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import BinaryIO

from harmony_doctor.errors import InputError

# Bytes of whole records handed to the CSV or JSON parser at once.
BATCH_BYTES = 2 << 20
# A record longer than this is not held whole: its cells are cut while it is read (CSV).
LONG_RECORD = 8 << 20
_PIECE = 1 << 20
_CSV_SPECIAL = re.compile(rb'[",\n]')


def record_pieces(stream: BinaryIO, kind: str, max_cell: int) -> Iterator[bytes]:
    """The records of a CSV (after its header: see `csv_header`) or JSONL stream, in pieces of
    whole records of about BATCH_BYTES; a CSV record longer than LONG_RECORD with its cells cut
    to `max_cell` bytes (the caller cuts them again by characters, and counts them there)."""
    held = bytearray()
    quotes = 0  # quote marks in the record being gathered (odd: a quoted cell goes on)
    start = 0  # where that record starts in `held`
    while line := stream.readline(LONG_RECORD):
        held += line
        quotes += line.count(b'"') if kind == "csv" else 0
        whole = line.endswith(b"\n") and not quotes % 2
        if len(held) - start >= LONG_RECORD and not whole:
            if kind != "csv":
                raise InputError(
                    f"a line is longer than {LONG_RECORD >> 20} MiB (scan writes far shorter "
                    "ones): not an events file scan wrote"
                )
            record = capped_record(bytes(held[start:]), stream, max_cell)
            del held[start:]
            held += record
            quotes = 0
        if quotes % 2:
            continue  # a newline inside a quoted cell: the record goes on
        quotes = 0
        start = len(held)
        if len(held) >= BATCH_BYTES:
            yield bytes(held)
            held.clear()
            start = 0
    if held.strip():
        yield bytes(held)


def csv_header(stream: BinaryIO) -> bytes:
    """The header line of a CSV events file (b"" for an empty file); refused when longer than
    LONG_RECORD (no events file has such a header)."""
    line = stream.readline(LONG_RECORD)
    if len(line) >= LONG_RECORD and not line.endswith(b"\n"):
        raise InputError(f"its first line is longer than {LONG_RECORD >> 20} MiB: not a CSV")
    return line


def capped_record(head: bytes, stream: BinaryIO, max_cell: int) -> bytes:
    """One CSV record that starts with `head` and goes on in `stream` (seekable: what is read
    past the record is read again), read to its end in pieces of _PIECE bytes, every cell cut
    to `max_cell` bytes of content (at a character boundary; a quoted cell closed again)."""
    out = bytearray()
    cell = 0  # bytes of the current cell kept so far (its opening quote not counted)
    in_quotes = False
    quoted = False  # the current cell opened with a quote
    dropping = False  # the current cell is past max_cell: its bytes are not kept
    piece = head
    first = True  # `piece` is `head`, read before this call (the stream is past it)
    while piece:
        at = 0
        for found in _CSV_SPECIAL.finditer(piece):
            byte = found.group()
            end = found.start()
            cell, dropping = _keep(out, piece[at:end], cell, dropping, max_cell)
            at = end + 1
            if byte == b'"':
                if cell == 0 and not quoted and not dropping:
                    quoted = True
                    out += b'"'
                    in_quotes = True
                    continue
                in_quotes = not in_quotes
                cell, dropping = _keep(out, b'"', cell, dropping, max_cell)
                continue
            if in_quotes:  # a comma or a newline inside a quoted cell is its text
                cell, dropping = _keep(out, byte, cell, dropping, max_cell)
                continue
            if dropping and quoted:
                out += b'"'  # the cut cell's closing quote
            out += byte
            cell, quoted, dropping = 0, False, False
            if byte == b"\n":
                if not first:
                    stream.seek(at - len(piece), 1)  # the next record's bytes, read again
                return bytes(out)
        cell, dropping = _keep(out, piece[at:], cell, dropping, max_cell)
        piece = stream.read(_PIECE)
        first = False
    if dropping and quoted:
        out += b'"'
    return bytes(out)


def _keep(
    out: bytearray, text: bytes, cell: int, dropping: bool, max_cell: int
) -> tuple[int, bool]:
    """`text` of the current cell kept up to `max_cell` bytes (cut back to a whole character and
    a whole `""`); the cell's new length, and whether the rest of it is dropped."""
    if dropping or not text:
        return cell, dropping
    room = max_cell - cell
    if len(text) <= room:
        out += text
        return cell + len(text), False
    kept = text[:room]
    while kept and kept[-1] & 0xC0 == 0x80:  # a character's continuation bytes
        kept = kept[:-1]
    if kept and kept[-1] >= 0xC0:  # the lead byte of the character cut
        kept = kept[:-1]
    out += kept
    content = cell + len(kept)
    tail = bytes(out[len(out) - content :]) if content else b""
    if (len(tail) - len(tail.rstrip(b'"'))) % 2:  # half of a `""` (an escaped quote)
        del out[-1]
    return max_cell, True
