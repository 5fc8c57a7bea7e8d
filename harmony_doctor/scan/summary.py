"""Events and request tallies -> grouped summary, totals and rates (polars)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harmony_doctor.choices import GROUP_KEYS
from harmony_doctor.errors import InputError
from harmony_doctor.scan.records import FileReport, FileScan, ScanResult

if TYPE_CHECKING:
    import polars as pl

    from harmony_doctor.models import RequestTally, ScanEvent

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
    "traceback_line": int,
}
REQUEST_COLUMNS: dict[str, type[str] | type[int]] = {
    "file": str,
    "pid": int,
    "server": str,
    "hour": str,
    "count": int,
    "origin": str,
    "kind": str,
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

    rows = list(records)  # read column by column: no dict per record (records have slots)
    if rows:
        return pl.DataFrame({c: [getattr(r, c) for r in rows] for c in columns}, schema=columns)
    return pl.DataFrame(schema=columns)


SUMMARY_COLUMNS = (
    "count",
    "share",
    "requests",
    "rate",
    "rate_note",
    "unrated",
    "first_seen",
    "last_seen",
    "example",
)
# Why a rate is unknown where failures were counted: more failures than requests in the group
# (a rate is never above 100%: the log did not record every request; it is not capped).
NOT_LOGGED = "requests not logged"
# The clock every hour is read on (said in the outputs, so that nobody compares it with another).
CLOCK = "each log's own stamps (a wrapper's time only until the log stamps a line itself)"
# Groups a summary lists, the largest first; the rest are one last row whose every key is OTHER
# (counted, never a cause: its count is the sum of theirs, so the rows add up to the totals).
GROUP_LIMIT = 1_000


def summarize(result: ScanResult | FileScan, by: tuple[str, ...]) -> pl.DataFrame:
    """One row per group: count, share, rate (when requests are known), first/last seen, example."""
    return summarize_frames(events_frame(result.events), requests_frame(result.requests), by)


def summarize_frames(
    frame: pl.DataFrame, requests: pl.DataFrame, by: tuple[str, ...]
) -> pl.DataFrame:
    """The summary of an events frame (scan's, or event files read back; or the same folded:
    scan/fold.py) and request counts.

    A rate counts a failure only in its scope (scoped): a log without request lines adds
    failures but no requests (they are `unrated`), and must not inflate anyone's rate. A group
    split by requests' dimensions (origin, pid, server, day, hour; a file by the scopes of its
    tallies, or those of its process where it logged failures only) divides by the requests
    of those scopes; other groups by all requests in scopes with a rate.
    """
    import polars as pl

    from harmony_doctor.scan.fold import failures_of, fold
    from harmony_doctor.scan.scopes import scoped, with_origin

    if frame.height == 0:
        return pl.DataFrame(
            schema={
                **{k: pl.Utf8 for k in by},
                "count": pl.Int64,
                "share": pl.Float64,
                "requests": pl.Int64,
                "rate": pl.Float64,
                "rate_note": pl.Utf8,
                "unrated": pl.Int64,
                "first_seen": pl.Utf8,
                "last_seen": pl.Utf8,
                "example": pl.Utf8,
            }
        )
    folded = fold(frame)
    found = scoped(*_origin_files(folded, with_origin(requests)))
    total = failures_of(folded)
    events = found.events.with_columns(
        (pl.col("file") + ":" + pl.col("line").cast(pl.Utf8)).alias("example"),
        *(pl.col(k).cast(pl.Utf8) for k in by),
    )
    grouped = (
        events.group_by(list(by), maintain_order=True)
        .agg(
            pl.col("n").sum().alias("count"),
            pl.col("n").filter(pl.col("rated")).sum().cast(pl.Int64).alias("rated"),
            pl.col("first_seen").min(),
            pl.col("last_seen").max(),
            pl.col("example").first(),
        )
        .with_columns(
            (pl.col("count") / total).alias("share"),
            (pl.col("count") - pl.col("rated")).alias("unrated"),
        )
    )
    scopes = found.scopes
    split = [k for k in by if k in REQUEST_KEYS]
    if requests.height == 0:
        grouped = grouped.with_columns(pl.lit(None, dtype=pl.Int64).alias("requests"))
    elif split:
        on = list(split)
        source = found.files if "file" in split else scopes
        per_group = (
            source.with_columns(pl.col(k).cast(pl.Utf8) for k in on)
            .group_by(on)
            .agg(pl.col("requests").sum())
        )
        grouped = grouped.join(per_group, on=on, how="left", nulls_equal=True).with_columns(
            pl.col("requests").fill_null(0)
        )
    else:
        all_requests = int(scopes["requests"].sum()) if scopes.height else 0
        grouped = grouped.with_columns(pl.lit(all_requests, dtype=pl.Int64).alias("requests"))
    grouped = grouped.with_columns(*_rate_columns())
    columns = [*by, *SUMMARY_COLUMNS]
    return _with_other(grouped.sort("count", descending=True, maintain_order=True), by, total)[
        columns
    ]


def _rate_columns() -> tuple[pl.Expr, pl.Expr]:
    """A group's rate (its rated failures over its requests, when both are known and the
    requests are not fewer) and why it has none where failures outnumber requests."""
    import polars as pl

    known = pl.col("requests").fill_null(0)
    rated = pl.col("rated")
    return (
        pl.when((known > 0) & (rated > 0) & (rated <= known)).then(rated / known).alias("rate"),
        pl.when(rated > known).then(pl.lit(NOT_LOGGED)).alias("rate_note"),
    )


def _with_other(grouped: pl.DataFrame, by: tuple[str, ...], total: int) -> pl.DataFrame:
    """The GROUP_LIMIT largest groups, then one OTHER row for the rest (and for the patterns
    the fold bounded already: scan/fold.py), its rate by the same rule over their sums."""
    import polars as pl

    from harmony_doctor.scan.fold import OTHER

    folded_other = pl.any_horizontal(pl.col(k) == OTHER for k in by).fill_null(False)
    named = grouped.filter(folded_other.not_())
    if named.height <= GROUP_LIMIT and named.height == grouped.height:
        return grouped
    rest = pl.concat([named.slice(GROUP_LIMIT), grouped.filter(folded_other)])
    other = rest.select(
        *(pl.lit(OTHER, dtype=pl.Utf8).alias(k) for k in by),
        pl.col("count").sum(),
        pl.col("rated").sum(),
        pl.col("first_seen").min(),
        pl.col("last_seen").max(),
        pl.lit(None, dtype=pl.Utf8).alias("example"),
        pl.col("unrated").sum(),
        _other_requests(by),
    ).with_columns((pl.col("count") / total).alias("share"), *_rate_columns())
    return pl.concat([named.head(GROUP_LIMIT), other.select(named.columns)])


def _other_requests(by: tuple[str, ...]) -> pl.Expr:
    """The requests of the OTHER row: the sum of its groups' where they split the requests
    (every key a request key), the one count all groups share where none does; unknown where
    groups share some requests and not others (no sum would be right)."""
    import polars as pl

    split = [k for k in by if k in REQUEST_KEYS]
    if not split:
        return pl.col("requests").max()
    if len(split) == len(by):
        return pl.when(pl.col("requests").count() > 0).then(pl.col("requests").sum())
    return pl.lit(None, dtype=pl.Int64).alias("requests")


def _origin_files(
    events: pl.DataFrame, requests: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Where the rows come from more than one origin, `file` becomes `origin:file`: two hosts'
    `vllm.log` are two files (in groups and examples). With one origin, file names are left as
    they are. (Scopes hold the origin apart either way.)"""
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


