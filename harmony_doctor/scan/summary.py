"""Events and request tallies -> grouped summary, totals and rates (polars)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harmony_doctor.choices import GROUP_KEYS
from harmony_doctor.errors import InputError
from harmony_doctor.models import RequestTally, ScanEvent
from harmony_doctor.scan.names import process_of, rotation_rank
from harmony_doctor.scan.records import FileReport, FileScan, ScanResult

if TYPE_CHECKING:
    import polars as pl

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

# What a request tally counted, in the order preferred on a tie: access lines, `Received
# request` lines, logged completions (scan/run.py writes all three; a process is counted one way).
REQUEST_KINDS = ("access", "received", "completions")
# A rate's scope: the requests of one server process in one hour, on one host.
SCOPE = ("origin", "process", "pid", "hour")


def _with_process(frame: pl.DataFrame) -> pl.DataFrame:
    import polars as pl

    if "process" in frame.columns:
        return frame
    files = frame["file"].unique().to_list()
    mapping = {f: process_of(f) for f in files if f is not None}
    return frame.with_columns(
        pl.col("file").replace_strict(mapping, default=None, return_dtype=pl.Utf8).alias("process")
    )


def _lone_pids(events: pl.DataFrame, requests: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A server that stamps its pid on some lines only (vLLM's prefix on its own lines but
    not on a library's, a traceback's lines) is one process where its log names one pid for
    it: its failures and requests without a pid take that one. Where the log names two or
    more, or the lines are another server's (a log holding several), a line without a pid
    belongs to none of them, and stays apart."""
    import polars as pl

    key = ["origin", "process", "server"]
    named = pl.concat(
        [events.select(*key, "pid"), requests.select(*key, "pid")], how="vertical_relaxed"
    )
    lone = (
        named.drop_nulls("pid")
        .unique()
        .group_by(key)
        .agg(pl.col("pid").first().alias("lone"), pl.len().alias("pids"))
        .filter(pl.col("pids") == 1)
        .drop("pids")
    )

    def fill(frame: pl.DataFrame) -> pl.DataFrame:
        return (
            frame.join(lone, on=key, how="left", nulls_equal=True)
            .with_columns(pl.col("pid").fill_null(pl.col("lone")))
            .drop("lone")
        )

    # A tally's server is its file's (the first one it names), not its lines': where the
    # process's failures name another server too, its tallies without a pid may be that one's
    # (llama-server's request lines in a log that also holds Ollama's) and take no pid.
    place = ["origin", "process"]
    mixed = (
        events.drop_nulls("server")
        .join(requests.select(*key).unique(), on=place, how="inner", nulls_equal=True)
        .filter(pl.col("server") != pl.col("server_right"))
        .select(*place, pl.col("server_right").alias("server"), pl.lit(True).alias("mixed"))
        .unique()
    )
    requests = (
        requests.join(mixed, on=key, how="left", nulls_equal=True)
        .join(lone, on=key, how="left", nulls_equal=True)
        .with_columns(
            pl.when(pl.col("mixed").fill_null(False))
            .then(pl.col("pid"))
            .otherwise(pl.col("pid").fill_null(pl.col("lone")))
            .alias("pid")
        )
        .drop("mixed", "lone")
    )
    return fill(events), requests


def counted_tallies(requests: pl.DataFrame) -> pl.DataFrame:
    """The tallies a rate counts, with their process: each process (origin, process, pid)
    counted one way, the kind that counts the most of its requests over all its files and
    hours (REQUEST_KINDS' order on a tie), never added up: a rotated part with fewer access
    lines than `Received` lines does not switch counting."""
    import polars as pl

    requests = _with_process(_with_kind(_with_origin(requests)))
    process = ["origin", "process", "pid"]
    rank = {kind: i for i, kind in enumerate(REQUEST_KINDS)}
    chosen = (
        requests.group_by([*process, "kind"])
        .agg(pl.col("count").sum().alias("n"))
        .with_columns(
            pl.col("kind").replace_strict(rank, default=len(rank), return_dtype=pl.Int64).alias("r")
        )
        .sort(["n", "r"], descending=[True, False])
        .group_by(process, maintain_order=True)
        .first()
        .select([*process, "kind"])
    )
    return requests.join(chosen, on=[*process, "kind"], how="semi", nulls_equal=True)


