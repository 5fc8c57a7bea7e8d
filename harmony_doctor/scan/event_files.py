"""The events-file format's one owner: its path convention, reading event files back (CSV,
JSONL, Parquet) with bad files set apart, and recognising files scan wrote.

Reading is input: a file may be cut, corrupt or not an events file at all, and one bad file must
not lose the others. Parquet is checked in a child process before polars reads it here, since
polars can abort the whole process on some corrupt files (SIGABRT after trying to allocate
exabytes), and an abort cannot be caught.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harmony_doctor.errors import InputError
from harmony_doctor.scan.event_batches import (
    MAX_CELL as MAX_CELL,  # said in report's notes
)
from harmony_doctor.scan.event_batches import (
    capped,
    check_flat_records,
    csv_header,
    native_stderr_silenced,
    one_line,
    record_pieces,
    uncut,
)
from harmony_doctor.scan.event_batches import (
    check_parquet as check_parquet,  # checked before a file is read
)
from harmony_doctor.scan.records import EventSpill

if TYPE_CHECKING:
    import polars as pl

FORMATS = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}
DERIVED = ("day", "hour")  # recomputed from the timestamp, never trusted from the file
OPTIONAL = ("origin", "kind", "traceback_line")  # columns older versions did not write (empty)
# `scan --events out/events.csv` keeps its request tallies beside: out/events.requests.csv.
REQUESTS_INFIX = ".requests"


# The column of a tally file that names its events file: the SHA-256 of the events' bytes.
EVENTS_DIGEST = "events_sha256"


def file_digest(path: Path) -> str:
    """SHA-256 of a file's bytes, read in chunks."""
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def with_digest(tallies: pl.DataFrame, digest: str) -> pl.DataFrame:
    """Tallies that name their events file (EVENTS_DIGEST on every row); without tallies, one
    row of 0 requests carries it, so that even an empty tally file belongs to its events."""
    import polars as pl

    if tallies.height == 0:
        tallies = pl.DataFrame(
            [{c: (0 if c == "count" else None) for c in tallies.columns}], schema=tallies.schema
        )
    return tallies.with_columns(pl.lit(digest).alias(EVENTS_DIGEST))


def _tallies_of_other_events(events: Path, tallies: Path) -> str | None:
    """Why the tallies beside `events` are not its own (their digest names other bytes: the
    counts of another run, or a write cut short), or None; tallies written before the digest
    existed cannot be checked and are taken."""
    try:
        frame = _read_table(tallies, checked=True)
    except InputError:
        return None  # read again below, where the reason is reported
    if EVENTS_DIGEST not in frame.columns or frame.height == 0:
        return None
    named = set(frame[EVENTS_DIGEST].drop_nulls().to_list())
    if named == {file_digest(events)}:
        return None
    return (
        f"{tallies} does not belong to {events} (its request counts were written with other "
        "events: another run, or a write cut short); its requests are not counted"
    )


def _distinct(paths: Sequence[Path]) -> list[Path]:
    """Each file once, however it is named (twice, `./x`, through a link)."""
    seen: set[tuple[int, int] | str] = set()
    out: list[Path] = []
    for path in paths:
        try:
            info = path.stat()
            identity: tuple[int, int] | str = (info.st_dev, info.st_ino)
        except OSError:
            identity = str(path)
        if identity not in seen:
            seen.add(identity)
            out.append(path)
    return out


def requests_path(events: Path) -> Path:
    """Where the request tallies of an events file are written and looked for: the same name
    with `.requests` before the extension (same format)."""
    return events.with_name(f"{events.stem}{REQUESTS_INFIX}{events.suffix}")


def is_requests_path(path: Path) -> bool:
    """Whether a path is named as request tallies beside an events file."""
    return path.stem.endswith(REQUESTS_INFIX) and path.suffix.lower() in FORMATS