@dataclass(frozen=True)
class OriginRate:
    """Failures, scoped requests and the rate of one origin (a host, or the name --origin gave)."""

    origin: str | None
    failures: int
    requests: int | None
    rate: float | None
    unrated: int


def origin_rates(events: pl.DataFrame, requests: pl.DataFrame) -> list[OriginRate]:
    """Per origin, by the rule of the totals (each failure in its scope, or unrated); origins
    with requests and no failure too (their rate is 0)."""
    from harmony_doctor.scan.scopes import scoped, with_origin

    found = scoped(events, with_origin(requests))
    failures: dict[str | None, list[int]] = {}
    for origin, rated, n in found.events.select("origin", "rated", "n").iter_rows():
        row = failures.setdefault(origin, [0, 0])
        row[0] += n
        row[1] += n if rated else 0
    asked: dict[str | None, int] = {}
    for origin, n in zip(
        found.scopes["origin"].to_list(), found.scopes["requests"].to_list(), strict=True
    ):
        asked[origin] = asked.get(origin, 0) + int(n)
    rows = []
    for origin in sorted(failures.keys() | asked.keys(), key=lambda o: o or ""):
        total, rated = failures.get(origin, [0, 0])
        n = asked.get(origin) or None
        rows.append(OriginRate(origin, total, n, rated / n if n else None, total - rated))
    return rows


