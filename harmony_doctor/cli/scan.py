"""`harmony-doctor scan`: failure patterns across many server logs, with rates and exports."""

from __future__ import annotations

import math
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

import harmony_doctor as hd
from harmony_doctor import advanced
from harmony_doctor.cli.console import make_console
from harmony_doctor.cli.funnel import fail, note
from harmony_doctor.cli.options import (
    ByOpt,
    Color,
    ColorOpt,
    ExitZeroOpt,
    HtmlOpt,
    PrometheusOpt,
    SummaryCsvOpt,
    SummaryFormatOpt,
    TopOpt,
    VocabOpt,
    WidthOpt,
    once,
)
from harmony_doctor.cli.outputs import (
    operator_view,
    output_targets,
    show_summary,
    step_summary_path,
    write_operator_outputs,
)
from harmony_doctor.errors import ExitCode, InputError

if TYPE_CHECKING:
    from harmony_doctor.advanced import InputListing, ScanProgress
    from harmony_doctor.output.targets import InputFile

# What --max-rate makes of failures no rate covers (logs without request lines).
Unrated = Literal["fail", "pass"]


def scan(
    inputs: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="PATH...", help="Files or folders (recursive; compressed too); '-' is stdin."
        ),
    ] = None,
    by: ByOpt = None,
    glob: Annotated[
        list[str] | None, typer.Option("--glob", "-g", help="Only files whose name matches.")
    ] = None,
    exclude: Annotated[
        list[str] | None, typer.Option("--exclude", help="Skip files or folders that match.")
    ] = None,
    output: SummaryFormatOpt = "table",
    events: Annotated[
        list[Path] | None,
        typer.Option(
            "--events",
            help="Write one row per failure: .csv, .jsonl, .parquet; the request counts go "
            "beside it (events.requests.csv), for report's rates.",
        ),
    ] = None,
    origin: Annotated[
        str | None,
        typer.Option(
            "--origin", help="Name on every event and count, for --by origin (default: host name)."
        ),
    ] = None,
    summary: SummaryCsvOpt = None,
    prometheus: PrometheusOpt = None,
    html: HtmlOpt = None,
    redact: Annotated[
        bool, typer.Option("--redact", help="Replace model text by a short hash in every output.")
    ] = False,
    replay: Annotated[
        bool,
        typer.Option(
            "--replay/--no-replay", help="Replay completions the logs carry as token ids."
        ),
    ] = True,
    verify_clean: Annotated[
        bool,
        typer.Option(
            "--verify-clean",
            help="Run openai-harmony on every replayed completion, not only on those the "
            "replay finds something in (slower; same results).",
        ),
    ] = False,
    top: TopOpt = 20,
    max_rate: Annotated[
        float | None,
        typer.Option(
            "--max-rate",
            "--max-failure-rate",
            min=0.0,
            max=1.0,
            callback=lambda value: _finite_rate(value),
            help="Exit 1 only when the failure rate is above this (needs request counts); "
            "failures in no rate fail it too, unless --unrated pass.",
        ),
    ] = None,
    unrated: Annotated[
        Unrated,
        typer.Option(
            "--unrated",
            help="With --max-rate: failures in logs without request lines (in no rate) fail "
            "the gate (fail), or are left out of it (pass).",
        ),
    ] = "fail",
    exit_zero: ExitZeroOpt = False,
    jobs: Annotated[
        int | None,
        typer.Option("--jobs", "-j", min=1, help="Worker processes (default: all cores)."),
    ] = None,
    vocab_path: VocabOpt = None,
    color: ColorOpt = "auto",
    width: WidthOpt = None,
) -> int:
    """Batch-scan server logs: how often Harmony parsing fails, in which ways, since when."""
    keys = advanced.group_keys(by or [])
    events_path, summary_path = once("--events", events), once("--summary-csv", summary)
    prometheus_path, html_path = once("--prometheus", prometheus), once("--html", html)
    targets = output_targets(
        output, events=events_path, summary=summary_path, prometheus=prometheus_path, html=html_path
    )
    if targets:
        from harmony_doctor.output.targets import check_targets

        check_targets(targets)  # a bad output path costs nothing: no input read
    paths = inputs or ["-"]
    if paths == ["-"] and (sys.stdin is None or sys.stdin.isatty()):
        raise InputError("no input: give files or folders, or pipe a log to standard input")
    listing = advanced.list_inputs(paths, glob or [], exclude or [])
    if not listing.sources and listing.skipped:
        first = listing.skipped[0]
        raise InputError(f"nothing to read: {first.label}: {first.reason}")
    if not listing.sources:
        raise InputError(f"nothing to read: no file in {', '.join(paths)} matched")
    if targets:  # none of the outputs is one of the inputs (listed, not read yet)
        from harmony_doctor.output.targets import check_not_inputs

        check_not_inputs(targets, _scanned_files(paths, listing))
    options = hd.ScanOptions(
        replay=replay,
        redact=redact,
        jobs=jobs or os.cpu_count() or 1,
        vocab_path=vocab_path,
        verify_clean=verify_clean,
        origin=origin,
    )
    # Events go to a spill on disk as they become final (memory bounded by the batch, not by
    # the failures); it is removed on every way out, a signal's included (cli/signals.py).
    failed: list[str] = []
    with _spill_directory() as spill:
        with _progress(listing.bytes, color) as progress:
            result = advanced.scan_inputs(listing, options, progress, spill)
        found = hd.report(result, keys)  # folds the spill's events: built here
        if summary_path is not None or events_path is not None:  # the writers load for these
            from harmony_doctor.output import tables as export

            failed += export.write_tables([(summary_path, lambda: found.table)])
            if events_path is not None:  # one unit: report refuses tallies not its events'
                tallies = advanced.requests_path(events_path)
                failed += export.write_event_tables(
                    found.events, advanced.tally_table(result), events_path, tallies
                )  # read from the spill a batch at a time, before it is removed
    step_summary = step_summary_path(output)
    operator = operator_view("scan", found, output, step_summary, prometheus_path, html_path)
    failed += write_operator_outputs(operator, step_summary, prometheus_path, html_path, top)
    # The files are written before the summary is shown: a standard output that fails (a full
    # device, a closed pipe) ends the run, and must not take them with it.
    show_summary(found, output, top, color, width, "scan", operator, result.nothing_read)
    for f in result.files:
        if f.status != "ok":
            note(f"{f.status} {f.path}: {f.reason}")
    for error in failed:  # after the summary, which a failed export does not take away
        fail(error)
    if result.skipped or failed:
        return ExitCode.ERROR
    if result.nothing_read:  # a scan that read nothing says nothing: it must not pass as clean
        return fail("nothing read: every input was empty")
    failing = result.failures > 0
    if max_rate is not None:
        failing = _above(found.totals, max_rate, unrated)
    return ExitCode.FINDINGS if failing and not exit_zero else ExitCode.CLEAN


