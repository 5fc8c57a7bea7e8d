"""The numbers the page's charts draw: per time bucket (hour, or day over many days), failures
by code, and the failure rate by code and by origin under the rule of the totals (a failure
counts in a rate only in the scope its requests were counted in: origin, process, hour)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta

from harmony_doctor.output.operator import NO_ORIGIN, OperatorSummary, text

HOUR, DAY = timedelta(hours=1), timedelta(days=1)
# Up to this many days with data, the charts count per hour; beyond, per day.
HOURLY_DAYS = 10
ALL = "all"  # the origin of rows that name none


@dataclass(frozen=True)
class Series:
    """Values per bucket of named series (codes or origins), the names ranked by failures."""

    unit: timedelta
    values: dict[str, dict[datetime, float]]
    ranked: tuple[str, ...]  # names, most failures first
    failures: dict[str, int]  # each name's failures (the legend's counts)
    left_out: int  # failures counted but not drawn (no time, or in no rate)

    @property
    def buckets(self) -> list[datetime]:
        return sorted({b for per in self.values.values() for b in per})


def hour_of(value: object) -> datetime | None:
    """`2026-11-27T10` or `2026-11-27 10...` as that hour; None when it is not one."""
    raw = text(value)
    try:
        return datetime(int(raw[:4]), int(raw[5:7]), int(raw[8:10]), int(raw[11:13]))
    except ValueError:
        return None


def bucket(moment: datetime, unit: timedelta) -> datetime:
    return moment if unit == HOUR else moment.replace(hour=0)


def unit_of(hours: list[datetime | None]) -> timedelta:
    days = {h.date() for h in hours if h is not None}
    return HOUR if len(days) <= HOURLY_DAYS else DAY


def _ranked(failures: Counter[str]) -> tuple[str, ...]:
    return tuple(name for name, _ in sorted(failures.items(), key=lambda kv: (-kv[1], kv[0])))


def failure_counts(summary: OperatorSummary, unit: timedelta) -> Series:
    """Failures per bucket and code, rated or not; those without a time are left out."""
    values: dict[str, dict[datetime, float]] = {}
    left_out = 0
    failures: Counter[str] = Counter()
    for raw, hour, n in summary.folded.select("code", "hour", "n").iter_rows():
        code = text(raw)
        failures[code] += n
        moment = hour_of(hour)
        if moment is None:
            left_out += n
            continue
        per = values.setdefault(code, {})
        at = bucket(moment, unit)
        per[at] = per.get(at, 0) + n
    return Series(unit, values, _ranked(failures), dict(failures), left_out)


def _origin_name(value: object) -> str:
    return text(value) if text(value) != NO_ORIGIN else ALL


def rates(summary: OperatorSummary, unit: timedelta, key: str) -> Series:
    """The failure rate per bucket by `key` (code or origin): rated failures over the requests
    of the scopes they were counted in. By code, each code's share of a bucket's requests (they
    add up to the bucket's rate); by origin, each origin's own rate. Failures in no rate, or in
    a scope without a time, are left out (counted in `left_out`)."""
    found = summary.rates.scoped
    scopes, drawn, left_out = summary.rates.in_hours
    asked: Counter[tuple[str, datetime]] = Counter()
    for origin, hour, n in scopes.select("origin", "hour", "requests").iter_rows():
        moment = hour_of(hour)
        if moment is not None:
            name = _origin_name(origin) if key == "origin" else ALL
            asked[(name, bucket(moment, unit))] += int(n)
    failed: Counter[tuple[str, str, datetime]] = Counter()
    columns = ["origin", "hour", "n"] if key == "origin" else [key, "origin", "hour", "n"]
    for row in drawn.select(columns).iter_rows():
        moment = hour_of(row[-2])
        if moment is not None:
            scope = _origin_name(row[-3]) if key == "origin" else ALL
            label = scope if key == "origin" else text(row[0])
            failed[(label, scope, bucket(moment, unit))] += row[-1]
    values: dict[str, dict[datetime, float]] = {}
    for (label, scope, at), n in failed.items():
        values.setdefault(label, {})[at] = n / asked[(scope, at)]
    if key == "origin":  # an origin's quiet buckets read 0%, not missing
        for scope, at in asked:
            values.setdefault(scope, {}).setdefault(at, 0.0)
    every: Counter[str] = Counter()
    for value, n in found.events.select(key, "n").iter_rows():
        every[_origin_name(value) if key == "origin" else text(value)] += n
    for name in values:  # an origin with requests and no failure is drawn at 0%
        every.setdefault(name, 0)
    return Series(unit, values, _ranked(every), dict(every), left_out)
