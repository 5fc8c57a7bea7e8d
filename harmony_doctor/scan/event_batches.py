"""Event files read a batch of records at a time (scan/event_files.py owns the format): a CSV or
JSONL file is cut into pieces of whole records of about BATCH_BYTES, so that `report` holds one
piece and what it has folded, never a whole file; a CSV record longer than LONG_RECORD is read
in pieces with each cell cut to MAX_CELL as it is read (never held whole). A JSONL line longer
than LONG_RECORD is refused: scan writes lines far shorter, and one cannot be cut safely
without holding it. With them: each cell cut to MAX_CELL characters and counted, CSV cells
given back as written, Parquet files checked in a child (polars can abort on a corrupt one)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from harmony_doctor.errors import InputError

if TYPE_CHECKING:
    import polars as pl

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


# Characters of one text cell kept when an events file is read back: a longer cell (a file
# scan did not write: scan bounds an event's message to scan/findings.py MAX_EVENT_TEXT, its
# header remainder's words to logs/words.py MAX_WORD each) is cut to it and counted.
MAX_CELL = 64 * 1024


_CUT = "__cells_cut__"  # the count of a row's cut cells, while a file is read


# A CSV cell starting with one of these is written with a `'` before it (output/tables.py
# safe_cell): a spreadsheet runs none of them as a formula, and since a cell that starts with
# `'` is quoted too, taking off exactly one `'` before one of them gives every cell back.
QUOTED_STARTS = "=+-@\t\r'"


_QUOTED_CELL = r"^'([=+\-@\t\r'])"  # QUOTED_STARTS after the one `'` taken off


def uncut(frame: pl.DataFrame, kind: str) -> tuple[pl.DataFrame, int]:
    """A capped batch without its count column, and the count; CSV cells as written."""
    import polars as pl

    cut = int(frame[_CUT].sum())
    frame = frame.drop(_CUT)
    if kind != "csv":
        return frame, cut
    # An empty cell is empty however it is written: `""` (a file re-saved with every field
    # quoted, as spreadsheets and pandas' QUOTE_ALL write it) is read as `,,` is, not as text
    # that no number can be cast from.
    return frame.with_columns(
        pl.when(pl.col(c) != "").then(pl.col(c).str.replace(_QUOTED_CELL, "$1")).alias(c)
        for c in frame.columns
    ), cut


def capped(table: pl.LazyFrame) -> pl.LazyFrame:
    """Every text column cut to MAX_CELL characters, and the count of cells cut per row."""
    import polars as pl

    schema = table.collect_schema()
    texts = [c for c, t in schema.items() if t == pl.String]
    if not texts:
        return table.with_columns(pl.lit(0, pl.UInt32).alias(_CUT))
    longer = [pl.col(c).str.len_chars().gt(MAX_CELL).fill_null(False) for c in texts]
    return table.with_columns(
        pl.sum_horizontal(longer).alias(_CUT), *(pl.col(c).str.slice(0, MAX_CELL) for c in texts)
    )


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200] or type(exc).__name__


# Run in a child: reads each Parquet file named on stdin, one line of outcome per file. A line
# "start N" comes first, so that a child that dies says which file killed it.
_PARQUET_CHECK = """
import os, sys
os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
import polars as pl
for number, path in enumerate(sys.stdin.read().split("\\0")[:-1]):
    print("start", number, flush=True)
    try:
        pl.read_parquet(path)
    except BaseException as exc:
        print("bad", number, " ".join(str(exc).split())[:200] or type(exc).__name__, flush=True)
    else:
        print("ok", number, flush=True)
"""


def check_parquet(paths: Sequence[Path]) -> dict[Path, str]:
    """The Parquet files among `paths` that polars cannot read, with why, found by reading them
    in a child process (restarted after a file that kills it); a file whose footer says a row
    group is past the limit once decoded (inputs/parquet_footer.py) is not read at all."""
    from harmony_doctor.inputs.parquet_footer import too_large

    problems = {p: why for p in paths if (why := too_large(p)) is not None}
    remaining = [p for p in paths if p not in problems]
    while remaining:
        done = _check_in_child(remaining, problems)
        remaining = remaining[done:]
    return problems


def _check_in_child(paths: Sequence[Path], problems: dict[Path, str]) -> int:
    """Check `paths` in one child; how many it got through (the one that killed it included)."""
    names = "".join(f"{os.fsdecode(p)}\0" for p in paths)
    child = subprocess.run(
        [sys.executable, "-c", _PARQUET_CHECK],
        input=names.encode(errors="surrogateescape"),
        capture_output=True,
        check=False,
    )
    started, finished = -1, -1
    for line in child.stdout.decode(errors="replace").splitlines():
        word, _, rest = line.partition(" ")
        number_text, _, reason = rest.partition(" ")
        number = int(number_text)
        if word == "start":
            started = number
        else:
            finished = number
            if word == "bad":
                problems[paths[number]] = f"the parquet data is corrupt ({reason})"
    if child.returncode == 0 and finished == len(paths) - 1:
        return len(paths)
    culprit = max(started, 0)
    death = _death(child.returncode)
    problems[paths[culprit]] = f"the parquet data is corrupt (the reader {death})"
    return culprit + 1


def _death(code: int) -> str:
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(-code).name}"
    return f"failed with exit code {code}"


@contextlib.contextmanager
def native_stderr_silenced() -> Iterator[None]:
    """File descriptor 2 goes to /dev/null: polars' Rust code prints its panics there itself,
    and a corrupt file must end in the one-line error, not a Rust backtrace note."""
    try:
        saved = os.dup(2)
    except OSError:  # no stderr at all: nothing to silence
        yield
        return
    try:
        with open(os.devnull, "wb") as sink:
            os.dup2(sink.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def check_flat_records(piece: bytes, before: int) -> None:
    """Every line of a piece of JSONL (`before` lines into its file) one JSON object of plain
    values, as write_table writes them. Checked before polars reads it: objects nested about a
    thousand deep crash polars (SIGSEGV)."""
    text = piece.decode("utf-8", errors="replace").split("\n")
    for number, line in enumerate(text, start=before + 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except RecursionError:
            raise InputError(f"line {number} is nested too deeply") from None
        except ValueError as exc:
            raise InputError(f"line {number}: {exc}") from None
        if not isinstance(record, dict) or any(isinstance(v, dict | list) for v in record.values()):
            raise InputError(f"line {number} is not a flat JSON object")