def _finite_rate(value: float | None) -> float | None:
    """--max-rate as a number in 0..1: NaN passes every range check (each comparison with it is
    false) and would turn the gate off, so it is refused as a usage error."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"{value} is not a number from 0 to 1")
    return value


def _above(totals: dict[str, Any], max_rate: float, unrated: Unrated) -> bool:
    """Whether the gate fails: the rate is above `max_rate`, or (unless `unrated` passes them)
    failures exist that no rate covers, which no rate can be said to hold; with why, on stderr."""
    from harmony_doctor.output.operator import percent, unrated_line
    from harmony_doctor.output.rate_view import threshold

    rate = totals["rate"]
    if totals.get("unrated") and unrated == "fail":
        note(f"--max-rate fails: {unrated_line(totals)} (--unrated pass leaves them out)")
        return True
    if rate is not None and rate > max_rate:
        note(f"--max-rate fails: rate {percent(rate)} is above {threshold(max_rate)}")
        return True
    return False


def _scanned_files(paths: list[str], listing: InputListing) -> list[InputFile]:
    """What the scan reads: the files named, standard input, and the files found in folders."""
    from harmony_doctor.output.targets import InputFile

    named = [InputFile("<stdin>", None) if r == "-" else InputFile(r, Path(r)) for r in paths]
    found = [InputFile(s.label, s.path, in_folder=True) for s in listing.sources if s.path]
    return named + found


@contextmanager
def _spill_directory() -> Iterator[Path]:
    """A temporary directory for the scan's spill, locked while the scan runs and removed on
    the way out; those killed scans left there are removed first (advanced.spill_directory)."""
    with advanced.spill_directory(Path(tempfile.gettempdir())) as path:
        yield path


@contextmanager
def _progress(
    total_bytes: int, color: Color = "auto"
) -> Iterator[Callable[[ScanProgress], None] | None]:
    """Bytes and files done and failures so far, as a rich progress bar on stderr, coloured
    as --color says (red team M6: `never` still coloured the bar); nothing when stderr is not a
    terminal (a log or a pipe gets no control codes)."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(
        TextColumn("scanning"),
        BarColumn(),
        DownloadColumn(),
        TextColumn("{task.fields[files]} file(s) · {task.fields[failures]} failure(s)"),
        TimeElapsedColumn(),
        console=make_console(color, file=sys.stderr),
        transient=True,
    )
    task = bar.add_task("scan", total=total_bytes or None, files=0, failures=0)
    counts = {"files": 0, "failures": 0}

    def advance(done: ScanProgress) -> None:
        counts["files"] += 1
        counts["failures"] += done.failures
        bar.update(task, advance=done.bytes, files=counts["files"], failures=counts["failures"])

    with bar:
        yield advance
