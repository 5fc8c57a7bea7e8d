"""`harmony-doctor watch`: live Harmony failure metrics for running servers (Prometheus)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Annotated, Any

import typer

from harmony_doctor import advanced
from harmony_doctor.cli.funnel import fail, note
from harmony_doctor.errors import ExitCode

_DURATION = re.compile(r"^(?:\d+(?:ms|[smhdwy]))+$")
_LISTEN = re.compile(r"^(?:\[(?P<v6>[^\]]+)\]|(?P<host>[^:]*)):(?P<port>\d{1,5})$")


def watch(
    paths: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="PATH...",
            help="Logs to follow: files, folders (/var/log/pods), globs (quoted); '-' is stdin.",
        ),
    ] = None,
    listen: Annotated[
        str | None,
        typer.Option("--listen", metavar="HOST:PORT", help="Serve /metrics and /healthz here."),
    ] = None,
    textfile: Annotated[
        Path | None,
        typer.Option(
            "--textfile",
            metavar="DIR",
            help="Write node-exporter's textfile (harmony_doctor_watch.prom) in DIR instead.",
        ),
    ] = None,
    state: Annotated[
        Path | None,
        typer.Option(
            "--state", metavar="FILE", help="Where each log was read to: a restart resumes there."
        ),
    ] = None,
    events: Annotated[
        Path | None,
        typer.Option("--events", metavar="FILE.jsonl", help="Append one row per failure."),
    ] = None,
    from_start: Annotated[
        bool,
        typer.Option("--from-start", help="Read the logs found at start from their beginning."),
    ] = False,
    origin: Annotated[
        str | None,
        typer.Option("--origin", help="The origin label (default: host name)."),
    ] = None,
    interval: Annotated[
        float,
        typer.Option("--interval", min=0.05, max=60.0, help="Seconds between looks at the logs."),
    ] = 0.25,
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs", "-j", min=1, help="Worker processes for a large backlog (default: all cores)."
        ),
    ] = None,
    alert_rules_: Annotated[
        bool,
        typer.Option("--alert-rules", help="Print a Prometheus rules file for watch and exit."),
    ] = False,
    max_rate: Annotated[
        float,
        typer.Option("--max-rate", min=0.0, max=1.0, help="Alert rules: failures per request."),
    ] = 0.01,
    window: Annotated[
        str, typer.Option("--window", help="Alert rules: the rate's window (PromQL duration).")
    ] = "15m",
    lookback: Annotated[
        str,
        typer.Option("--new-code-lookback", help="Alert rules: a code unseen this long is new."),
    ] = "7d",
    job: Annotated[
        str, typer.Option("--job", help="Alert rules: the scrape job's name.")
    ] = "harmony-doctor-watch",
) -> int:
    """Follow running servers' logs and count Harmony failures live, for Prometheus."""
    if alert_rules_:
        for name, value in (("--window", window), ("--new-code-lookback", lookback)):
            if not _DURATION.match(value):
                return fail(f"{name} {value!r} is not a PromQL duration (15m, 1h, 7d)")
        sys.stdout.write(
            advanced.alert_rules(advanced.AlertOptions(max_rate, window, lookback, "5m", job))
        )
        return ExitCode.CLEAN
    if not paths:
        return fail("give the logs to follow (PATH...), or --alert-rules")
    if listen is None and textfile is None:
        return fail("say where the metrics go: --listen HOST:PORT or --textfile DIR")
    if textfile is not None and not textfile.is_dir():
        return fail(f"--textfile {textfile}: not a folder")
    address = None
    if listen is not None:
        address = _address(listen)
        if address is None:
            return fail(f"--listen {listen!r}: give HOST:PORT (127.0.0.1:9464, [::1]:9464)")
    options = advanced.WatchOptions(
        tuple(paths),
        from_start,
        origin,
        state,
        events,
        textfile,
        interval,
        jobs=jobs or os.cpu_count() or 1,
    )
    return _run(options, address, textfile)


def _address(listen: str) -> tuple[str, int] | None:
    match = _LISTEN.match(listen)
    if match is None or int(match["port"]) > 65535:
        return None
    return (match["v6"] or match["host"] or "0.0.0.0", int(match["port"]))


def _run(
    options: advanced.WatchOptions, address: tuple[str, int] | None, textfile: Path | None
) -> int:
    try:
        watcher = advanced.Watcher(options, note)
    except OSError as exc:
        return fail(f"cannot open {exc.filename}: {exc.strerror or exc}")
    registry = advanced.metrics_registry(watcher.snapshot)
    server = None
    if address is not None:
        try:
            server = advanced.MetricsServer(address[0], address[1], registry)
        except OSError as exc:
            watcher.close()
            return fail(f"cannot listen on {address[0]}:{address[1]}: {exc.strerror or exc}")
        server.start()

    def publish() -> None:
        if textfile is not None:
            try:
                advanced.write_metrics_textfile(textfile, registry)
            except OSError as exc:
                note(f"cannot write the textfile in {textfile}: {exc.strerror or exc}")

    flags = _Flags()
    with flags.installed():  # the close too: a repeated signal there is ignored as well
        try:
            watcher.run(flags.stopping, flags.reopening, publish)
        except OSError as exc:  # the state and events files say their own errors (DoctorError)
            where = f" {exc.filename}" if exc.filename else ""
            return fail(f"the watch stopped:{where} {exc.strerror or exc}")
        finally:
            watcher.close()
            if server is not None:
                server.stop()
    return ExitCode.CLEAN


_REPEATS = 2.0  # seconds after a stop in which another SIGTERM or SIGINT is the same request


class _Flags:
    """SIGTERM and SIGINT ask the watch to stop (it saves its state and exits 0), SIGHUP to
    look for its files again. A repeat within `_REPEATS` seconds is the same request: `timeout`
    signals the process and then its whole group, systemd likewise, so one stop often arrives
    twice (acting on the second made the stop exit 130 with no state saved, depending on when
    Python ran the first handler). A later one ends it at once, for a stop that hangs."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.hup = threading.Event()
        self.asked: float | None = None  # when the first stop came (time.monotonic)

    def stopping(self) -> bool:
        return self.stop.is_set()

    def reopening(self) -> bool:
        if self.hup.is_set():
            self.hup.clear()
            return True
        return False

    def _stop(self, number: int, frame: FrameType | None) -> None:
        now = time.monotonic()
        if self.asked is None:
            self.asked = now
            self.stop.set()
        elif now - self.asked > _REPEATS:
            raise KeyboardInterrupt

    def _hup(self, number: int, frame: FrameType | None) -> None:
        self.hup.set()

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        wanted: dict[int, Any] = {
            signal.SIGTERM: self._stop,
            signal.SIGINT: self._stop,
            signal.SIGHUP: self._hup,
        }
        previous = {number: signal.signal(number, handler) for number, handler in wanted.items()}
        try:
            yield
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)
