"""The counters as Prometheus metrics: served on /metrics (with /healthz) or written as
node-exporter's textfile, atomically. Names follow Prometheus' rules (a `harmony_doctor_watch_`
prefix, `_total` on counters, base units); every label set is bounded (code, kind, server,
origin: never message text or token ids), and every label value is log text made one safe
line by the one escaper (output/escape.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING

from harmony_doctor.inputs.files import MAX_LINE
from harmony_doctor.output.escape import one_line, shorten
from harmony_doctor.watch.counts import Counts

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry
    from prometheus_client.metrics_core import Metric

PREFIX = "harmony_doctor_watch"
MAX_LABEL = 120  # characters of one label value
TEXTFILE = "harmony_doctor_watch.prom"


@dataclass(frozen=True)
class Snapshot:
    """What the metrics show at one moment."""

    counts: Counts
    files: int  # files followed now
    started: float  # Unix seconds the watch started


def label(value: str) -> str:
    return shorten(one_line(value), MAX_LABEL)


class WatchCollector:
    """A prometheus_client collector over the latest snapshot."""

    def __init__(self, snapshot: Callable[[], Snapshot]) -> None:
        self.snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        shot = self.snapshot()
        counts = shot.counts
        failures = CounterMetricFamily(
            f"{PREFIX}_failures",
            "Harmony parsing failures counted, by code, kind, server and origin.",
            labels=["code", "kind", "server", "origin"],
        )
        for key, n in sorted(counts.failures.items()):
            failures.add_metric([label(v) for v in key], n)
        yield failures
        requests = CounterMetricFamily(
            f"{PREFIX}_requests",
            "Requests the logs recorded, by server and origin (each process counted one way).",
            labels=["server", "origin"],
        )
        for (server, origin), n in sorted(counts.requests_by().items()):
            requests.add_metric([label(server), label(origin)], n)
        yield requests
        unrated = CounterMetricFamily(
            f"{PREFIX}_unrated_failures",
            "Failures in no rate, by origin: their process and hour logged no requests.",
            labels=["origin"],
        )
        last = GaugeMetricFamily(
            f"{PREFIX}_last_failure_timestamp_seconds",
            "When the last failure was counted (Unix seconds), by origin.",
            labels=["origin"],
        )
        for origin in sorted(set(counts.unrated) | set(counts.last_failure)):
            unrated.add_metric([label(origin)], counts.unrated.get(origin, 0))
            if origin in counts.last_failure:
                last.add_metric([label(origin)], counts.last_failure[origin])
        yield unrated
        yield last
        yield CounterMetricFamily(f"{PREFIX}_read_bytes", "Log bytes read.", value=counts.bytes)
        yield CounterMetricFamily(f"{PREFIX}_read_lines", "Log lines read.", value=counts.lines)
        yield CounterMetricFamily(
            f"{PREFIX}_read_errors",
            "Reads that lost log input, each said on stderr: a file that could not be opened or "
            "read, or was not read whole (not text, a line cut short).",
            value=counts.read_errors,
        )
        yield CounterMetricFamily(
            f"{PREFIX}_cut_lines",
            f"Log lines longer than {MAX_LINE // (1024 * 1024)} MiB, read to that length only "
            "(a failure past the cut is not counted).",
            value=counts.cut_lines,
        )
        yield GaugeMetricFamily(f"{PREFIX}_files_followed", "Files followed now.", value=shot.files)
        yield GaugeMetricFamily(
            f"{PREFIX}_start_time_seconds",
            "When this watch started (Unix seconds).",
            value=shot.started,
        )


def metrics_registry(snapshot: Callable[[], Snapshot]) -> CollectorRegistry:
    """A registry whose one collector shows `snapshot()` (Watcher.snapshot) when scraped."""
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry(auto_describe=False)
    registry.register(WatchCollector(snapshot))
    return registry


def exposition(registry: CollectorRegistry) -> bytes:
    """The registry in Prometheus' text exposition format."""
    from prometheus_client import generate_latest

    return generate_latest(registry)


def write_metrics_textfile(folder: Path, registry: CollectorRegistry) -> None:
    """node-exporter's textfile, atomically (the one writer of output/)."""
    from harmony_doctor.output.operator_files import write_textfile as write

    write(folder / TEXTFILE, registry)


class MetricsServer:
    """/metrics and /healthz on HOST:PORT, served from a thread."""

    def __init__(self, host: str, port: int, registry: CollectorRegistry) -> None:
        from prometheus_client import CONTENT_TYPE_LATEST

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    self._send(200, exposition(registry), CONTENT_TYPE_LATEST)
                elif path == "/healthz":
                    self._send(200, b"ok\n", "text/plain; charset=utf-8")
                else:
                    self._send(404, b"not found: /metrics or /healthz\n", "text/plain")

            def _send(self, code: int, body: bytes, kind: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass  # a scrape every few seconds is no news

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