@contextlib.contextmanager
def fetched(inputs: Sequence[str]) -> Iterator[tuple[list[Path], dict[str, str]]]:
    """Event files as local paths: those named by URL or glob (remote.py) are copied into a
    temporary folder, with the tallies beside each, for as long as the block runs. Yields the
    paths and the URL each copy stands for (by its local name), to say in messages."""
    from harmony_doctor.inputs.remote import download, expand_url, is_url

    with tempfile.TemporaryDirectory(prefix="harmony-doctor-events-") as temporary:
        paths: list[Path] = []
        labels: dict[str, str] = {}
        folders: dict[str, Path] = {}  # one folder per remote "folder": tallies stay beside
        for raw in inputs:
            if not is_url(raw):
                paths.append(Path(raw))
                continue
            for found in expand_url(raw):
                parent, _, name = found.url.rpartition("/")
                folder = folders.setdefault(parent, Path(temporary, str(len(folders))))
                folder.mkdir(exist_ok=True)
                local = folder / name
                download(found.url, str(local))
                beside = requests_path(local)
                if not is_requests_path(local) and _kind_or_none(local) is not None:
                    download(f"{parent}/{beside.name}", str(beside))
                labels[str(local)], labels[str(beside)] = found.url, f"{parent}/{beside.name}"
                paths.append(local)
        yield paths, labels


def table_format(path: Path) -> str | None:
    """csv, jsonl or parquet, by the file's extension; None for any other."""
    return FORMATS.get(path.suffix.lower())


def unknown_format(path: Path) -> str:
    return f"cannot tell the format of {path}: use one of {', '.join(sorted(FORMATS))}"


def read_format(path: Path) -> str:
    kind = table_format(path)
    if kind is None:
        raise InputError(unknown_format(path))
    return kind


def _read_each(
    paths: list[Path],
    columns: Any,
    empty: pl.DataFrame,
    unreadable: dict[Path, str],
    bad: list[BadFile],
) -> tuple[list[pl.DataFrame], list[Path], list[int]]:
    """Each file's frame, the files read and the cells cut in each (longer than MAX_CELL); a
    file that cannot be read goes to `bad`."""
    frames: list[pl.DataFrame] = []
    good: list[Path] = []
    cut: list[int] = []
    for path in paths:
        try:
            frame, cells = _checked_read(path, columns, empty, unreadable)
        except InputError as exc:
            bad.append(BadFile(path, str(exc)))
        else:
            frames.append(frame)
            good.append(path)
            cut.append(cells)
    return frames, good, cut


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
    tallies: pl.DataFrame | None = None  # request tallies found beside them (when asked for)
    untallied: tuple[Path, ...] = ()  # events files with no tallies beside (older versions)
    cut: tuple[int, ...] = ()  # cells longer than MAX_CELL in each file read, cut to it
    repeated: tuple[int, ...] = ()  # events of each file read already from an earlier one
    spill: EventSpill | None = None  # with a spill folder, the events are there (frame empty)


def read_table(path: Path) -> pl.DataFrame:
    """Read back a table written by output/tables.write_table (CSV cells unquoted; a text cell
    longer than MAX_CELL characters cut to it)."""
    return _read_table(path, checked=False)


def _read_table(path: Path, checked: bool) -> pl.DataFrame:
    return _read_capped(path, checked)[0]


def _read_capped(path: Path, checked: bool) -> tuple[pl.DataFrame, int]:
    """The table, each text cell at most MAX_CELL characters, and how many cells were cut."""
    import polars as pl

    frames, cut = [], 0
    for frame, cells in _capped_batches(path, checked):
        frames.append(frame)
        cut += cells
    if not frames:
        return pl.DataFrame(), 0
    return pl.concat(frames, how="diagonal_relaxed") if len(frames) > 1 else frames[0], cut


