"""`harmony-doctor report`: the scan summary again, from event files written by `scan --events`."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import typer

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
)
from harmony_doctor.cli.outputs import check_operator_paths, show_summary, write_operator_outputs
from harmony_doctor.errors import ExitCode, InputError


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
    from harmony_doctor.batch import summary_of
    from harmony_doctor.output import tables as export
    from harmony_doctor.output.operator import operator_summary
    from harmony_doctor.scan.event_files import fetched, read_event_files, requests_path
    from harmony_doctor.scan.summary import (
        event_file_reports,
        events_frame,
        group_keys,
        requests_frame,
        requests_view,
    )

    keys = group_keys(by or [])
    if summary is not None:
        export.check_output_path(summary)
    check_operator_paths(prometheus, html)
    with fetched(inputs) as (paths, labels):  # URLs are read from local copies, named as URLs
        read = read_event_files(paths, events_frame(()).schema, requests_frame(()).schema)
        reports = [
            replace(r, path=labels.get(r.path, r.path))
            for r in event_file_reports(read.paths, read.counts)
        ]
    for local, url in labels.items():
        read = replace(
            read, bad=tuple(replace(b, reason=b.reason.replace(local, url)) for b in read.bad)
        )
    if read.bad and not read.paths:  # nothing to sum: the first reason is the error
        for bad in read.bad[1:]:
            note(bad.reason)
        raise InputError(read.bad[0].reason)
    requests = requests_view(read.tallies) if read.tallies is not None else requests_frame(())
    found = summary_of(reports, read.frame, requests, keys)
    failed = export.write_tables([(summary, lambda: found.table)])
    operator = operator_summary("report", found)
    show_summary(found, output, top, color, width, "report", operator)
    failed += write_operator_outputs(operator, output, prometheus, html, top)
    for bad in read.bad:  # the good files are summed all the same
        note(bad.reason)
    for path in read.untallied:
        named = labels.get(str(path), path)
        note(
            f"no request counts beside {named} (no {requests_path(path).name}): "
            "its failures count in no rate"
        )
    for error in failed:
        fail(error)
    if read.bad or failed:
        return ExitCode.ERROR
    return ExitCode.FINDINGS if found.events.height and not exit_zero else ExitCode.CLEAN
