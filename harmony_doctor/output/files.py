"""Tables to files: CSV, JSONL or Parquet by extension, written safely.

Every file is written under a temporary name and renamed at the end, so an interrupted run
never leaves a partial export that looks complete. CSV cells a spreadsheet would execute
(starting with `=`, `+`, `-`, `@`, tab or carriage return) are neutralised with a leading `'`.
"""

from __future__ import annotations

import contextlib
import csv
import json
import math
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from harmony_doctor.errors import InputError

if TYPE_CHECKING:
    import polars as pl

FORMATS = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def format_of(path: Path) -> str:
    kind = FORMATS.get(path.suffix.lower())
    if kind is None:
        known = ", ".join(sorted(FORMATS))
        raise InputError(f"cannot tell the format of {path}: use one of {known}")
    return kind


def safe_cell(value: Any) -> Any:
    """A CSV cell that no spreadsheet will run as a formula."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


@contextlib.contextmanager
def _atomic(path: Path, binary: bool = False) -> Iterator[Any]:
    folder = path.parent if str(path.parent) else Path(".")
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=folder)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        if binary:
            os.close(handle)
            yield Path(temporary)
        else:
            with os.fdopen(handle, "w", newline="", encoding="utf-8") as stream:
                yield stream
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_table(frame: pl.DataFrame, path: Path) -> None:
    """Write a polars frame as CSV, JSONL or Parquet, chosen by the file extension."""
    kind = format_of(path)
    if kind == "parquet":
        with _atomic(path, binary=True) as temporary:
            frame.write_parquet(temporary)
        return
    with _atomic(path) as stream:
        if kind == "csv":
            write_csv(frame.columns, frame.iter_rows(), stream)
        else:
            for row in frame.iter_rows(named=True):
                stream.write(json.dumps(_json_safe(row), ensure_ascii=False) + "\n")


def write_csv(columns: list[str], rows: Any, stream: TextIO) -> None:
    writer = csv.writer(stream)
    writer.writerow(columns)
    for row in rows:
        writer.writerow([safe_cell(v) for v in row])


def _json_safe(row: dict[str, Any]) -> dict[str, Any]:
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in row.items()}


def read_table(path: Path) -> pl.DataFrame:
    """Read back an events file written by write_table (CSV cells un-neutralised)."""
    import polars as pl

    kind = format_of(path)
    try:
        with _native_stderr_silenced():
            if kind == "parquet":
                return pl.read_parquet(path)
            if kind == "jsonl":
                # A run with no events writes an empty file, which polars refuses to read.
                if not _has_content(path):
                    return pl.DataFrame()
                _check_flat_records(path)
                return pl.read_ndjson(path)
            frame = pl.read_csv(path, infer_schema_length=0)
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise InputError(f"cannot read {path}: {exc}") from None
    except pl.exceptions.PanicException:  # a BaseException: polars gave up on a corrupt file
        raise InputError(f"cannot read {path}: the {kind} data is corrupt") from None
    return frame.with_columns(
        pl.col(c).str.replace(r"^'([=+\-@\t\r])", "$1") for c in frame.columns
    )


@contextlib.contextmanager
def _native_stderr_silenced() -> Iterator[None]:
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


def _check_flat_records(path: Path) -> None:
    """Every line one JSON object of plain values, as write_table writes them. Checked before
    polars reads the file: objects nested about a thousand deep crash polars (SIGSEGV)."""
    with open(path, encoding="utf-8", errors="replace") as stream:
        for number, line in enumerate(stream, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except RecursionError:
                raise InputError(
                    f"cannot read {path}: line {number} is nested too deeply"
                ) from None
            except ValueError as exc:
                raise InputError(f"cannot read {path}: line {number}: {exc}") from None
            if not isinstance(record, dict) or any(
                isinstance(v, dict | list) for v in record.values()
            ):
                raise InputError(f"cannot read {path}: line {number} is not a flat JSON object")


def _has_content(path: Path) -> bool:
    """Whether a text file holds anything but whitespace (read in chunks, not whole)."""
    with open(path, "rb") as stream:
        while chunk := stream.read(1 << 16):
            if chunk.strip():
                return True
    return False


def read_events(paths: Sequence[Path]) -> tuple[pl.DataFrame, list[int]]:
    """Event files written by `scan --events` (any mix of CSV, JSONL and Parquet) as one
    events frame with scan's columns and types, and how many events each file held."""
    import polars as pl

    from harmony_doctor.scan.summary import events_frame

    schema = events_frame(()).schema
    derived = ("day", "hour")  # recomputed from the timestamp, never trusted from the file
    frames: list[pl.DataFrame] = []
    for path in paths:
        frame = read_table(path)
        if frame.height == 0:  # a clean run's file (maybe without any column)
            frames.append(events_frame(()).drop(derived))
            continue
        missing = [c for c in schema if c not in frame.columns and c not in derived]
        if missing:
            raise InputError(f"{path} is not an events file from scan --events: no {missing[0]!r}")
        columns = [
            pl.col(c).cast(t) if c in frame.columns else pl.lit(None, dtype=t).alias(c)
            for c, t in schema.items()
            if c not in derived
        ]
        try:
            frames.append(frame.select(columns))
        except pl.exceptions.PolarsError as exc:
            detail = " ".join(str(exc).split())[:200]
            raise InputError(f"cannot read {path}: {detail}") from None
    counts = [f.height for f in frames]
    events = pl.concat(frames) if frames else events_frame(()).drop(derived)
    return events.with_columns(
        pl.col("timestamp").str.slice(0, 10).alias("day"),
        pl.col("timestamp").str.slice(0, 13).alias("hour"),
    ), counts