def _capped_batches(path: Path, checked: bool) -> Iterator[tuple[pl.DataFrame, int]]:
    """The table a batch of rows at a time (event_batches.py: a CSV or JSONL file is never held
    whole), each text cell at most MAX_CELL characters, with how many cells were cut in it.
    Parquet is cut in the query, before its rows are collected (one batch)."""
    import polars as pl

    kind = read_format(path)
    if kind == "parquet" and not checked:
        problem = check_parquet([path]).get(path)
        if problem is not None:
            raise InputError(f"cannot read {path}: {problem}")
    try:
        if kind == "parquet":
            with native_stderr_silenced():
                frame = capped(pl.scan_parquet(path)).collect()
            yield uncut(frame, kind)
            return
        with open(path, "rb") as stream:
            header = csv_header(stream) if kind == "csv" else b""
            lines = 0  # before the piece
            # a cell cut here keeps more than MAX_CELL characters: it is counted once, below
            for piece in record_pieces(stream, kind, 4 * MAX_CELL + 4):
                with native_stderr_silenced():
                    if kind == "jsonl":
                        check_flat_records(piece, lines)
                        lines += piece.count(b"\n")
                        frame = capped(pl.read_ndjson(io.BytesIO(piece)).lazy()).collect()
                    else:
                        table = pl.read_csv(io.BytesIO(header + piece), infer_schema_length=0)
                        frame = capped(table.lazy()).collect()
                yield uncut(frame, kind)
    except InputError as exc:
        raise InputError(f"cannot read {path}: {exc}") from None
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise InputError(f"cannot read {path}: {one_line(exc)}") from None
    except pl.exceptions.PanicException:  # a BaseException: polars gave up on a corrupt file
        raise InputError(f"cannot read {path}: the {kind} data is corrupt") from None


def read_event_files(
    paths: Sequence[Path],
    schema: Mapping[str, Any],
    requests_schema: Mapping[str, Any] | None = None,
    spill: Path | None = None,
) -> EventFiles:
    """Event files (any mix of CSV, JSONL and Parquet) as one events frame with `schema`'s
    columns and types (scan's events frame); files that cannot be read are set apart with
    their reason, and the others are still read.

    With `requests_schema`, the request tallies beside each events file (`requests_path`) are
    read too, with those columns; tally files named among `paths` are read as tallies (once,
    even when their events file is named too), and events files without any are listed in
    `untallied`. With `spill` (a folder the caller removes), the events are written there a
    batch at a time as they are read (`EventFiles.spill`), and never held all at once."""
    import polars as pl

    columns = {c: t for c, t in schema.items() if c not in DERIVED}
    empty = pl.DataFrame(schema=columns)
    tally_columns = {c: t for c, t in (requests_schema or {}).items() if c != "day"}
    paths = _distinct(paths)
    event_paths = list(paths)
    tally_paths: list[Path] = []
    if requests_schema is not None:
        event_paths = [p for p in paths if not is_requests_path(p)]
        beside = [requests_path(p) for p in event_paths]
        tally_paths = list(dict.fromkeys([*(p for p in beside if p.is_file()), *paths]))
        tally_paths = [p for p in tally_paths if is_requests_path(p)]
    parquet = [p for p in [*event_paths, *tally_paths] if _kind_or_none(p) == "parquet"]
    openable = [p for p in parquet if _cannot_open(p) is None]  # the others say why themselves
    unreadable = check_parquet(openable) if openable else {}
    bad: list[BadFile] = []
    for listed in event_paths:
        own = requests_path(listed)
        if own in tally_paths and own not in unreadable and listed.is_file():
            problem = _tallies_of_other_events(listed, own)
            if problem is not None:
                bad.append(BadFile(own, problem))
                tally_paths.remove(own)
    streamed = _stream_events(event_paths, columns, empty, unreadable, bad, spill)
    frames, good, cut, repeated = streamed.frames, streamed.good, streamed.cut, streamed.repeated
    tallies: pl.DataFrame | None = None
    untallied: list[Path] = []
    if requests_schema is not None:
        tally_empty = pl.DataFrame(schema=tally_columns)
        tally_frames, read, _ = _read_each(tally_paths, tally_columns, tally_empty, unreadable, bad)
        tally_frames, _ = _once(tally_frames)
        tallies = pl.concat(tally_frames) if tally_frames else tally_empty
        refused = {b.path for b in bad}
        untallied = [p for p in good if requests_path(p) not in set(read) | refused]
    events = _with_day(pl.concat(frames) if frames else empty)
    return EventFiles(
        events,
        tuple(good),
        tuple(streamed.counts),
        tuple(bad),
        tallies,
        tuple(untallied),
        tuple(cut),
        tuple(repeated),
        streamed.spill,
    )


