"""`watch --alert-rules`: a Prometheus rules file over watch's metrics: the failure rate over a
window above a threshold, a code never seen before, and the watcher down."""

from __future__ import annotations

import json
from dataclasses import dataclass

from harmony_doctor.watch.metrics import PREFIX


@dataclass(frozen=True)
class AlertOptions:
    rate: float = 0.01  # failures per request
    window: str = "15m"  # PromQL duration the rate is taken over
    lookback: str = "7d"  # how far back a code counts as seen before
    down_for: str = "5m"
    job: str = "harmony-doctor-watch"  # the scrape job's name


def _quoted(value: str) -> str:
    return json.dumps(value)  # a YAML double-quoted scalar: JSON's escapes are YAML's


def alert_rules(options: AlertOptions) -> str:
    """The rules file's text (YAML)."""
    failures, requests = f"{PREFIX}_failures_total", f"{PREFIX}_requests_total"
    w = options.window
    rate = (
        f"sum by (origin) (rate({failures}[{w}])) / sum by (origin) (rate({requests}[{w}])) "
        f"> {options.rate!r} and on (origin) sum by (origin) (rate({requests}[{w}])) > 0"
    )
    new_code = (
        f"sum by (code) ({failures}) > 0 unless sum by (code) "
        f"(max_over_time({failures}[{options.lookback}] offset 10m)) > 0"
    )
    job = options.job.replace("\\", "\\\\").replace('"', '\\"')
    down = f'up{{job="{job}"}} == 0 or absent(up{{job="{job}"}})'
    rules = [
        (
            "HarmonyFailureRateHigh",
            rate,
            w,
            "warning",
            f"Harmony failures above {options.rate:.2%} of requests on {{{{ $labels.origin }}}}",
            f"Over the last {w}, {{{{ $value | humanizePercentage }}}} of the requests logged "
            "on {{ $labels.origin }} ended in a Harmony parsing failure "
            "(harmony-doctor report on the watch's --events file says which).",
        ),
        (
            "HarmonyNewFailureCode",
            new_code,
            "0m",
            "info",
            "A Harmony failure code not seen before: {{ $labels.code }}",
            f"{{{{ $labels.code }}}} was counted for the first time in {options.lookback} "
            "(harmony-doctor rules {{ $labels.code }} explains it).",
        ),
        (
            "HarmonyWatchDown",
            down,
            options.down_for,
            "warning",
            "harmony-doctor watch is down",
            f"Prometheus has not scraped the job {options.job} for {options.down_for}: Harmony "
            "failures are not being counted.",
        ),
    ]
    lines = ["groups:", "  - name: harmony-doctor-watch", "    rules:"]
    for name, expr, wait, severity, summary, description in rules:
        lines += [
            f"      - alert: {name}",
            f"        expr: {_quoted(expr)}",
            f"        for: {wait}",
            "        labels:",
            f"          severity: {severity}",
            "        annotations:",
            f"          summary: {_quoted(summary)}",
            f"          description: {_quoted(description)}",
        ]
    return "\n".join(lines) + "\n"
