"""The rule of every rate: each failure in the scope its requests were counted in (same origin,
process, pid and hour), or in none. Used by the summary, the hourly rates and the charts; reads
events frames or folded ones (scan/fold.py: a row stands for `n` events)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harmony_doctor.scan.fold import fold
from harmony_doctor.scan.names import process_of, rotation_rank

if TYPE_CHECKING:
    import polars as pl

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

    requests = _with_process(_with_kind(with_origin(requests)))
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
    rotation order), or else stay unstamped, requests and failures alike (never the next
    stamped hour: its requests would count failures that are not in it). Events get the hour
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
    fills: list[tuple[Any, Any, Any, Any, str | None]] = []
    for (origin, process, pid), files in by_process.items():
        files.sort(key=lambda f: rotation_rank(f[0]))
        last = None
        for file, _first, hi in files:
            fills.append((origin, process, pid, file, last))
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
    """Events folded (scan/fold.py: a row stands for `n` of them) with `rated` (their scope
    counted at least as many requests as failures) and the scopes whose rate is known
    (`requests` per scope)."""

    events: pl.DataFrame
    scopes: pl.DataFrame
    excess: int  # failures in scopes with fewer requests than failures (the log missed some)
    requests: int  # every request counted, in scopes with a rate or not
    # (file, scope...): each file's scopes with a rate: those of its tallies, or else those of
    # its process (every hour) where it logged failures only (a stderr part)
    files: pl.DataFrame
    # every scope that counted requests, with a rate or not (`requests` sums these): what any
    # output that shows request counts reads, so that they are the totals' (each process
    # counted one way, never the ways added up)
    counted: pl.DataFrame


_ROW = "__row"  # a scoped key row's place in the events frame


def scoped(events: pl.DataFrame, requests: pl.DataFrame) -> Scoped:
    """Each failure in the scope its requests were counted in, or in none: same origin and
    process, same pid, same hour (events as a frame or folded: a folded row's events share
    their scope). A scope with more failures than requests did not log every
    request: it gives no rate, and its failures are unrated with the others."""
    import polars as pl

    full = _with_process(fold(events)).with_columns(pl.col("pid").cast(pl.Utf8))
    # Scoping joins only the columns it reads (a join gathers every column it is given: the
    # whole frame, messages too, once per join), then sets the answers on the frame by row.
    keys = full.select("origin", "process", "server", "pid", "file", "hour", "n")
    keys = keys.with_row_index(_ROW)
    events, requests = _lone_pids(keys, _with_process(with_origin(requests)))
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
    failures = (
        events.group_by(at).agg(pl.col("n").sum().alias("failures")).rename({"scope_hour": "hour"})
    )
    scopes = scopes.join(failures, on=list(SCOPE), how="left", nulls_equal=True).with_columns(
        pl.col("failures").fill_null(0).cast(pl.Int64)
    )
    over = scopes.filter(pl.col("failures") > pl.col("requests"))
    everything = int(scopes["requests"].sum()) if scopes.height else 0
    every_scope = scopes
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
    # A failure before its file's first stamp is in the hour its requests were counted in (the
    # part before it's last, or none), so that hour groups add up to the totals.
    hour = pl.coalesce(full["hour"], rated["scope_hour"]).alias("hour")
    placed = [hour, hour.str.slice(0, 10).alias("day")] if "day" in full.columns else [hour]
    answered = full.with_columns(rated["pid"], rated["rated"], *placed)
    return Scoped(answered, scopes, excess, everything, files, every_scope)


def with_origin(frame: pl.DataFrame) -> pl.DataFrame:
    """A frame read from a file written before origins existed gets an empty origin column."""
    import polars as pl

    if "origin" in frame.columns:
        return frame
    return frame.with_columns(pl.lit(None, dtype=pl.Utf8).alias("origin"))
