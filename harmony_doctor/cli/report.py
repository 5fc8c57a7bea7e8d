"""`harmony-doctor report`: the scan summary again, from event files written by `scan --events`."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from harmony_doctor import advanced
from harmony_doctor.cli.funnel import fail, note
from harmony_doctor.cli.options import (
    ByOpt,
    ColorOpt,
    ExitZeroOpt,
    HtmlOpt,
    PrometheusOpt,
    SummaryCsvOpt,
    SummaryFormatOpt,
    TopOpt,
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
    from harmony_doctor.output.targets import InputFile


def report(
    inputs: Annotated[
        list[str],
        typer.Argument(
            metavar="EVENTS...",
            help="Event files from 'scan --events' (.csv, .jsonl, .parquet; any mix; URLs and "
            "globs such as s3://bucket/events/*.parquet with harmony-doctor[remote]).",
            show_default=False,
        ),
    ],
    by: ByOpt = None,
    output: SummaryFormatOpt = "table",
    summary: SummaryCsvOpt = None,
    prometheus: PrometheusOpt = None,
    html: HtmlOpt = None,
    top: TopOpt = 20,
    exit_zero: ExitZeroOpt = False,
    color: ColorOpt = "auto",
    width: WidthOpt = None,
) -> int:
    """Re-aggregate event files from many hosts into one summary, as scan prints it.

    The request counts scan wrote beside each events file (events.requests.csv) give the same
    rates one scan over all the logs would; files without them add failures but no rate.
    """
    from harmony_doctor.output import tables as export
    from harmony_doctor.output.targets import check_not_inputs, check_targets

    keys = advanced.group_keys(by or [])
    summary_path = once("--summary-csv", summary)
    prometheus_path, html_path = once("--prometheus", prometheus), once("--html", html)
    targets = output_targets(
        output, summary=summary_path, prometheus=prometheus_path, html=html_path
    )
    check_targets(targets)
    check_not_inputs(targets, _event_files(inputs))
    # The events are read a batch at a time into a spill and folded from there, never held
    # whole; what report shows is made from the folded rows and the first events (operator
    # views), all made before the spill goes.
    with tempfile.TemporaryDirectory(prefix="harmony-doctor-report-") as spill:
        read = advanced.summarize_event_files(inputs, keys, Path(spill))
    found = read.summary
    if read.unread and not found.files:  # nothing to sum: the first reason is the error
        for bad in read.unread[1:]:
            note(bad.reason)
        raise InputError(read.unread[0].reason)
    failed = export.write_tables([(summary_path, lambda: found.table)])
    step_summary = step_summary_path(output)
    operator = operator_view("report", found, output, step_summary, prometheus_path, html_path)
    failed += write_operator_outputs(operator, step_summary, prometheus_path, html_path, top)
    # The files are written before the summary is shown: a standard output that fails (a full
    # device, a closed pipe) ends the run, and must not take them with it.
    show_summary(found, output, top, color, width, "report", operator)
    for bad in read.unread:  # the good files are summed all the same
        note(bad.reason)
    for named in read.untallied:
        tallies = advanced.requests_path(Path(named)).name
        note(f"no request counts beside {named} (no {tallies}): its failures count in no rate")
    for named, cells in read.cut:  # kept, not whole: said, never silent
        what = "1 cell" if cells == 1 else f"{cells:,} cells"
        limit = read.cell_limit
        note(f"{what} of {named} longer than {limit:,} characters read to that length only")
    for named, events in read.repeated:  # counted once: said, so that no one wonders
        what = "1 event" if events == 1 else f"{events:,} events"
        note(f"{what} of {named} read already from an earlier file: counted once")
    for error in failed:
        fail(error)
    if read.unread or failed:
        return ExitCode.ERROR
    return ExitCode.FINDINGS if found.totals["failures"] and not exit_zero else ExitCode.CLEAN


def _event_files(inputs: list[str]) -> list[InputFile]:
    """What report reads: each events file named and the request counts beside it (a URL
    names no local file: it reaches nothing an output could be)."""
    from harmony_doctor.output.targets import InputFile

    files = []
    for raw in inputs:
        if not Path(raw).name or Path(raw).is_dir():
            raise InputError(
                f"{raw or repr(raw)} is a folder: report reads the event files scan --events "
                "wrote (.csv, .jsonl, .parquet); name them, or a glob of them"
            )
        tallies = advanced.requests_path(Path(raw))
        files += [
            InputFile(raw, Path(raw)),
            InputFile(f"{tallies} (the request counts beside {raw})", tallies),
        ]
    return files
