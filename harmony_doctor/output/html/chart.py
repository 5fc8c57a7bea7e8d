"""Inline SVG charts on a real time axis: stacked bars or lines per time bucket.

The axis is linear in time within each run of buckets with data; where nothing was logged
for longer than BREAK_AFTER, the axis is cut and the cut says how long the gap was, so that
ten months apart never look adjacent and a few days around them stay readable. Inside a
run, a bucket without data is empty space (bars) or a break in the line."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from harmony_doctor.output.escape import for_html
from harmony_doctor.output.html.series import HOUR, Series
from harmony_doctor.output.operator import percent

# Okabe-Ito (colour-blind safe; its yellow is left out, too faint on white). A name keeps its
# colour across the page; names past the palette share OTHER's grey, which no colour is near.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000")
OTHER, OTHER_COLOUR = "other", "#BBBBBB"
WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 880, 250, 56, 12, 10, 44
GAP_PX = 54  # the width of a cut in the axis
# A run of buckets ends where the next bucket with data is further than this.
BREAK_AFTER_HOURS, BREAK_AFTER_DAYS = timedelta(days=2), timedelta(days=14)


def esc(value: object) -> str:
    return for_html("" if value is None else str(value))


def colours(ranked: tuple[str, ...]) -> dict[str, str]:
    """The first names (most failures first) get the palette; the rest OTHER's grey."""
    mapping = {name: PALETTE[i] for i, name in enumerate(ranked[: len(PALETTE)])}
    for name in ranked[len(PALETTE) :]:
        mapping[name] = OTHER_COLOUR
    return mapping


@dataclass(frozen=True)
class Run:
    first: datetime
    last: datetime
    x0: float
    x1: float
    slot: float  # pixels per bucket


def runs(buckets: list[datetime], unit: timedelta) -> list[Run]:
    """The axis: runs of buckets placed left to right, gaps of GAP_PX between them."""
    cut = BREAK_AFTER_HOURS if unit == HOUR else BREAK_AFTER_DAYS
    spans: list[list[datetime]] = []
    for b in buckets:
        if spans and b - spans[-1][-1] <= cut:
            spans[-1].append(b)
        else:
            spans.append([b])
    slots = [round((s[-1] - s[0]) / unit) + 1 for s in spans]
    floor = sum(slots) * 0.08  # a short run still gets room to be seen
    weights = [max(n, floor) for n in slots]
    room = WIDTH - LEFT - RIGHT - GAP_PX * (len(spans) - 1)
    placed, x = [], float(LEFT)
    for span, n, weight in zip(spans, slots, weights, strict=True):
        width = room * weight / sum(weights)
        placed.append(Run(span[0], span[-1], x, x + width, width / n))
        x += width + GAP_PX
    return placed


def _where(run: Run, moment: datetime, unit: timedelta) -> float:
    return run.x0 + (round((moment - run.first) / unit) + 0.5) * run.slot


def _gap_text(gap: timedelta) -> str:
    days = gap.days
    if days >= 60:
        return f"{round(days / 30.44)} months"
    if days >= 2:
        return f"{days} days"
    return f"{round(gap / HOUR)} hours"


