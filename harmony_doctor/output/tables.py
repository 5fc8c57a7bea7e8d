"""Tables to files: CSV, JSONL or Parquet by extension, written safely.

Every output path is checked before any input is read (output/targets.py), so a typo costs
nothing. Every file is written under a temporary name and renamed at the end, so an interrupted
run (Ctrl-C, SIGTERM, SIGHUP) never leaves a partial export, nor its `.part`; one SIGKILL left
(its writer's lock free) is removed by the next write into its folder. A failed write is
an OutputError with one line of why. Files get the mode the umask gives new files. CSV cells a
spreadsheet would execute (starting with `=`, `+`, `-`, `@`, tab or carriage return) are
neutralised with a leading `'`, and so are cells that start with `'` themselves, so that the
reader (scan/event_files.py) can take exactly one `'` off both and get every cell back.
Control and bidi characters are shown as escapes in CSV (lossy: Parquet and JSONL keep them,
JSONL as JSON's own escapes), as on the terminal (output/escape.py).
"""

from __future__ import annotations

import contextlib
import csv
import itertools
import json
import math
import os
import re
import signal
import stat
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, TextIO

from harmony_doctor.errors import OutputError
from harmony_doctor.output.escape import json_escaped, one_line, visible
from harmony_doctor.output.words import stated
from harmony_doctor.scan.event_batches import QUOTED_STARTS
from harmony_doctor.scan.event_files import (
    file_digest,
    table_format,
    unknown_format,
    with_digest,
)

if TYPE_CHECKING:
    import polars as pl

    from harmony_doctor.scan.service import EventFrames

# Formula characters, and the quote itself: `'=x` and `=x` must not be written alike.
_QUOTED_STARTS = tuple(QUOTED_STARTS)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived while a file was being written: unwound like Ctrl-C, so that
    the temporary file is removed on the way out."""


def export_format(path: Path) -> str:
    kind = table_format(path)
    if kind is None:
        raise OutputError(unknown_format(path))
    return kind


def write_tables(targets: Sequence[tuple[Path | None, Callable[[], pl.DataFrame]]]) -> list[str]:
    """Write each (path, table) whose path is given; the one-line errors of those that failed.

    One failed export does not stop the others, nor the summary the caller prints after."""
    errors: list[str] = []
    for path, table in targets:
        if path is None:
            continue
        try:
            write_table(table(), path)
        except OutputError as exc:
            errors.append(str(exc))
    return errors


def write_event_tables(
    events: EventFrames, tallies: pl.DataFrame, path: Path, beside: Path
) -> list[str]:
    """`write_events`, with its failure as the one-line error write_tables gives."""
    try:
        write_events(events, tallies, path, beside)
    except OutputError as exc:
        return [str(exc)]
    return []


def write_text(path: Path, text: str) -> None:
    """Write a whole text file atomically (temporary name, then rename), as tables are."""
    with _atomic(path) as stream:
        stream.write(text)


def safe_cell(value: Any) -> Any:
    """A CSV cell that no spreadsheet will run as a formula, and that reads back as it was:
    a leading `'` before a formula character or a `'`, which the reader takes off again."""
    if isinstance(value, str) and value.startswith(_QUOTED_STARTS):
        return "'" + value
    return value


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def _signals_unwind() -> Iterator[None]:
    """SIGTERM and SIGHUP raise Terminated while the body runs where nothing answers them
    (their default would end the process on the spot, leaving the temporary file; the CLI
    answers them itself, cli/signals.py); a repeat is ignored while the file is removed. The
    previous handlers come back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminated(number: int, frame: FrameType | None) -> None:
        for other in previous:
            signal.signal(other, signal.SIG_IGN)
        raise Terminated(signal.Signals(number).name)

    numbers = (signal.SIGTERM, signal.SIGHUP)
    unanswered = [n for n in numbers if signal.getsignal(n) == signal.SIG_DFL]
    previous = {n: signal.signal(n, terminated) for n in unanswered}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


# A temporary file of ours: `.NAME.hd-XXXXXXXX.part`, locked (flock) by its writer while it
# is written. One whose lock is free was left by a writer SIGKILL ended (nothing else leaves
# one): the next write into the folder removes it (`sweep_parts`).
PART_MARK = ".hd-"
_PART = re.compile(r"\..+\.hd-[a-z0-9_]{8}\.part")


@contextlib.contextmanager
def _atomic(path: Path, binary: bool = False) -> Iterator[Any]:
    folder = path.parent if str(path.parent) else Path(".")
    with _signals_unwind():
        sweep_parts(folder)
        try:
            handle, temporary = _locked_part(path, folder)
        except OSError as exc:
            raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
        keeper = os.dup(handle)  # holds the lock until the file has its name, or is gone
        try:
            # mkstemp makes the file 0600; an export is an ordinary file, as the umask says.
            os.fchmod(handle, 0o666 & ~_umask())
            if binary:
                os.close(handle)
                yield Path(temporary)
            else:
                with os.fdopen(handle, "w", newline="", encoding="utf-8") as stream:
                    yield stream
            os.replace(temporary, path)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            if isinstance(exc, OSError):
                raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
            raise
        finally:
            os.close(keeper)


def _locked_part(path: Path, folder: Path) -> tuple[int, str]:
    """A new temporary file for `path`, locked before it has the name a sweep looks for (made
    as `.making`, then renamed): no sweep ever sees it unlocked. Its descriptor and name."""
    import fcntl

    handle, making = tempfile.mkstemp(
        prefix=f".{path.name}{PART_MARK}", suffix=".making", dir=folder
    )
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        temporary = making.removesuffix(".making") + ".part"
        os.rename(making, temporary)
    except BaseException:
        os.close(handle)
        with contextlib.suppress(OSError):
            os.unlink(making)
        raise
    return handle, temporary