def _scopes_of(counted: pl.DataFrame) -> pl.DataFrame:
    """Requests per scope (origin, process, pid, hour), with the scope's day and server."""
    import polars as pl

    return (
        counted.group_by(list(SCOPE), maintain_order=True)
        .agg(
            pl.col("count").sum().cast(pl.Int64).alias("requests"),
            pl.col("server").drop_nulls().first().alias("server"),
        )
        .filter(pl.col("requests") > 0)
        .with_columns(pl.col("hour").str.slice(0, 10).alias("day"))
    )


def _place_heads(counted: pl.DataFrame, events: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Lines before a file's first stamp have no hour of their own (a rotated part that starts
    with an access line): they take the last hour of the same process's part before it (in
    rotation order), or else this file's first hour. Events get the hour
    their scope is looked up by as `scope_hour`."""
    import polars as pl

    key = ["origin", "process", "pid", "file"]
    hours = pl.concat(
        [counted.select(*key, "hour"), events.select(*key, "hour")], how="vertical_relaxed"
    ).drop_nulls("hour")
    spans = hours.group_by(key).agg(
        pl.col("hour").min().alias("lo"), pl.col("hour").max().alias("hi")
    )
    by_process: dict[tuple[Any, ...], list[tuple[Any, str, str]]] = {}
    for origin, process, pid, file, lo, hi in spans.iter_rows():
        by_process.setdefault((origin, process, pid), []).append((file, lo, hi))
    fills = []
    for (origin, process, pid), files in by_process.items():
        files.sort(key=lambda f: rotation_rank(f[0]))
        last = None
        for file, lo, hi in files:
            fills.append((origin, process, pid, file, last or lo))
            last = hi
    fill = pl.DataFrame(
        fills,
        schema={
            "origin": pl.Utf8,
            "process": pl.Utf8,
            "pid": pl.Utf8,
            "file": pl.Utf8,
            "fill": pl.Utf8,
        },
        orient="row",
    )
    counted = (
        counted.join(fill, on=key, how="left", nulls_equal=True)
        .with_columns(pl.col("hour").fill_null(pl.col("fill")))
        .drop("fill")
    )
    events = (
        events.join(fill, on=key, how="left", nulls_equal=True)
        .with_columns(pl.col("hour").fill_null(pl.col("fill")).alias("scope_hour"))
        .drop("fill")
    )
    return counted, events


def _with_kind(frame: pl.DataFrame) -> pl.DataFrame:
    """Tallies written before kinds existed were counted one way already: as access lines."""
    import polars as pl

    if "kind" not in frame.columns:
        return frame.with_columns(pl.lit("access").alias("kind"))
    return frame.with_columns(pl.col("kind").fill_null("access"))


@dataclass(frozen=True)
class Scoped:
    """Events with `rated` (their scope counted at least as many requests as failures) and the
    scopes whose rate is known (`requests` per scope)."""

    events: pl.DataFrame
    scopes: pl.DataFrame
    excess: int  # failures in scopes with fewer requests than failures (the log missed some)
    requests: int  # every request counted, in scopes with a rate or not
    # (file, scope...): each file's scopes with a rate: those of its tallies, or else those of
    # its process (every hour) where it logged failures only (a stderr part)
    files: pl.DataFrame


_ROW = "__row"  # a scoped key row's place in the events frame


def scoped(events: pl.DataFrame, requests: pl.DataFrame) -> Scoped:
    """Each failure in the scope its requests were counted in, or in none: same origin and
    process, same pid, same hour. A scope with more failures than requests did not log every
    request: it gives no rate, and its failures are unrated with the others."""
    import polars as pl

    full = _with_process(_with_origin(events)).with_columns(pl.col("pid").cast(pl.Utf8))
    # Scoping joins only the columns it reads (a join gathers every column it is given: the
    # whole frame, messages too, once per join), then sets the answers on the frame by row.
    keys = full.select("origin", "process", "server", "pid", "file", "hour").with_row_index(_ROW)
    events, requests = _lone_pids(keys, _with_process(_with_origin(requests)))
    counted, events = _place_heads(counted_tallies(requests), events)
    scopes = _scopes_of(counted)
    # A process whose request lines carry no time at all (nor one before them) is one scope
    # over all hours: its failures' hours cannot be told apart from its requests'.
    process = ["origin", "process", "pid"]
    hourless = (
        scopes.group_by(process)
        .agg(pl.col("hour").is_null().all().alias("hourless"))
        .filter(pl.col("hourless"))
    )
    events = events.join(hourless, on=process, how="left", nulls_equal=True).with_columns(
        pl.when(pl.col("hourless")).then(None).otherwise(pl.col("scope_hour")).alias("scope_hour")
    )
    at = [*process, "scope_hour"]
    failures = events.group_by(at).agg(pl.len().alias("failures")).rename({"scope_hour": "hour"})
    scopes = scopes.join(failures, on=list(SCOPE), how="left", nulls_equal=True).with_columns(
        pl.col("failures").fill_null(0).cast(pl.Int64)
    )
    over = scopes.filter(pl.col("failures") > pl.col("requests"))
    everything = int(scopes["requests"].sum()) if scopes.height else 0
    scopes = scopes.filter(pl.col("failures") <= pl.col("requests"))
    rated = (
        events.join(
            scopes.select(list(SCOPE)).with_columns(pl.lit(True).alias("rated")),
            left_on=at,
            right_on=list(SCOPE),
            how="left",
            nulls_equal=True,
        )
        .with_columns(pl.col("rated").fill_null(False))
        .sort(_ROW)
    )
    tallied = counted.select("file", *SCOPE).unique()
    untallied = (
        rated.join(tallied.select("file").unique(), on="file", how="anti")
        .select("file", *process)
        .unique()
        .join(scopes.select(list(SCOPE)), on=process, how="inner", nulls_equal=True)
    )
    files = pl.concat([tallied, untallied.select(tallied.columns)]).join(
        scopes.drop("failures"), on=list(SCOPE), how="inner", nulls_equal=True
    )
    excess = int(over["failures"].sum()) if over.height else 0
    answered = full.with_columns(rated["pid"], rated["rated"])
    return Scoped(answered, scopes, excess, everything, files)


def summarize(result: ScanResult | FileScan, by: tuple[str, ...]) -> pl.DataFrame:
    """One row per group: count, share, rate (when requests are known), first/last seen, example."""
    return summarize_frames(events_frame(result.events), requests_frame(result.requests), by)


def summarize_frames(
    frame: pl.DataFrame, requests: pl.DataFrame, by: tuple[str, ...]
) -> pl.DataFrame:
    """The summary of an events frame (scan's, or event files read back) and request counts.

    A rate counts a failure only in its scope (scoped): a log without request lines adds
    failures but no requests (they are `unrated`), and must not inflate anyone's rate. A group
    split by requests' dimensions (origin, pid, server, day, hour; a file by the scopes of its
    tallies, or those of its process where it logged failures only) divides by the requests
    of those scopes; other groups by all requests in scopes with a rate.
    """
    import polars as pl

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
    found = scoped(*_origin_files(_with_origin(frame), _with_origin(requests)))
    total = frame.height
    events = found.events.with_columns(
        (pl.col("file") + ":" + pl.col("line").cast(pl.Utf8)).alias("example"),
        *(pl.col(k).cast(pl.Utf8) for k in by),
    )
    grouped = (
        events.group_by(list(by), maintain_order=True)
        .agg(
            pl.len().alias("count"),
            pl.col("rated").sum().cast(pl.Int64).alias("rated"),
            pl.col("timestamp").min().alias("first_seen"),
            pl.col("timestamp").max().alias("last_seen"),
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
    known = pl.col("requests").fill_null(0)
    grouped = grouped.with_columns(
        pl.when((known > 0) & (pl.col("rated") > 0) & (pl.col("rated") <= known))
        .then(pl.col("rated") / known)
        .otherwise(None)
        .alias("rate"),
        pl.when(pl.col("rated") > known)
        .then(pl.lit(NOT_LOGGED))
        .otherwise(None)
        .alias("rate_note"),
    )
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
    found = scoped(_with_origin(events), _with_origin(requests))
    failures: dict[str | None, list[int]] = {}
    for origin, rated in zip(
        found.events["origin"].to_list(), found.events["rated"].to_list(), strict=True
    ):
        row = failures.setdefault(origin, [0, 0])
        row[0] += 1
        row[1] += int(bool(rated))
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
    found = scoped(_with_origin(events), _with_origin(requests))
    rated = int(found.events["rated"].sum()) if events.height else 0
    total = int(found.scopes["requests"].sum()) if found.scopes.height else 0
    return totals_line(
        files,
        requests=found.requests or None,
        failures=events.height,
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

    return _with_origin(table).with_columns(
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
