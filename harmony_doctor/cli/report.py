"""`harmony-doctor report`: the scan summary again, from event files written by `scan --events`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from harmony_doctor.cli.app import Color, ColorOpt, app, error_funnel
from harmony_doctor.cli.scan import (
    ByOpt,
    ExitZeroOpt,
    ScanFormat,
    SummaryCsvOpt,
    SummaryFormatOpt,
    TopOpt,
    group_keys,
    show_summary,
)
from harmony_doctor.errors import ExitCode, InputError


@app.command("report")
def report_command(
    inputs: Annotated[
        list[Path],
        typer.Argument(
            metavar="EVENTS...",
            help="Event files from 'scan --events' (.csv, .jsonl, .parquet; any mix).",
            show_default=False,
        ),
    ],
    by: ByOpt = None,
    output: SummaryFormatOpt = ScanFormat.table,
    summary: SummaryCsvOpt = None,
    top: TopOpt = 20,
    exit_zero: ExitZeroOpt = False,
    color: ColorOpt = Color.auto,
) -> None:
    """Re-aggregate event files from many hosts into one summary, as scan prints it.

    Event files carry failures, not request counts: rates are left empty.
    """
    with error_funnel():
        from harmony_doctor.output import files as export
        from harmony_doctor.scan.summary import report_totals, requests_frame, summarize_frames

        keys = group_keys(by or [])
        for path in inputs:
            if not path.is_file():
                raise InputError(f"cannot read {path}: not a file")
        frame, counts = export.read_events(inputs)
        table = summarize_frames(frame, requests_frame(()), keys)
        if summary is not None:
            export.write_table(table, summary)
        totals = report_totals(inputs, counts, frame.height)
        files = [_file_record(path, n) for path, n in zip(inputs, counts, strict=True)]
        days = [(d, n) for d, n in frame["day"].drop_nulls().value_counts().sort("day").rows()]
        show_summary(table, keys, totals, days, files, output, top, color, title="report")
    if frame.height and not exit_zero:
        raise typer.Exit(ExitCode.FINDINGS)


def _file_record(path: Path, events: int) -> dict[str, Any]:
    return {
        "path": str(path),
        "status": "ok",
        "reason": None,
        "bytes": _size(path),
        "lines": events,
        "failures": events,
    }


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