@dataclass
class _Streamed:
    frames: list[pl.DataFrame]  # without a spill folder: each file's events
    good: list[Path]
    counts: list[int]
    cut: list[int]
    repeated: list[int]
    spill: EventSpill | None


def _stream_events(
    paths: list[Path],
    columns: Mapping[str, Any],
    empty: pl.DataFrame,
    unreadable: Mapping[Path, str],
    bad: list[BadFile],
    spill: Path | None,
) -> _Streamed:
    """Each events file read a batch at a time (never whole): its rows but those an earlier file
    held already (`_once`'s rule, by a 16-byte key per row: two 64-bit row hashes), written to
    `spill` as they are read when there is one (else kept, a frame per file)."""
    import polars as pl

    from harmony_doctor.scan.spill import write_frame

    out = _Streamed([], [], [], [], [], None)
    seen: pl.DataFrame | None = None  # the keys of the files read so far
    written: list[tuple[str, str | None]] = []
    for path in paths:
        kept: list[pl.DataFrame] = []
        keys: list[pl.DataFrame] = []
        count = cut = repeated = 0
        before = len(written)
        try:
            problem = _cannot_open(path) or (
                f"cannot read {path}: {unreadable[path]}" if path in unreadable else None
            )
            if problem is not None:
                raise InputError(problem)
            for raw, cells in _capped_batches(path, checked=True):
                batch = _typed(raw, path, columns, empty)
                key = _row_keys(batch)
                if seen is not None and seen.height:
                    # the keys seen that this batch holds (hashed on the batch's side: small),
                    # then the batch's rows without them
                    held = seen.join(key, on=["k0", "k1"], how="semi")
                    new = key.with_row_index("i").join(held, on=["k0", "k1"], how="anti")
                    repeated += batch.height - new.height
                    batch = batch[new["i"].sort()]
                if paths[1:]:
                    keys.append(key)
                cut += cells
                count += batch.height
                if spill is not None and batch.height:
                    written.append((write_frame(_with_day(batch), spill), None))
                elif spill is None:
                    kept.append(batch)
        except InputError as exc:
            bad.append(BadFile(path, str(exc)))
            del written[before:]  # what the bad file gave is not counted
            continue
        if keys:
            seen = pl.concat([seen, *keys] if seen is not None else keys, rechunk=True)
        out.good.append(path)
        out.counts.append(count)
        out.cut.append(cut)
        out.repeated.append(repeated)
        if spill is None:
            out.frames.append(pl.concat(kept) if kept else empty)
    if spill is not None:
        out.spill = EventSpill(tuple(written), sum(out.counts))
    return out


def _with_day(events: pl.DataFrame) -> pl.DataFrame:
    """Events read back with their day and hour (DERIVED) cut from the timestamp."""
    import polars as pl

    return events.with_columns(
        pl.col("timestamp").str.slice(0, 10).alias("day"),
        pl.col("timestamp").str.slice(0, 13).alias("hour"),
    )


def _row_keys(frame: pl.DataFrame) -> pl.DataFrame:
    """A 16-byte key per row (two 64-bit hashes of its cells, seeded apart)."""
    import polars as pl

    return pl.DataFrame({"k0": frame.hash_rows(seed=1), "k1": frame.hash_rows(seed=2)})


