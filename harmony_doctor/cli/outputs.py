"""The summary scan and report both print: a table, JSON, CSV or GitHub annotations on stdout;
and the operator outputs they write (Prometheus textfile, HTML page, GitHub step summary)."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from harmony_doctor import advanced
from harmony_doctor.cli.console import make_console, print_json, show, writes_plain
from harmony_doctor.cli.options import Color, SummaryFormat

if TYPE_CHECKING:
    from harmony_doctor import Summary
    from harmony_doctor.output.operator import OperatorSummary
    from harmony_doctor.output.targets import Target, TargetKind


def show_summary(
    summary: Summary,
    output: SummaryFormat,
    top: int,
    color: Color,
    width: int | None = None,
    title: str = "scan",
    operator: OperatorSummary | None = None,
    nothing_read: bool = False,
) -> None:
    """The summary on stdout as a table, JSON, CSV or GitHub annotations (scan and report
    print alike; annotations need the events, in `operator`). A summary with nothing to
    aggregate prints as a table or JSON without building a frame."""
    keys, totals = summary.keys, summary.totals
    files = [asdict(f) for f in summary.files]
    if output == "json":
        from harmony_doctor.output.words import stated

        schema = f"harmony-doctor.{title}/1"
        record = {"by": list(keys), "totals": totals, "groups": summary.groups, "files": files}
        print_json({"schema": schema, **stated(record)})
    elif output == "csv":
        from harmony_doctor.output import tables as export

        export.write_csv(summary.table.columns, summary.table.iter_rows(), sys.stdout)
    elif output == "github":
        from harmony_doctor.output.github import workflow_commands

        assert operator is not None, "--format github needs the events"
        sys.stdout.write(workflow_commands(operator))
    else:
        from harmony_doctor.output.scan_view import plain_view, scan_view

        groups = summary.groups
        plain = (
            plain_view(groups, totals, files, title, nothing_read)
            if writes_plain(color, width)
            else None
        )
        if plain is not None:  # nothing found in one file: lines of text, written without rich
            sys.stdout.write(plain)
            return
        console = make_console(color, width)
        hourly = None
        if groups:  # the rate per hour is drawn under the groups, when there are some
            from harmony_doctor.output.rate_view import hourly_rates_view

            hourly = hourly_rates_view(summary.rates)
        view = scan_view(
            groups, keys, totals, summary.days, files, top, title, hourly, nothing_read
        )
        show(console, view)


def step_summary_path(output: SummaryFormat) -> Path | None:
    """Where --format github appends its Markdown: $GITHUB_STEP_SUMMARY, which GitHub Actions
    sets for every step (absent elsewhere)."""
    value = os.environ.get("GITHUB_STEP_SUMMARY") if output == "github" else None
    return Path(value) if value else None


def output_targets(
    output: SummaryFormat,
    *,
    events: Path | None = None,
    summary: Path | None = None,
    prometheus: Path | None = None,
    html: Path | None = None,
) -> list[Target]:
    """Every file scan or report will write, with the option that named it (the request counts
    go beside the events), for output/targets.py to check before anything is read."""
    tallies = advanced.requests_path(events) if events is not None else None
    named: list[tuple[str, Path | None, TargetKind, bool]] = [
        ("--events", events, "table", True),
        ("--events (request counts)", tallies, "table", False),  # a sidecar: never named
        ("--summary-csv", summary, "table", True),
        ("--prometheus", prometheus, "prometheus", True),
        ("--html", html, "html", True),
        ("$GITHUB_STEP_SUMMARY", step_summary_path(output), "append", True),
    ]
    given = [(option, path, kind, own) for option, path, kind, own in named if path is not None]
    if not given:  # nothing to write: the checks have nothing to load
        return []
    from harmony_doctor.output.targets import Target

    return [Target(option, path, kind, own) for option, path, kind, own in given]


def operator_view(
    title: str,
    summary: Summary,
    output: SummaryFormat,
    step_summary: Path | None,
    prometheus: Path | None,
    html: Path | None,
) -> OperatorSummary | None:
    """What the operator outputs read (the summary and its frames), when one is asked for
    (--format github, its step summary, --prometheus, --html); None otherwise, so that a
    summary nothing else reads the frames of never builds them."""
    if output != "github" and step_summary is None and prometheus is None and html is None:
        return None
    from harmony_doctor.output.operator import operator_summary

    return operator_summary(title, summary)


def write_operator_outputs(
    operator: OperatorSummary | None,
    step_summary: Path | None,
    prometheus: Path | None,
    html: Path | None,
    top: int,
) -> list[str]:
    """Write the operator outputs asked for (`operator_view` gives the view, None when none
    is); the one-line errors of those that failed (a failed one stops neither the others nor
    the summary)."""
    if operator is None:
        assert step_summary is None and prometheus is None and html is None
        return []
    from harmony_doctor.errors import OutputError
    from harmony_doctor.output import operator_files
    from harmony_doctor.output.tables import write_text

    errors: list[str] = []
    now = time.time()
    try:
        if prometheus is not None:
            from harmony_doctor.output.prometheus import prometheus_registry

            operator_files.write_textfile(prometheus, prometheus_registry(operator, now))
    except OutputError as exc:
        errors.append(str(exc))
    try:
        if html is not None:
            from harmony_doctor.output.html_report import html_page

            stamp = datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
            write_text(html, html_page(operator, top, stamp))
    except OutputError as exc:
        errors.append(str(exc))
    try:
        if step_summary is not None:
            from harmony_doctor.output.github import step_summary as markdown

            operator_files.append_text(step_summary, markdown(operator, top))
    except OutputError as exc:
        errors.append(str(exc))
    return errors
