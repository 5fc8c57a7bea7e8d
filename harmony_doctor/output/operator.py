"""What the operator outputs (Prometheus, GitHub, HTML) read: one summary, whichever command."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl

    from harmony_doctor.scan.service import Summary

# Where a row has no origin (files scanned before the origin column existed, or a frame
# without it), its failures and requests still count, under an empty origin.
NO_ORIGIN = ""


@dataclass(frozen=True)
class OperatorSummary:
    """The summary scan and report print, plus the rows behind it (events and request tallies).

    `events` is `scan.summary.events_frame`'s shape (read back from event files by report);
    `requests` is `requests_frame`'s, possibly empty. Either may carry an `origin` column."""

    title: str
    keys: tuple[str, ...]
    totals: dict[str, Any]
    groups: list[dict[str, Any]]
    files: list[dict[str, Any]]
    events: pl.DataFrame
    requests: pl.DataFrame


def operator_summary(title: str, summary: Summary) -> OperatorSummary:
    """The operator outputs' view of the summary `title` (scan or report) printed."""
    files = [asdict(f) for f in summary.files]
    groups = summary.table.to_dicts()
    return OperatorSummary(
        title, summary.keys, summary.totals, groups, files, summary.events, summary.requests
    )


def text(value: Any) -> str:
    """A cell as text: None is empty."""
    return "" if value is None else str(value)


def origins(frame: pl.DataFrame) -> Iterator[str]:
    """The origin of each row, NO_ORIGIN when the frame has no origin column."""
    if "origin" in frame.columns:
        yield from (text(v) for v in frame["origin"].to_list())
    else:
        yield from (NO_ORIGIN for _ in range(frame.height))


@dataclass(frozen=True)
class OriginRow:
    origin: str
    failures: int
    requests: int | None
    rate: float | None


def per_origin(summary: OperatorSummary) -> list[OriginRow]:
    """Failures, requests and rate per origin, by the rule of the totals: a rate counts only
    failures from files whose requests were counted, and is unknown above 100%."""
    events, requests = summary.events, summary.requests
    counted_files = set(requests["file"].to_list()) if requests.height else set()
    failures: dict[str, int] = {}
    counted: dict[str, int] = {}
    for origin, file in zip(origins(events), events["file"].to_list(), strict=True):
        failures[origin] = failures.get(origin, 0) + 1
        if file in counted_files:
            counted[origin] = counted.get(origin, 0) + 1
    asked: dict[str, int] = {}
    if requests.height:
        for origin, count in zip(origins(requests), requests["count"].to_list(), strict=True):
            asked[origin] = asked.get(origin, 0) + int(count or 0)
    rows = []
    for origin in sorted(failures.keys() | asked.keys()):
        total = asked.get(origin) or None
        hits = counted.get(origin, 0)
        rate = hits / total if total and hits <= total else None
        rows.append(OriginRow(origin, failures.get(origin, 0), total, rate))
    return rows
