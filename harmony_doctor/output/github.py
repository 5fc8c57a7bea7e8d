"""The summary for GitHub Actions: workflow-command annotations and a Markdown step summary.

Escaping follows the Actions toolkit (`@actions/core` command.ts): data escapes `%`, CR and LF;
property values also `:` and `,`. Every other unsafe character (control, bidi, line separator)
is shown by the one escaper (output/escape.py), so a log line can neither colour nor reorder
the job's log or the annotation.
"""

from __future__ import annotations

import html

from harmony_doctor.output.escape import visible
from harmony_doctor.output.operator import (
    OperatorSummary,
    per_origin,
    percent,
    text,
    unrated_line,
)

# GitHub shows at most 10 error and 10 warning annotations per step and 50 per job; more
# would only be noise in the log, so the rest is counted in one closing notice.
ANNOTATION_LIMIT = 50


def _command_data(value: str) -> str:
    """What the workflow-command format itself asks of data: `%`, CR and LF escaped."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _command_property(value: str) -> str:
    """What the format asks of a property value: data's escapes, and `:` and `,`."""
    return _command_data(value).replace(":", "%3A").replace(",", "%2C")


def escape_data(value: str) -> str:
    """A workflow command's message, as GitHub reads it back."""
    # No CR or LF is left for the escaper to show; its escapes hold no `%`, `:` or `,`.
    return visible(_command_data(value))


def escape_property(value: str) -> str:
    """A workflow command's shown property value (title), as GitHub reads it back."""
    return visible(_command_property(value))


def _command(name: str, properties: dict[str, str], message: str) -> str:
    """One command. The `file` property is the real path, escaped only as the format asks:
    GitHub attaches the annotation by it (a path shown with escapes names no file in the
    checkout), and shows it nowhere as text."""
    props = ",".join(
        f"{k}={_command_property(v) if k == 'file' else escape_property(v)}"
        for k, v in properties.items()
        if v
    )
    return f"::{name}{' ' + props if props else ''}::{escape_data(message)}"


def _rate(value: float | None) -> str:
    return "unknown" if value is None else percent(value)


def workflow_commands(summary: OperatorSummary, limit: int = ANNOTATION_LIMIT) -> str:
    """One `::error` (or `::warning`) per failure, at its file and line, then a closing notice
    with the totals; the text ends with a newline."""
    lines = []
    columns = ("file", "line", "code", "severity", "message", "pattern")
    rows = summary.first.select(columns).head(limit)  # the summary keeps the first ones whole
    for file, line, code, severity, message, pattern in rows.iter_rows():
        name = "warning" if severity == "warning" else "error"
        properties = {"file": text(file), "line": text(line), "title": text(code)}
        lines.append(_command(name, properties, text(message) or text(pattern)))
    more = summary.totals["failures"] - rows.height
    if more > 0:
        lines.append(_command("notice", {}, f"{more} more failure(s) not annotated"))
    totals = summary.totals
    lines.append(
        _command(
            "notice",
            {"title": f"harmony-doctor {summary.title}"},
            f"{totals['failures']} failure(s) in {totals['files']} file(s); "
            f"requests {text(totals.get('requests')) or 'unknown'}; "
            f"failure rate {_rate(totals.get('rate'))}"
            + (f"; {unrated_line(totals)}" if totals.get("unrated") else ""),
        )
    )
    return "\n".join(lines) + "\n"


def _cell(value: object) -> str:
    """A Markdown table cell: HTML-escaped (GitHub renders inline HTML), pipes and line breaks
    kept inside the cell."""
    shown = html.escape(visible(text(value).replace("\r", " ").replace("\n", " ")))
    return (
        shown.replace("|", "\\|").replace("`", "&#96;").replace("[", "&#91;").replace("]", "&#93;")
    )


def _table(header: list[str], rows: list[list[object]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    out += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return out


def step_summary(summary: OperatorSummary, top: int) -> str:
    """The Markdown of `$GITHUB_STEP_SUMMARY`: totals, the top groups and the rate by origin."""
    totals = summary.totals
    lines = [f"## harmony-doctor {summary.title}", ""]
    lines += _table(
        ["failures", "requests", "failure rate", "no rate", "files", "skipped", "partial"],
        [
            [
                totals["failures"],
                totals.get("requests") if totals.get("requests") is not None else "unknown",
                _rate(totals.get("rate"))
                + (f" ({totals['rate_note']})" if totals.get("rate_note") else ""),
                totals.get("unrated", 0),
                totals["files"],
                totals["skipped"],
                totals["partial"],
            ]
        ],
    )
    groups = summary.groups[:top]
    if groups:
        lines += ["", f"### Top {len(groups)} of {len(summary.groups)} group(s)", ""]
        header = [*summary.keys, "count", "share", "rate", "example"]
        rows = [
            [
                *(g.get(k) for k in summary.keys),
                g["count"],
                f"{g['share']:.1%}",
                _rate(g.get("rate")),
                g.get("example"),
            ]
            for g in groups
        ]
        lines += _table(header, rows)
    if totals.get("unrated"):
        lines += ["", unrated_line(totals)]
    by_origin = [r for r in per_origin(summary) if r.origin]
    if by_origin:
        lines += ["", "### By origin", ""]
        rows = [
            [r.origin, r.failures, text(r.requests), _rate(r.rate), r.unrated] for r in by_origin
        ]
        lines += _table(["origin", "failures", "requests", "failure rate", "no rate"], rows)
    return "\n".join(lines) + "\n"