def _once(frames: list[pl.DataFrame]) -> tuple[list[pl.DataFrame], list[int]]:
    """Each file's rows but those an earlier file held already (a copy of an events file, the
    same scan written as CSV and as JSONL, two exports that overlap): a failure, or a request
    tally, counts once however often it was written; and how many each file repeated. Rows
    repeated within one file are its own, and stay."""
    import polars as pl

    if len(frames) < 2:
        return frames, [0] * len(frames)
    columns = frames[0].columns
    tagged = pl.concat([f.with_columns(pl.lit(i).alias("__file")) for i, f in enumerate(frames)])
    first = tagged.group_by(columns).agg(pl.col("__file").min().alias("__first"))
    fresh = (  # one pass: a row stays in the first file that holds it
        tagged.join(first, on=columns, nulls_equal=True, maintain_order="left")
        .filter(pl.col("__file") == pl.col("__first"))
        .drop("__first")
    )
    parts = fresh.partition_by("__file", as_dict=True, include_key=False, maintain_order=True)
    kept = [parts.get((i,), frame.clear()) for i, frame in enumerate(frames)]
    return kept, [f.height - k.height for f, k in zip(frames, kept, strict=True)]


def _checked_read(
    path: Path, columns: Mapping[str, Any], empty: pl.DataFrame, unreadable: Mapping[Path, str]
) -> tuple[pl.DataFrame, int]:
    problem = _cannot_open(path)
    if problem is not None:
        raise InputError(problem)
    if path in unreadable:
        raise InputError(f"cannot read {path}: {unreadable[path]}")
    return _events_of(path, columns, empty)


def _cannot_open(path: Path) -> str | None:
    """Why a file cannot be opened for reading, in the system's words, or None: a missing file
    is not "not a file", and a file without permission is not corrupt data."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return f"{path}: No such file or directory"
    except OSError as exc:
        return f"cannot read {path}: {exc.strerror or exc}"
    if not stat.S_ISREG(info.st_mode):  # a folder; a FIFO would block the open below
        return f"cannot read {path}: not a file"
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except OSError as exc:
        return f"cannot read {path}: {exc.strerror or exc}"
    try:  # a CSV scan wrote ends every row with a line end: one that does not was cut short
        last = os.pread(descriptor, 1, info.st_size - 1) if info.st_size else b"\n"
    except OSError as exc:
        return f"cannot read {path}: {exc.strerror or exc}"
    finally:
        os.close(descriptor)
    if last != b"\n" and path.suffix.lower() == ".csv":
        return f"cannot read {path}: it ends inside a row (cut short?); no event of it counted"
    return None


def read_events(paths: Sequence[Path], schema: Mapping[str, Any]) -> tuple[pl.DataFrame, list[int]]:
    """All of `paths` as one events frame, and how many events each held; the first file that
    cannot be read is an InputError."""
    files = read_event_files(paths, schema)
    if files.bad:
        raise InputError(files.bad[0].reason)
    return files.frame, list(files.counts)


def _kind_or_none(path: Path) -> str | None:
    return FORMATS.get(path.suffix.lower())


def _events_of(
    path: Path, columns: Mapping[str, Any], empty: pl.DataFrame
) -> tuple[pl.DataFrame, int]:
    frame, cut = _read_capped(path, checked=True)
    return _typed(frame, path, columns, empty), cut


def _typed(
    frame: pl.DataFrame, path: Path, columns: Mapping[str, Any], empty: pl.DataFrame
) -> pl.DataFrame:
    """Rows read back with `columns` and their types; InputError for a file that is not one
    scan wrote."""
    import polars as pl

    if frame.height == 0:  # a clean run's file (maybe without any column)
        return empty
    missing = [c for c in columns if c not in frame.columns and c not in OPTIONAL]
    if missing:
        what = "request tallies" if is_requests_path(path) else "an events file"
        raise InputError(f"{path} is not {what} from scan --events: no {missing[0]!r}")
    frame = frame.with_columns(pl.lit(None).alias(c) for c in columns if c not in frame.columns)
    try:
        return frame.select(pl.col(c).cast(t) for c, t in columns.items())
    except pl.exceptions.PolarsError as exc:
        raise InputError(f"cannot read {path}: {one_line(exc)}") from None