def _axis(placed: list[Run], unit: timedelta, bottom: float) -> list[str]:
    parts = []
    for i, run in enumerate(placed):
        parts.append(
            f'<line x1="{run.x0:.1f}" x2="{run.x1:.1f}" y1="{bottom:.1f}" y2="{bottom:.1f}" '
            'stroke="#57606a"/>'
        )
        slots = round((run.last - run.first) / unit) + 1
        labels = max(1, int((run.x1 - run.x0) / 80))
        step = max(1, -(-slots // labels))
        previous = None
        for n in range(0, slots, step):
            moment = run.first + n * unit
            x = _where(run, moment, unit)
            top = moment.strftime("%H:00") if unit == HOUR else moment.strftime("%m-%d")
            if previous is None:
                under = moment.strftime("%Y-%m-%d") if unit == HOUR else moment.strftime("%Y")
            elif unit == HOUR and moment.date() != previous.date():
                under = moment.strftime("%m-%d")
            elif unit != HOUR and moment.year != previous.year:
                under = moment.strftime("%Y")
            else:
                under = ""
            previous = moment
            parts.append(
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{bottom:.1f}" y2="{bottom + 4:.1f}" '
                f'stroke="#57606a"/><text x="{x:.1f}" y="{bottom + 16:.1f}" '
                f'text-anchor="middle">{top}</text>'
                f'<text x="{x:.1f}" y="{bottom + 30:.1f}" text-anchor="middle">{under}</text>'
            )
        if i + 1 < len(placed):
            after = placed[i + 1]
            mid = (run.x1 + after.x0) / 2
            parts.append(
                f'<rect class="gap" x="{run.x1 + 4:.1f}" y="{TOP}" '
                f'width="{GAP_PX - 8}" height="{bottom - TOP:.1f}" fill="#f6f8fa" '
                f'stroke="#8c959f" stroke-dasharray="3 3"/>'
                f'<text x="{mid:.1f}" y="{TOP + 14}" text-anchor="middle">gap</text>'
                f'<text class="gap-length" x="{mid:.1f}" y="{TOP + 28}" '
                f'text-anchor="middle">{_gap_text(after.first - run.last)}</text>'
            )
    return parts


def _value(value: float, as_rate: bool) -> str:
    return percent(value) if as_rate else f"{value:g}"


def chart(
    series: Series, palette: dict[str, str], title: str, *, stack: bool, rate: bool, left_out: str
) -> str:
    """Stacked bars (names in rank order) or one line per name, with a legend by failures."""
    buckets = series.buckets
    if not buckets:
        if not series.left_out:
            return '<p class="note">No failure to draw.</p>'
        return (
            f'<p class="note">Nothing to draw: {series.left_out:,} failure(s) {esc(left_out)}.</p>'
        )
    unit = series.unit
    placed = runs(buckets, unit)
    run_of = {b: r for r in placed for b in buckets if r.first <= b <= r.last}
    order = [n for n in series.ranked if n in series.values]
    if stack:
        highest = max((sum(series.values[n].get(b, 0) for n in order) for b in buckets), default=0)
    else:
        highest = max((v for n in order for v in series.values[n].values()), default=0)
    if not rate:  # counts: whole numbers on every tick
        highest = 4 * -(-highest // 4)
    highest = highest or 1.0
    bottom = HEIGHT - BOTTOM
    plot = bottom - TOP
    parts = [
        f'<svg class="chart" role="img" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}"><title>{esc(title)}</title>'
    ]
    for tick in range(5):
        y = bottom - plot * tick / 4
        parts.append(
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eaeef2"/>'
            f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
            f"{_value(highest * tick / 4, rate) if tick else '0'}</text>"
        )
    parts += _axis(placed, unit, bottom)
    if stack:
        for b in buckets:
            run = run_of[b]
            width = min(max(run.slot * 0.8, 1.0), 28.0)
            x = _where(run, b, unit) - width / 2
            base = float(bottom)
            for name in order:
                value = series.values[name].get(b, 0)
                if not value:
                    continue
                h = plot * value / highest
                base -= h
                parts.append(
                    f'<rect class="bar" data-name="{esc(name)}" data-bucket="{b.isoformat()}" '
                    f'data-value="{value!r}" x="{x:.1f}" y="{base:.1f}" width="{width:.1f}" '
                    f'height="{h:.1f}" fill="{palette.get(name, OTHER_COLOUR)}"><title>'
                    f"{esc(_label(b, unit))} {esc(name)}: {_value(value, rate)}</title></rect>"
                )
    else:
        for name in reversed(order):  # the most frequent drawn last, on top
            parts += _line(series.values[name], name, palette.get(name, OTHER_COLOUR), run_of,
                           unit, highest, rate)  # fmt: skip
    parts.append("</svg>")
    note = (
        f'<p class="note">{series.left_out:,} failure(s) not drawn: {esc(left_out)}.</p>'
        if series.left_out
        else ""
    )
    return "".join(parts) + legend(series, palette) + note


def _label(moment: datetime, unit: timedelta) -> str:
    return moment.strftime("%Y-%m-%d %H:00") if unit == HOUR else moment.strftime("%Y-%m-%d")


def _line(
    values: dict[datetime, float],
    name: str,
    colour: str,
    run_of: dict[datetime, Run],
    unit: timedelta,
    highest: float,
    rate: bool,
) -> list[str]:
    bottom, plot = HEIGHT - BOTTOM, HEIGHT - BOTTOM - TOP
    points = sorted(values.items())
    parts, stroke, previous = [], [], None
    for moment, value in points:
        xy = (_where(run_of[moment], moment, unit), bottom - plot * value / highest)
        if previous is not None and moment - previous != unit:
            parts.append(_polyline(stroke, colour))
            stroke = []
        stroke.append(xy)
        previous = moment
        parts.append(
            f'<circle class="point" data-name="{esc(name)}" data-bucket="{moment.isoformat()}" '
            f'data-value="{value!r}" cx="{xy[0]:.1f}" cy="{xy[1]:.1f}" r="2.5" fill="{colour}">'
            f"<title>{esc(_label(moment, unit))} {esc(name)}: {_value(value, rate)}</title>"
            "</circle>"
        )
    parts.append(_polyline(stroke, colour))
    return parts


def _polyline(points: list[tuple[float, float]], colour: str) -> str:
    if len(points) < 2:
        return ""
    joined = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    return f'<polyline points="{joined}" fill="none" stroke="{colour}" stroke-width="1.6"/>'


def legend(series: Series, palette: dict[str, str]) -> str:
    """Names by failures, most first, each with its count; the grey rest as one `other`."""
    shown = [n for n in series.ranked if palette.get(n, OTHER_COLOUR) != OTHER_COLOUR]
    rest = [n for n in series.ranked if n not in shown]
    items = [
        f'<span data-name="{esc(n)}"><i style="background:{palette[n]}"></i>{esc(n)} '
        f"({series.failures[n]:,})</span>"
        for n in shown
    ]
    if rest:
        count = sum(series.failures[n] for n in rest)
        items.append(
            f'<span data-name="{OTHER}"><i style="background:{OTHER_COLOUR}"></i>{OTHER}: '
            f"{len(rest)} more ({count:,})</span>"
        )
    return f'<div class="legend">{"".join(items)}</div>'
