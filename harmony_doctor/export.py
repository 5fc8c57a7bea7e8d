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
from collections.abc import Iterator
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
        if kind == "parquet":
            return pl.read_parquet(path)
        if kind == "jsonl":
            return pl.read_ndjson(path)
        frame = pl.read_csv(path, infer_schema_length=0)
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise InputError(f"cannot read {path}: {exc}") from None
    return frame.with_columns(
        pl.col(c).str.replace(r"^'([=+\-@\t\r])", "$1") for c in frame.columns
    )
