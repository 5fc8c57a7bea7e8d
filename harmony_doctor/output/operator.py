"""What the operator outputs (Prometheus, GitHub, HTML) read: one summary, whichever command."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl

    from harmony_doctor.scan.service import Rates, Summary

# Where a row has no origin (files scanned before the origin column existed, or a frame
# without it), its failures and requests still count, under an empty origin.
NO_ORIGIN = ""


@dataclass(frozen=True)
class OperatorSummary:
    """The summary scan and report print, plus the rows behind it: the events folded
    (scan/fold.py: a row per code, file, process, hour..., standing for `n` events), the first
    events whole (`first`: `scan.summary.events_frame`'s shape, as many as annotations show)
    and the request tallies (`requests_frame`'s shape, possibly empty)."""

    title: str
    keys: tuple[str, ...]
    totals: dict[str, Any]
    groups: list[dict[str, Any]]
    files: list[dict[str, Any]]
    folded: pl.DataFrame
    first: pl.DataFrame
    requests: pl.DataFrame
    rates: Rates  # what scan computed of them: scopes, rates per origin, per server, per hour


def operator_summary(title: str, summary: Summary) -> OperatorSummary:
    """The operator outputs' view of the summary `title` (scan or report) printed."""
    files = [asdict(f) for f in summary.files]
    return OperatorSummary(
        title,
        summary.keys,
        summary.totals,
        summary.groups,
        files,
        summary.folded,
        summary.first,
        summary.requests,
        summary.rates,
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


def percent(rate: float) -> str:
    """A rate as a percentage that never reads 0.00% while it is above 0."""
    if 0 < rate < 0.00005:
        return "<0.01%"
    return f"{rate:.2%}"


def unrated_line(totals: dict[str, Any]) -> str:
    """Why some failures are in no rate, with how many: the one sentence every output uses."""
    from harmony_doctor.output.words import counted

    why = "their process logged no requests in their hour"
    if totals.get("rate_note"):
        why += ", or fewer than its failures"
    return f"{counted(totals['unrated'], 'failure')} unrated (in no rate): {why}"


@dataclass(frozen=True)
class OriginRow:
    origin: str
    failures: int
    requests: int | None
    rate: float | None
    unrated: int  # failures in no rate (logs without request lines)


def per_origin(summary: OperatorSummary) -> list[OriginRow]:
    """Failures, requests and rate per origin, by the rule of the totals: a failure counts in
    a rate only in its scope (its process and hour's requests), otherwise it is unrated."""
    return [
        OriginRow(text(r.origin), r.failures, r.requests, r.rate, r.unrated)
        for r in summary.rates.origins
    ]
