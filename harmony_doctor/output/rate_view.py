"""The failure rate hour by hour, one sparkline per process, under the scan summary on a
terminal only: a pipe or a file gets nothing decorative (scan_view shows it through OnTerminal).

The rows share one time axis, from the first hour any process logged requests to the last,
so gaps are gaps; a cell is one hour, or several when the span is wider than the room. A
cell's rate is its failures over its requests (the process's own, scoped as the totals are);
`·` is a cell where the process logged no request; the heights are relative to the highest
cell rate shown."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

from harmony_doctor.output.escape import safe_text
from harmony_doctor.output.operator import percent
from harmony_doctor.output.styles import DIM, LABEL, WARNING
from harmony_doctor.output.words import counted

if TYPE_CHECKING:
    from harmony_doctor.scan.hour_rates import HourlyRates, ScopeRates
    from harmony_doctor.scan.service import Rates

# No request logged in the cell; then rate 0; then rising rates, relative to the highest.
GAP = "·"
LEVELS = "▁▂▃▄▅▆▇█"
MIN_CELLS, MAX_CELLS = 8, 48
_HOUR = "%Y-%m-%dT%H"


def threshold(rate: float) -> str:
    """A limit the user gave (--max-rate) as a percentage with every digit it was given:
    0.00004 is 0.004%, never `<0.01%` (percent() rounds a measured rate; a limit is shown as
    written, in plain digits)."""
    from decimal import Decimal

    return f"{(Decimal(repr(rate)) * 100).normalize():f}%"


class OnTerminal:
    """A renderable built only when the console is a terminal (rich's own judgement, which
    --color always forces): nothing at all on a pipe or in a file."""

    def __init__(self, build: Callable[[int], RenderableType | None]) -> None:
        self.build = build

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if not console.is_terminal:
            return
        built = self.build(options.max_width)
        if built is not None:
            yield built


def rate_view(rates: HourlyRates, width: int) -> RenderableType | None:
    """The sparkline rows, with the span, the cell size and the failures drawn nowhere; None
    when no process gives a rate (the unrated line above the table says why)."""
    rows = [(s, _hours(s)) for s in rates.scopes]
    rows = [(s, h) for s, h in rows if h]
    if not rows:
        return None
    first = min(min(h) for _, h in rows)
    last = max(max(h) for _, h in rows)
    span = int((last - first) / timedelta(hours=1)) + 1
    origins = {s.origin for s, _ in rows}
    facts = [_facts(s, h, len(origins) > 1) for s, h in rows]
    # The facts first (the peak goes when the room is short), the sparkline in what is left.
    label = min(40, max(12, width // 3))
    for keep in (4, 3, 2):
        sizes = [max(len(f[i]) for f in facts) for i in range(keep)]
        used = min(label, sizes[0]) + sum(sizes[1:]) + 2 * len([n for n in sizes if n])
        if width - used >= MIN_CELLS:
            break
    cells = max(MIN_CELLS, min(MAX_CELLS, width - used, span))
    step = math.ceil(span / cells)
    cells = math.ceil(span / step)
    binned = [_bins(h, first, step, cells) for _, h in rows]
    highest = max((f / n for row in binned for n, f in row if n), default=0.0)
    table = Table.grid(padding=(0, 2))
    table.add_column(no_wrap=True, overflow="ellipsis", max_width=label)  # escapes may widen
    table.add_column(no_wrap=True)
    table.add_column(justify="right", no_wrap=True)
    styles = (WARNING, DIM)[: keep - 2]
    for style, size in zip(styles, sizes[2:], strict=True):
        if size:
            table.add_column(no_wrap=True, style=style)
    for fact, row in zip(facts, binned, strict=True):
        rest = [f for f, size in zip(fact[2:keep], sizes[2:], strict=True) if size]
        name = safe_text(_tail(fact[0], label), keep_newlines=False)
        table.add_row(name, _spark(row, highest), fact[1], *rest)
    title = Text("failure rate over time", style=LABEL)
    title.append(
        f"  {first:%Y-%m-%d %H:00} → {last:%Y-%m-%d %H:00} · a cell is "
        f"{counted(step, 'hour')} · {GAP} no requests",
        DIM,
    )
    parts: list[RenderableType] = [title, table]
    if rates.unrated:
        where = counted(rates.unrated_processes, "process")
        parts.append(
            Text(
                f"+{counted(rates.unrated, 'failure')} unrated in {where} without request "
                "lines (not drawn)",
                style=DIM,
            )
        )
    return Group(*parts)


def _facts(
    scope: ScopeRates, hours: dict[datetime, tuple[int, int]], with_origin: bool
) -> tuple[str, str, str, str]:
    """A row's label, overall rate, failures in no rate and peak hour (the highest hour's
    rate, whatever the cell size; the earliest on a tie), in the order they are dropped from
    the right on a narrow terminal (the peak first)."""
    label = f"{scope.origin or '-'} {scope.process}" if with_origin else scope.process
    overall = f"{percent(scope.failures / scope.requests)} of {counted(scope.requests, 'request')}"
    when, peak = max(((at, f / n) for at, (n, f) in hours.items()), key=_peak_order)
    high = f"peak {percent(peak)} at {when:%Y-%m-%d %H:00}" if peak else ""
    return label, overall, f"+{scope.unrated:,} unrated" if scope.unrated else "", high


def _tail(label: str, room: int) -> str:
    """The end of a long label (a path's end names the log), with `…` for what is cut."""
    return label if len(label) <= room else "…" + label[len(label) - room + 1 :]


def _peak_order(hour: tuple[datetime, float]) -> tuple[float, float]:
    return (hour[1], -hour[0].timestamp())


def _hours(scope: ScopeRates) -> dict[datetime, tuple[int, int]]:
    """Requests and failures by hour; an hour that does not read as one is left out."""
    out: dict[datetime, tuple[int, int]] = {}
    for h in scope.hours:
        try:
            at = datetime.strptime(h.hour[:13], _HOUR)
        except ValueError:
            continue
        n, f = out.get(at, (0, 0))
        out[at] = (n + h.requests, f + h.failures)
    return out


def _bins(
    hours: dict[datetime, tuple[int, int]], first: datetime, step: int, cells: int
) -> list[tuple[int, int]]:
    """(requests, failures) per cell of `step` hours from `first`."""
    row = [(0, 0)] * cells
    for at, (n, f) in hours.items():
        i = int((at - first) / timedelta(hours=1)) // step
        row[i] = (row[i][0] + n, row[i][1] + f)
    return row


def _spark(row: list[tuple[int, int]], highest: float) -> Text:
    spark = Text()
    for n, f in row:
        if not n:
            spark.append(GAP, DIM)
        elif not f or not highest:
            spark.append(LEVELS[0], "green")
        else:
            level = 1 + round((f / n) / highest * (len(LEVELS) - 2))
            spark.append(LEVELS[min(level, len(LEVELS) - 1)], "red")
    return spark


def hourly_rates_view(rates: Rates) -> OnTerminal:
    """The sparkline of a summary's hourly rates, computed (by scan) only when shown on a
    terminal."""
    return OnTerminal(lambda width: rate_view(rates.hourly, width))
