"""Event files written by `scan --events` read back (CSV, JSONL, Parquet), bad files set apart.

Reading is input: a file may be cut, corrupt or not an events file at all, and one bad file must
not lose the others. Parquet is checked in a child process before polars reads it here, since
polars can abort the whole process on some corrupt files (SIGABRT after trying to allocate
exabytes), and an abort cannot be caught.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harmony_doctor.errors import InputError

if TYPE_CHECKING:
    import polars as pl

FORMATS = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}
DERIVED = ("day", "hour")  # recomputed from the timestamp, never trusted from the file


def format_of(path: Path) -> str:
    kind = FORMATS.get(path.suffix.lower())
    if kind is None:
        known = ", ".join(sorted(FORMATS))
        raise InputError(f"cannot tell the format of {path}: use one of {known}")
    return kind


@dataclass(frozen=True)
class BadFile:
    path: Path
    reason: str


@dataclass(frozen=True)
class EventFiles:
    """What `read_event_files` made of its paths: the good files' events, the bad ones apart."""

    frame: pl.DataFrame
    paths: tuple[Path, ...]  # the files read, in order
    counts: tuple[int, ...]  # events in each of them
    bad: tuple[BadFile, ...]


def read_table(path: Path) -> pl.DataFrame:
    """Read back a table written by output/files.write_table (CSV cells un-neutralised)."""
    return _read_table(path, checked=False)


def _read_table(path: Path, checked: bool) -> pl.DataFrame:
    import polars as pl

    kind = format_of(path)
    if kind == "parquet" and not checked:
        problem = check_parquet([path]).get(path)
        if problem is not None:
            raise InputError(f"cannot read {path}: {problem}")
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
        raise InputError(f"cannot read {path}: {_one_line(exc)}") from None
    except pl.exceptions.PanicException:  # a BaseException: polars gave up on a corrupt file
        raise InputError(f"cannot read {path}: the {kind} data is corrupt") from None
    return frame.with_columns(
        pl.col(c).str.replace(r"^'([=+\-@\t\r])", "$1") for c in frame.columns
    )


def _one_line(exc: BaseException) -> str:
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
    in a child process (restarted after a file that kills it)."""
    problems: dict[Path, str] = {}
    remaining = list(paths)
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


def read_event_files(paths: Sequence[Path], schema: Mapping[str, Any]) -> EventFiles:
    """Event files (any mix of CSV, JSONL and Parquet) as one events frame with `schema`'s
    columns and types (scan's events frame); files that cannot be read are set apart with
    their reason, and the others are still read."""
    import polars as pl

    columns = {c: t for c, t in schema.items() if c not in DERIVED}
    empty = pl.DataFrame(schema=columns)
    parquet = [p for p in paths if _kind_or_none(p) == "parquet" and p.is_file()]
    unreadable = check_parquet(parquet) if parquet else {}
    frames: list[pl.DataFrame] = []
    good: list[Path] = []
    bad: list[BadFile] = []
    for path in paths:
        try:
            if path in unreadable:
                raise InputError(f"cannot read {path}: {unreadable[path]}")
            if not path.is_file():
                raise InputError(f"cannot read {path}: not a file")
            frames.append(_events_of(path, columns, empty))
        except InputError as exc:
            bad.append(BadFile(path, str(exc)))
        else:
            good.append(path)
    events = pl.concat(frames) if frames else empty
    events = events.with_columns(
        pl.col("timestamp").str.slice(0, 10).alias("day"),
        pl.col("timestamp").str.slice(0, 13).alias("hour"),
    )
    return EventFiles(events, tuple(good), tuple(f.height for f in frames), tuple(bad))


def read_events(paths: Sequence[Path], schema: Mapping[str, Any]) -> tuple[pl.DataFrame, list[int]]:
    """All of `paths` as one events frame, and how many events each held; the first file that
    cannot be read is an InputError."""
    files = read_event_files(paths, schema)
    if files.bad:
        raise InputError(files.bad[0].reason)
    return files.frame, list(files.counts)


def _kind_or_none(path: Path) -> str | None:
    return FORMATS.get(path.suffix.lower())


def _events_of(path: Path, columns: Mapping[str, Any], empty: pl.DataFrame) -> pl.DataFrame:
    import polars as pl

    frame = _read_table(path, checked=True)
    if frame.height == 0:  # a clean run's file (maybe without any column)
        return empty
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(f"{path} is not an events file from scan --events: no {missing[0]!r}")
    try:
        return frame.select(pl.col(c).cast(t) for c, t in columns.items())
    except pl.exceptions.PolarsError as exc:
        raise InputError(f"cannot read {path}: {_one_line(exc)}") from None