def frame_totals(
    files: Sequence[FileReport], events: pl.DataFrame, requests: pl.DataFrame
) -> dict[str, Any]:
    """The totals line of a scan's frames or of event files read back (`report`): requests
    (every one counted), the rate over the scopes that give one and its own denominator
    (`rate_requests`: a scope that logged fewer requests than failures gives no rate, and its
    requests are not in it), the failures no rate covers (`unrated`)."""
    from harmony_doctor.scan.fold import failures_of
    from harmony_doctor.scan.scopes import scoped, with_origin

    found = scoped(events, with_origin(requests))
    rated = failures_of(found.events.filter("rated"))
    total = int(found.scopes["requests"].sum()) if found.scopes.height else 0
    return totals_line(
        files,
        requests=found.requests or None,
        failures=failures_of(found.events),
        rated=rated,
        rate=rated / total if total else None,
        rate_requests=total or None,
        excess=found.excess,
    )


def totals_line(
    files: Sequence[FileReport],
    *,
    requests: int | None = None,
    failures: int = 0,
    rated: int = 0,
    rate: float | None = None,
    rate_requests: int | None = None,
    excess: int = 0,
) -> dict[str, Any]:
    """The totals line (the JSON contract's keys, in its order) of `files` and what was
    counted in them; the defaults are a scan that counted no failure and no request, whose
    line needs no frame (and no polars) at all."""
    return {
        "files": len(files),
        "bytes": sum(f.bytes for f in files),
        "lines": sum(f.lines for f in files),
        "requests": requests,
        "failures": failures,
        "rate": rate,
        "skipped": sum(1 for f in files if f.status == "skipped"),
        "partial": sum(1 for f in files if f.status == "partial"),
        "rate_note": NOT_LOGGED if excess else None,
        "unrated": failures - rated,
        "clock": CLOCK,
        "rate_requests": rate_requests,
    }


def requests_frame(tallies: Iterable[RequestTally]) -> pl.DataFrame:
    """One row per request tally, with the pid as text and the day cut from the hour."""
    return requests_view(tally_table(tallies))


def tally_table(tallies: Iterable[RequestTally]) -> pl.DataFrame:
    """Request tallies as stored beside an events file: REQUEST_COLUMNS, nothing derived."""
    return _frame(tallies, REQUEST_COLUMNS)


def requests_view(table: pl.DataFrame) -> pl.DataFrame:
    """A tally table (built, or read back with REQUEST_COLUMNS' types) as summaries use it."""
    import polars as pl

    from harmony_doctor.scan.scopes import with_origin

    return with_origin(table).with_columns(
        pl.col("pid").cast(pl.Utf8), pl.col("hour").str.slice(0, 10).alias("day")
    )


def event_file_reports(paths: Sequence[Path], counts: Sequence[int]) -> list[FileReport]:
    """Event files read back (`counts` events each), one line per event, as report lists them."""
    return [
        FileReport(str(path), "ok", None, file_size(path), n, n)
        for path, n in zip(paths, counts, strict=True)
    ]


def group_keys(values: Sequence[str]) -> tuple[str, ...]:
    """`--by` values (comma-separated or repeated) as group keys; `code` when none are given."""
    keys = tuple(k.strip() for v in values for k in v.split(",") if k.strip()) or ("code",)
    unknown = [k for k in keys if k not in GROUP_KEYS]
    if unknown:
        raise InputError(f"cannot group by {unknown[0]!r}: use {', '.join(GROUP_KEYS)}")
    return tuple(dict.fromkeys(keys))


def file_size(path: Path | None) -> int:
    """Bytes of a file on disk; 0 for standard input or a file that cannot be stat-ed."""
    if path is None:
        return 0
    try:
        return path.stat().st_size
    except OSError:
        return 0
