"""`scan` and `report` for people: the headline, the groups table with bars, days and files.

A summary that found nothing in the one file it read is lines of text alone: `plain_view` gives
them as rich prints them off a terminal, for the caller to write without loading rich."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from harmony_doctor.output.layout import UNLIMITED, Fitted, capped
from harmony_doctor.output.styles import DIM, LABEL, OK, WARNING
from harmony_doctor.output.words import counted

if TYPE_CHECKING:  # rich loads where a view is drawn, tables where one is
    from rich.console import RenderableType
    from rich.table import Table
    from rich.text import Text

_NOTHING_FOUND = "No Harmony failures found."
# A scan that read no line (scan/records.py `nothing_read`, which the CLI exits 2 on) says
# nothing of failures.
_NOTHING_READ = "Nothing was read: every input was empty."

_BLOCKS = " ▏▎▍▌▋▊▉█"


def bar(value: float, width: int) -> str:
    """A horizontal bar of `value` (0..1) in `width` cells, with eighth-cell precision."""
    cells = max(0.0, min(1.0, value)) * width
    full = int(cells)
    rest = int((cells - full) * 8)
    return "█" * full + (_BLOCKS[rest] if rest and full < width else "")


def scan_view(
    groups: list[dict[str, Any]],
    by: tuple[str, ...],
    totals: dict[str, Any],
    days: Sequence[tuple[str, int]],
    files: list[dict[str, Any]],
    top: int,
    title: str = "scan",
    hourly: RenderableType | None = None,
    nothing_read: bool = False,
) -> RenderableType:
    """The summary of many sources: headline, top groups, failures per day, the rate per hour
    (`hourly`, drawn on a terminal only: rate_view), files not read."""
    from rich.console import Group
    from rich.text import Text

    parts: list[RenderableType] = [_scan_headline(totals, title)]
    if totals.get("unrated"):
        from harmony_doctor.output.operator import unrated_line

        parts.append(Text(unrated_line(totals), style=WARNING))
    if not groups:
        parts.append(_nothing_found(files, nothing_read))
    else:
        parts.append(Fitted(lambda width: _groups(groups, by, top, width)))
        if totals.get("clock") and ("hour" in by or "day" in by):
            parts.append(Text(f"hours and days on {totals['clock']}", DIM))
        if len(days) > 1:
            parts.append(_days_chart(days))
        if hourly is not None:
            parts.append(hourly)
    if _lists_files(files):
        parts.append(_files_table(files, top))
    return Group(*parts)


def _nothing_found(files: list[dict[str, Any]], nothing_read: bool) -> Text:
    """ "No Harmony failures found" only when every input was read whole, and a line was read;
    otherwise what was read held none, and the files not read whole are listed below."""
    from rich.text import Text

    unread = sum(1 for f in files if f["status"] in ("partial", "skipped"))
    if not unread:
        return Text(_NOTHING_READ, WARNING) if nothing_read else Text(_NOTHING_FOUND, style=OK)
    inputs = "1 input was" if unread == 1 else f"{unread:,} inputs were"
    return Text(f"No failure in what was read, but {inputs} not read whole (below).", WARNING)


def plain_view(
    groups: list[dict[str, Any]],
    totals: dict[str, Any],
    files: list[dict[str, Any]],
    title: str,
    nothing_read: bool = False,
) -> str | None:
    """`scan_view`'s lines as rich writes them off a terminal, without colour and unwrapped,
    when the view is lines of text alone: no group found, one file read whole. None when it
    draws a table."""
    if groups or _lists_files(files):
        return None
    label, bits = _headline_words(totals, title)
    lines = [label + bits]
    if totals.get("unrated"):
        from harmony_doctor.output.operator import unrated_line

        lines.append(unrated_line(totals))
    lines.append(_NOTHING_READ if nothing_read else _NOTHING_FOUND)
    return "".join(line.rstrip() + "\n" for line in lines)


def _lists_files(files: list[dict[str, Any]]) -> bool:
    """Whether the view lists the files: more than one, or one not read whole."""
    return len(files) > 1 or any(f["status"] != "ok" or f.get("reason") for f in files)


def _scan_headline(totals: dict[str, Any], title: str) -> Text:
    from rich.text import Text

    label, bits = _headline_words(totals, title)
    line = Text(label, style=LABEL)
    line.append(bits, DIM)
    return line


def _headline_words(totals: dict[str, Any], title: str) -> tuple[str, str]:
    """The headline's label and its counts (files, bytes, lines, failures, requests, rate)."""
    bits = [
        counted(totals["files"], "file"),
        _human_size(totals["bytes"]),
        counted(totals["lines"], "line"),
        counted(totals["failures"], "failure"),
    ]
    if totals.get("requests"):
        from harmony_doctor.output.operator import percent

        bits.append(counted(totals["requests"], "request"))
        rate = totals.get("rate")
        note = totals.get("rate_note") or "unknown"
        if rate is None:
            bits.append(f"rate ? ({note})")
        elif totals.get("unrated") or totals.get("rate_requests") != totals["requests"]:
            # the rate is of the failures and requests in its scopes: said so
            rated = totals["failures"] - totals["unrated"]
            if rated == 0 and totals["failures"]:
                # `rate 0.00%` beside failures reads as none: every one is unrated (said below)
                bits.append("no failure in a rate")
            else:
                requests = totals["rate_requests"]
                bits.append(f"rate {percent(rate)} ({rated:,} of {requests:,} requests)")
        else:
            bits.append(f"rate {percent(rate)}")
    if totals.get("skipped") or totals.get("partial"):
        bits.append(f"{totals['skipped']} skipped, {totals['partial']} partial")
    return f"harmony-doctor {title}  ", " · ".join(bits)


