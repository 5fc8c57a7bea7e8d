"""Events and request tallies -> grouped summary, totals and rates (polars)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harmony_doctor.errors import InputError
from harmony_doctor.models import RequestTally, ScanEvent
from harmony_doctor.scan.records import FileReport, FileScan, ScanResult

if TYPE_CHECKING:
    import polars as pl

GROUP_KEYS = (
    "code",
    "kind",
    "pattern",
    "server",
    "harmony_version",
    "origin",
    "file",
    "pid",
    "day",
    "hour",
)
# Dimensions requests can be split by; other groups get the overall request count.
REQUEST_KEYS = ("origin", "file", "pid", "server", "day", "hour")


# Column types of the frames, as Python types so that polars loads only when a frame is built.
EVENT_COLUMNS: dict[str, type[str] | type[int]] = {
    "file": str,
    "line": int,
    "timestamp": str,
    "pid": int,
    "server": str,
    "harmony_version": str,
    "kind": str,
    "code": str,
    "severity": str,
    "pattern": str,
    "token_id": int,
    "token_text": str,
    "header_remainder": str,
    "message": str,
    "request_id": str,
    "origin_index": int,
    "raise_index": int,
    "source": str,
    "origin": str,
}
REQUEST_COLUMNS: dict[str, type[str] | type[int]] = {
    "file": str,
    "pid": int,
    "server": str,
    "hour": str,
    "count": int,
    "origin": str,
}


def event_schema() -> dict[str, pl.DataType]:
    """The fixed schema of an events frame (`--events`, FileScan.events_frame): the columns
    above in order (str -> String, int -> Int64), then `day` and `hour` cut from the timestamp."""
    return dict(events_frame(()).schema)


def request_schema() -> dict[str, pl.DataType]:
    """The fixed schema of a tallies frame (the `.requests` file, FileScan.tallies_frame): the
    columns above with `pid` as String (as events are grouped), then `day` cut from the hour."""
    return dict(requests_frame(()).schema)


def empty_frames() -> tuple[pl.DataFrame, pl.DataFrame]:
    """An events frame and a tallies frame with no rows and every column, typed."""
    return events_frame(()), requests_frame(())


def events_frame(events: Iterable[ScanEvent]) -> pl.DataFrame:
    """One row per event, with the day and hour cut from its timestamp."""
    import polars as pl

    return _frame(events, EVENT_COLUMNS).with_columns(
        pl.col("timestamp").str.slice(0, 10).alias("day"),
        pl.col("timestamp").str.slice(0, 13).alias("hour"),
    )


def _frame(
    records: Iterable[ScanEvent] | Iterable[RequestTally],
    columns: dict[str, type[str] | type[int]],
) -> pl.DataFrame:
    """Records as rows; without records, an empty frame that still has every column."""
    import polars as pl

    rows = [r.__dict__ for r in records]
    if rows:
        return pl.DataFrame(rows, schema=columns, orient="row")
    return pl.DataFrame(schema=columns)


SUMMARY_COLUMNS = (
    "count",
    "share",
    "requests",
    "rate",
    "rate_note",
    "first_seen",
    "last_seen",
    "example",
)
# Why a rate is unknown where failures were counted: more failures than requests in the group
# (a rate is never above 100%: the log did not record every request; it is not capped).
NOT_LOGGED = "requests not logged"


def summarize(result: ScanResult | FileScan, by: tuple[str, ...]) -> pl.DataFrame:
    """One row per group: count, share, rate (when requests are known), first/last seen, example."""
    return summarize_frames(events_frame(result.events), requests_frame(result.requests), by)


def summarize_frames(
    frame: pl.DataFrame, requests: pl.DataFrame, by: tuple[str, ...]
) -> pl.DataFrame:
    """The summary of an events frame (scan's, or event files read back) and request counts.

    A rate only counts failures from files whose requests were counted: a log without access
    or request lines adds failures but no requests, and must not inflate anyone's rate.
    """
    import polars as pl

    frame, requests = _origin_files(_with_origin(frame), _with_origin(requests))
    total = frame.height
    if total == 0:
        return pl.DataFrame(
            schema={
                **{k: pl.Utf8 for k in by},
                "count": pl.Int64,
                "share": pl.Float64,
                "requests": pl.Int64,
                "rate": pl.Float64,
                "rate_note": pl.Utf8,
                "first_seen": pl.Utf8,
                "last_seen": pl.Utf8,
                "example": pl.Utf8,
            }
        )
    counted_files = requests["file"].unique().to_list() if requests.height else []
    frame = frame.with_columns(
        (pl.col("file") + ":" + pl.col("line").cast(pl.Utf8)).alias("example"),
        pl.col("file").is_in(counted_files).alias("counted"),
        *(pl.col(k).cast(pl.Utf8) for k in by),
    )
    grouped = (
        frame.group_by(list(by), maintain_order=True)
        .agg(
            pl.len().alias("count"),
            pl.col("counted").sum().alias("counted"),
            pl.col("timestamp").min().alias("first_seen"),
            pl.col("timestamp").max().alias("last_seen"),
            pl.col("example").first(),
        )
        .with_columns((pl.col("count") / total).alias("share"))
    )
    split = [k for k in by if k in REQUEST_KEYS]
    if requests.height == 0:
        grouped = grouped.with_columns(
            pl.lit(None, dtype=pl.Int64).alias("requests"),
            pl.lit(None, dtype=pl.Float64).alias("rate"),
        )
    elif split and len(split) == len(by):
        per_group = requests.group_by(split).agg(pl.col("count").sum().alias("requests"))
        grouped = grouped.join(per_group, on=split, how="left", nulls_equal=True)
    else:
        all_requests = int(requests["count"].sum())
        grouped = grouped.with_columns(pl.lit(all_requests, dtype=pl.Int64).alias("requests"))
    if requests.height:
        known = pl.col("requests").fill_null(0)
        grouped = grouped.with_columns(
            pl.when((known > 0) & (pl.col("counted") > 0) & (pl.col("counted") <= known))
            .then(pl.col("counted") / pl.col("requests"))
            .otherwise(None)
            .alias("rate"),
            pl.when(pl.col("counted") > known)
            .then(pl.lit(NOT_LOGGED))
            .otherwise(None)
            .alias("rate_note"),
        )
    else:
        grouped = grouped.with_columns(pl.lit(None, dtype=pl.Utf8).alias("rate_note"))
    columns = [*by, *SUMMARY_COLUMNS]
    return grouped.select(columns).sort("count", descending=True, maintain_order=True)


def _with_origin(frame: pl.DataFrame) -> pl.DataFrame:
    """A frame read from a file written before origins existed gets an empty origin column."""
    import polars as pl

    if "origin" in frame.columns:
        return frame
    return frame.with_columns(pl.lit(None, dtype=pl.Utf8).alias("origin"))


def _origin_files(
    events: pl.DataFrame, requests: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Where the rows come from more than one origin, `file` becomes `origin:file`: two hosts'
    `vllm.log` are two files (in groups, examples and which files had their requests counted).
    With one origin, file names are left as they are."""
    import polars as pl

    origins = set(events["origin"].unique().to_list()) | set(requests["origin"].unique().to_list())
    if len(origins) <= 1:
        return events, requests
    qualified = (
        pl.when(pl.col("origin").is_null())
        .then(pl.col("file"))
        .otherwise(pl.col("origin") + ":" + pl.col("file"))
        .alias("file")
    )
    return events.with_columns(qualified), requests.with_columns(qualified)


def counted_failures(result: ScanResult) -> int:
    """Failures in files whose requests were counted (the numerator of the overall rate)."""
    counted = {(t.origin, t.file) for t in result.requests}
    return sum(1 for e in result.events if (e.origin, e.file) in counted)


def frame_totals(
    files: Sequence[FileReport], events: pl.DataFrame, requests: pl.DataFrame
) -> dict[str, Any]:
    """The totals line of event and tally frames read back (`report`): requests and the rate
    as scan over the same logs prints them; none when no tallies were read."""
    events, requests = _with_origin(events), _with_origin(requests)
    total = int(requests["count"].sum()) if requests.height else 0
    pairs = requests.select("origin", "file").unique()
    counted = events.join(pairs, on=["origin", "file"], how="semi", nulls_equal=True).height
    return _totals(files, events.height, total or None, counted)


def requests_frame(tallies: Iterable[RequestTally]) -> pl.DataFrame:
    """One row per request tally, with the pid as text and the day cut from the hour."""
    return requests_view(tally_table(tallies))


def tally_table(tallies: Iterable[RequestTally]) -> pl.DataFrame:
    """Request tallies as stored beside an events file: REQUEST_COLUMNS, nothing derived."""
    return _frame(tallies, REQUEST_COLUMNS)


def requests_view(table: pl.DataFrame) -> pl.DataFrame:
    """A tally table (built, or read back with REQUEST_COLUMNS' types) as summaries use it."""
    import polars as pl

    return _with_origin(table).with_columns(
        pl.col("pid").cast(pl.Utf8), pl.col("hour").str.slice(0, 10).alias("day")
    )


def total_requests(result: ScanResult) -> int | None:
    """All requests counted, or None when the logs show none."""
    total = sum(t.count for t in result.requests)
    return total or None


def per_day(result: ScanResult) -> list[tuple[str, int]]:
    """(day, failures) in date order, for the chart."""
    days = Counter((e.timestamp or "")[:10] for e in result.events if e.timestamp)
    return sorted(days.items())


def scan_totals(result: ScanResult) -> dict[str, Any]:
    """The totals line of a scan: inputs, bytes, lines, requests, failures and the overall rate."""
    requests = total_requests(result)
    return _totals(result.files, len(result.events), requests, counted_failures(result))


def event_file_reports(paths: Sequence[Path], counts: Sequence[int]) -> list[FileReport]:
    """Event files read back (`counts` events each), one line per event, as report lists them."""
    return [
        FileReport(str(path), "ok", None, file_size(path), n, n)
        for path, n in zip(paths, counts, strict=True)
    ]


def report_totals(files: Sequence[FileReport], failures: int) -> dict[str, Any]:
    """The totals line of event files read back: no requests, no rate."""
    return _totals(files, failures, None, 0)


def group_keys(values: Sequence[str]) -> tuple[str, ...]:
    """`--by` values (comma-separated or repeated) as group keys; `code` when none are given."""
    keys = tuple(k.strip() for v in values for k in v.split(",") if k.strip()) or ("code",)
    unknown = [k for k in keys if k not in GROUP_KEYS]
    if unknown:
        raise InputError(f"cannot group by {unknown[0]!r}: use {', '.join(GROUP_KEYS)}")
    return tuple(dict.fromkeys(keys))


def _totals(
    files: Sequence[FileReport], failures: int, requests: int | None, counted: int
) -> dict[str, Any]:
    """The one totals shape scan and report print (a JSON contract: keys and order are fixed)."""
    return {
        "files": len(files),
        "bytes": sum(f.bytes for f in files),
        "lines": sum(f.lines for f in files),
        "requests": requests,
        "failures": failures,
        "rate": counted / requests if requests and counted <= requests else None,
        "skipped": sum(1 for f in files if f.status == "skipped"),
        "partial": sum(1 for f in files if f.status == "partial"),
        "rate_note": NOT_LOGGED if requests and counted > requests else None,
    }


def file_size(path: Path | None) -> int:
    """Bytes of a file on disk; 0 for standard input or a file that cannot be stat-ed."""
    if path is None:
        return 0
    try:
        return path.stat().st_size
    except OSError:
        return 0
