"""The summary as Prometheus metrics, for node-exporter's textfile collector.

Label values come from logs (codes, servers, origins): each is made one plain line through
the one escaper (`one_line`: control and bidi characters shown as `\\x1b`-style text) before
prometheus_client escapes its `\\` and `"`, so the textfile, `cat`ed, runs and reorders
nothing, and Prometheus reads it (an escape written after the format's own, `\\x1b` with one
backslash, made promtool refuse the whole file).

Gauges, not counters: each file is a snapshot of one scan window, and a later scan over other
logs may count fewer failures, which a counter must never do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harmony_doctor.output.escape import one_line
from harmony_doctor.output.operator import OperatorSummary, origins, per_origin, text

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

PREFIX = "harmony_doctor"


def prometheus_registry(summary: OperatorSummary, now: float) -> CollectorRegistry:
    """A registry holding the summary's metrics; `now` is the scan time (Unix seconds)."""
    from prometheus_client import CollectorRegistry, Gauge

    registry = CollectorRegistry()
    failures = Gauge(
        f"{PREFIX}_failures",
        "Harmony parsing failures found, by code, kind, server and origin.",
        ["code", "kind", "server", "origin"],
        registry=registry,
    )
    folded = summary.folded
    rows = folded.select("code", "kind", "server", "n").iter_rows()
    tally: dict[tuple[str, ...], int] = {}
    for (code, kind, server, n), origin in zip(rows, origins(folded), strict=True):
        key = (_label(code), _label(kind), _label(server), _label(origin))
        tally[key] = tally.get(key, 0) + n
    for labels, count in tally.items():
        failures.labels(*labels).set(count)

    requests = Gauge(
        f"{PREFIX}_requests",
        "Requests the logs recorded, by server and origin, counted as the totals count them: "
        "each process one way (access lines, Received lines or completions), never added up.",
        ["server", "origin"],
        registry=registry,
    )
    for (server, origin), count in requests_by_server(summary).items():
        requests.labels(_label(server), _label(origin)).set(count)

    rate = Gauge(
        f"{PREFIX}_failure_rate",
        "Failures per request (0-1) of each process and hour, by origin; absent where the "
        "logs record no requests.",
        ["origin"],
        registry=registry,
    )
    unrated = Gauge(
        f"{PREFIX}_unrated_failures",
        "Failures in no rate, by origin: logs without request lines, or hours that logged "
        "fewer requests than failures.",
        ["origin"],
        registry=registry,
    )
    for row in per_origin(summary):
        if row.rate is not None:
            rate.labels(_label(row.origin)).set(row.rate)
        unrated.labels(_label(row.origin)).set(row.unrated)

    files = Gauge(
        f"{PREFIX}_files",
        "Inputs read, by status (ok, partial, skipped).",
        ["status"],
        registry=registry,
    )
    for status in ("ok", "partial", "skipped"):
        n = sum(1 for f in summary.files if f.get("status") == status)
        files.labels(status).set(n)

    Gauge(
        f"{PREFIX}_scan_timestamp_seconds",
        "When this file was written (Unix seconds): alert when it grows old.",
        registry=registry,
    ).set(now)
    return registry


def requests_by_server(summary: OperatorSummary) -> dict[tuple[str, str], int]:
    """Requests per (server, origin) as the totals count them (scan/scopes.py `scoped`): they
    add up to the totals' `requests`."""
    asked: dict[tuple[str, str], int] = {}
    for (server, origin), count in summary.rates.by_server.items():
        key = (text(server), text(origin))
        asked[key] = asked.get(key, 0) + count
    return asked


def prometheus_text(summary: OperatorSummary, now: float) -> str:
    """The textfile's content (the exposition format), as `write_to_textfile` writes it."""
    return exposition(prometheus_registry(summary, now))


def exposition(registry: CollectorRegistry) -> str:
    """The registry in the exposition format (its label values made plain by `_label`)."""
    from prometheus_client import generate_latest

    return generate_latest(registry).decode("utf-8")


def _label(value: object) -> str:
    """A label value as one plain line: the one escaper's, as watch's metrics make theirs."""
    return one_line(text(value))