def _human_size(count: int) -> str:
    """1,234 B, 12.3 MB, 1.2 GB."""
    value = float(count)
    for unit in ("B", "KB", "MB"):
        if value < 1000:
            return f"{count:,} B" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1000
    return f"{value:,.1f} GB"


def _files_table(files: list[dict[str, Any]], top: int) -> RenderableType:
    from rich.console import Group
    from rich.text import Text

    rows: list[RenderableType] = [Text("files", style=LABEL)]
    rows.append(Fitted(lambda width: _files_rows(files, top, width)))
    if len(files) > top:
        rows.append(Text(f"… {counted(len(files) - top, 'more file')} (--format json)", DIM))
    return Group(*rows)


def _files_rows(files: list[dict[str, Any]], top: int, width: int | None) -> Table:
    from rich.table import Table
    from rich.text import Text

    from harmony_doctor.output.escape import safe_text

    table = Table(box=None, pad_edge=False, show_edge=False, header_style=DIM)
    if width is None:
        table.add_column("file", no_wrap=True)
    else:
        table.add_column("file", overflow="fold", max_width=capped(width, 0.5, 20, 60))
    table.add_column("status", no_wrap=True)
    table.add_column("lines", justify="right", no_wrap=True)
    table.add_column("failures", justify="right", no_wrap=True)
    table.add_column("reason", overflow="fold", no_wrap=width is None)
    ordered = sorted(files, key=lambda f: (f["status"] == "ok", -f["failures"], f["path"]))
    for f in ordered[:top]:
        style = OK if f["status"] == "ok" else WARNING
        table.add_row(
            safe_text(f["path"], keep_newlines=False),
            Text(f["status"], style=style),
            f"{f['lines']:,}",
            f"{f['failures']:,}",
            safe_text(f["reason"] or "", keep_newlines=False),
        )
    return table


def _groups(
    groups: list[dict[str, Any]], by: tuple[str, ...], top: int, width: int | None
) -> RenderableType:
    """The groups table, then how many more, then the footnotes of the columns shown (a
    column dropped on a narrow terminal takes its footnote with it)."""
    from rich.console import Group
    from rich.text import Text

    table, columns = _groups_table(groups, by, top, width)
    parts: list[RenderableType] = [table]
    if len(groups) > top:
        more = counted(len(groups) - top, "more group")
        parts.append(Text(f"… {more} (--top, --format csv)", DIM))
    note = next((g["rate_note"] for g in groups[:top] if g.get("rate_note")), None)
    if note is not None and columns["rate"]:
        parts.append(Text(f"? rate unknown: more failures than requests ({note})", DIM))
    return Group(*parts)


# The middle columns (count is always there), dropped in this order when the keys and count
# leave too little room: the bar, the share, then the rate and its failures in no rate.
_DROPPED_FIRST = ("bar", "share", "rate")