def sweep_parts(folder: Path) -> list[Path]:
    """Remove the temporary files of ours in `folder` whose writer is gone (their lock free,
    this user's, regular files): SIGKILL leaves them, nothing answers it. The paths removed."""
    import fcntl

    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    removed = []
    for entry in entries:
        if not _PART.fullmatch(entry.name):
            continue
        try:
            handle = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            info = os.fstat(handle)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
                continue
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # OSError: its writer runs
            os.unlink(entry.path)
            removed.append(Path(entry.path))
        except OSError:
            continue
        finally:
            os.close(handle)
    return removed


def write_events(events: EventFrames, tallies: pl.DataFrame, path: Path, beside: Path) -> None:
    """An events file and its request tallies as one unit: the events are written under a
    temporary name, the tallies then carry the SHA-256 of those bytes (EVENTS_DIGEST) and are
    renamed, and the events are renamed last. Interrupted anywhere, a reader sees both old,
    or tallies whose digest is not its events' (which report refuses), never a silent mix.
    The events are written a batch at a time (Parquet through polars' streaming sink): memory
    does not grow with them."""
    kind = export_format(path)
    with _atomic(path, binary=True) as temporary:
        if kind == "parquet":
            _sink_parquet(events, temporary, path)
        else:
            with open(temporary, "w", newline="", encoding="utf-8") as stream:
                _write_text_batches(events.batches(), events.head(0).columns, kind, stream)
        write_table(with_digest(tallies, file_digest(temporary)), beside)


def _sink_parquet(events: EventFrames, temporary: Path, path: Path) -> None:
    with _parquet_errors(path):
        rows = _rows_for(events.head(_SAMPLE_ROWS))
        events.lazy().sink_parquet(temporary, row_group_size=rows)


def _write_parquet(frame: pl.DataFrame, temporary: Path, path: Path) -> None:
    with _parquet_errors(path):
        frame.write_parquet(temporary, row_group_size=_row_group_rows(frame))


@contextlib.contextmanager
def _parquet_errors(path: Path) -> Iterator[None]:
    """polars' failure to write `path` as an OutputError of one line."""
    import polars as pl

    try:
        yield
    except pl.exceptions.PolarsError as exc:
        detail = " ".join(str(exc).split())[:200]
        raise OutputError(f"cannot write {path}: {detail}") from None


def _write_text_batches(
    batches: Iterable[pl.DataFrame], columns: list[str], kind: str, stream: TextIO
) -> None:
    """CSV (one header) or JSONL rows of every batch, in order."""
    if kind == "csv":
        write_csv(columns, itertools.chain.from_iterable(f.iter_rows() for f in batches), stream)
        return
    for frame in batches:
        for row in frame.iter_rows(named=True):
            stream.write(_json_line(row) + "\n")


ROW_GROUP_BYTES = 64 * 1024 * 1024  # a quarter of what `report` reads in one row group
_SAMPLE_ROWS = 4096  # events sized to choose the row groups of a file written in streaming


def _row_group_rows(frame: pl.DataFrame) -> int:
    """Rows per Parquet row group, so that each holds about ROW_GROUP_BYTES in memory: `report`
    refuses a row group past 256 MiB decoded (inputs/parquet_footer.py), and a file this tool
    wrote must never be one it refuses."""
    size = int(frame.estimated_size())
    if frame.height == 0 or size <= ROW_GROUP_BYTES:
        return max(frame.height, 1)
    return _rows_for(frame)


def _rows_for(sample: pl.DataFrame) -> int:
    """Rows of about ROW_GROUP_BYTES, judged by `sample`'s size per row."""
    return max(1, sample.height * ROW_GROUP_BYTES // max(int(sample.estimated_size()), 1))


def write_table(frame: pl.DataFrame, path: Path) -> None:
    """Write a polars frame as CSV, JSONL or Parquet, chosen by the file extension."""
    kind = export_format(path)
    if kind == "parquet":
        with _atomic(path, binary=True) as temporary:
            _write_parquet(frame, temporary, path)
        return
    with _atomic(path) as stream:
        _write_text_batches((frame,), frame.columns, kind, stream)


def write_csv(columns: list[str], rows: Any, stream: TextIO) -> None:
    """CSV with formula-safe cells and floats as the outputs state them (words.stated);
    control and bidi characters are shown as escapes, not obeyed, wherever the CSV goes (a
    file is `cat`ed too); to a terminal each cell is also one line."""
    shown = stream.isatty()
    writer = csv.writer(stream)
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_terminal_cell(v) if shown else _file_cell(v) for v in stated(row)])


def _terminal_cell(value: Any) -> Any:
    return one_line(safe_cell(value)) if isinstance(value, str) else value


def _file_cell(value: Any) -> Any:
    """A cell of a CSV file: escapes shown first (they start with `\\`, never a formula
    character), then made formula-safe, so that the reader's one `'` taken off still holds."""
    return safe_cell(visible(value)) if isinstance(value, str) else value


def _json_line(row: dict[str, Any]) -> str:
    """A JSONL row: control and bidi characters written as JSON's own `\\u` escapes, which a
    JSON reader turns back into them (nothing lost) and a terminal shows as text."""
    line = json.dumps(_json_safe(row), ensure_ascii=False)
    return json_escaped(line)


def _json_safe(row: dict[str, Any]) -> dict[str, Any]:
    return {
        k: None if isinstance(v, float) and not math.isfinite(v) else stated(v)
        for k, v in row.items()
    }
