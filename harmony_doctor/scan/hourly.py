"""The failure rate hour by hour, per scope (origin and process): what the terminal's
sparkline draws under the scan summary. Scoped as the totals are (summary.scoped): an hour's
rate is its process's failures in that hour over its requests in that hour; failures in no
scope are counted apart, per process."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harmony_doctor.scan.hour_rates import HourlyRates, HourRate, ScopeRates
from harmony_doctor.scan.scopes import scoped

if TYPE_CHECKING:
    import polars as pl


def hourly_rates(events: pl.DataFrame, requests: pl.DataFrame) -> HourlyRates:
    """Per origin and process, the requests and rated failures of each hour that has a rate
    (pids of one process summed: a restart is one line); hourless scopes (request lines
    without any time) are left out of the hours but their failures are not made unrated."""
    import polars as pl

    found = scoped(events, requests)
    process = ["origin", "process"]
    hours = (
        found.scopes.drop_nulls("hour")
        .group_by([*process, "hour"])
        .agg(pl.col("requests").sum(), pl.col("failures").sum())
        .sort([*process, "hour"], nulls_last=True)
    )
    series: dict[tuple[str | None, str], list[HourRate]] = {}
    for origin, name, hour, n, failed in hours.iter_rows():
        series.setdefault((origin, name), []).append(HourRate(hour, int(n), int(failed)))
    unrated: dict[tuple[str | None, str], int] = {}
    if found.events.height:
        missed = found.events.filter(~pl.col("rated")).group_by(process).agg(pl.col("n").sum())
        for origin, name, n in missed.iter_rows():
            unrated[(origin, name)] = int(n)
    ordered = sorted(series.items(), key=lambda kv: (kv[0][0] or "", kv[0][1]))
    scopes = tuple(
        ScopeRates(origin, name, tuple(rows), unrated.pop((origin, name), 0))
        for (origin, name), rows in ordered
    )
    return HourlyRates(scopes, sum(unrated.values()), len(unrated))