def _groups_table(
    groups: list[dict[str, Any]], by: tuple[str, ...], top: int, width: int | None
) -> tuple[Table, dict[str, bool]]:
    """The summary table and the columns it has; on narrow terminals the time columns go
    first, then the example, then the bar, the share and the rate (_DROPPED_FIRST), never
    the keys or the count. With an unlimited width (a pipe) every column is there, whole."""
    from rich.table import Table
    from rich.text import Text

    from harmony_doctor.output.escape import safe_text

    shown = groups[:top]
    # Each key as it is shown (escapes and wide characters included): its width in cells is
    # what the column needs, not the length of the value it shows.
    texts = {
        k: [safe_text(str(g[k]) if g[k] is not None else "-", keep_newlines=False) for g in shown]
        for k in by
    }
    widths = {k: min(40, max(len(k), *(t.cell_len for t in texts[k]))) for k in by}
    unrated = any(g.get("unrated") for g in shown)
    keys = sum(w + 2 for w in widths.values())
    count = max(5, *(len(f"{g['count']:,}") for g in shown)) + 2
    middle = {"bar": 12, "share": 8, "rate": 9 + 9 * unrated}
    columns = dict.fromkeys(_DROPPED_FIRST, True)
    for name in _DROPPED_FIRST:
        if width is None or keys + count + sum(middle[c] for c in columns if columns[c]) <= width:
            break
        columns[name] = False
    full = all(columns.values())
    spare = UNLIMITED if width is None else width - keys - 40 if full else 0
    columns |= {"example": spare >= 14, "first seen": spare >= 48, "last seen": spare >= 66}
    table = Table(box=None, pad_edge=False, show_edge=False, header_style=DIM)
    for key in by:
        if width is None:
            table.add_column(key, no_wrap=True)
        else:
            table.add_column(key, overflow="fold", min_width=widths[key], max_width=40)
    table.add_column("count", justify="right", no_wrap=True)
    if columns["share"]:
        table.add_column("share", justify="right", no_wrap=True)
    if columns["bar"]:
        table.add_column("", no_wrap=True, width=10)
    if columns["rate"]:
        table.add_column("rate", justify="right", no_wrap=True)
    if columns["rate"] and unrated:
        table.add_column("no rate", justify="right", no_wrap=True)
    for name in ("first seen", "last seen"):
        if columns[name]:
            table.add_column(name, no_wrap=True)
    if columns["example"] and width is None:
        table.add_column("example", no_wrap=True)
    elif columns["example"]:
        room = spare - 18 * (columns["first seen"] + columns["last seen"])
        table.add_column("example", no_wrap=True, overflow="ellipsis", max_width=max(12, room))
    biggest = max(g["count"] for g in shown)
    for row, g in enumerate(shown):
        cells: list[Any] = [*(texts[k][row] for k in by), f"{g['count']:,}"]
        if columns["share"]:
            cells.append(f"{g['share']:.1%}")
        if columns["bar"]:
            cells.append(Text(bar(g["count"] / biggest, 10), style="cyan"))
        if columns["rate"]:
            cells.append(_rate_cell(g))
        if columns["rate"] and unrated:
            cells.append(f"{g['unrated']:,}" if g.get("unrated") else "")
        if columns["first seen"]:
            cells.append(_short_time(g.get("first_seen")))
        if columns["last seen"]:
            cells.append(_short_time(g.get("last_seen")))
        if columns["example"]:
            cells.append(safe_text(g.get("example") or "", keep_newlines=False))
        table.add_row(*cells)
    return table, columns


def _rate_cell(group: dict[str, Any]) -> str:
    """The rate; "?" where it is unknown for a reason (see the note under the table)."""
    from harmony_doctor.output.operator import percent

    if group.get("rate") is not None:
        return percent(group["rate"])
    return "?" if group.get("rate_note") else ""


def _short_time(stamp: str | None) -> str:
    return (stamp or "")[:16].replace("T", " ")


def _days_chart(days: Sequence[tuple[str, int]]) -> RenderableType:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, pad_edge=False, show_edge=False, show_header=False)
    table.add_column(style=DIM, no_wrap=True)
    table.add_column(justify="right")
    table.add_column(no_wrap=True)
    biggest = max(n for _, n in days)
    for day, n in days[-31:]:
        table.add_row(day, f"{n:,}", Text(bar(n / biggest, 30), style="cyan"))
    return Group(Text("failures per day", style=LABEL), table)
