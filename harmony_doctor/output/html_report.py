"""The summary as one self-contained HTML page to share in an incident.

Inline CSS and SVG drawn here: no script, no font, no image, nothing fetched, so the page
opens the same offline, in a mail client or from an incident ticket. Every string that came
from a log (file names included) goes through `html.escape`.
"""

from __future__ import annotations

import html
from collections import Counter

from harmony_doctor.output.operator import (
    NO_ORIGIN,
    OperatorSummary,
    per_origin,
    percent,
    text,
    unrated_line,
)

# Colour-blind-friendly (Okabe-Ito), then greys; a code keeps its colour across the page.
PALETTE = (
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7",
    "#56B4E9", "#F0E442", "#000000", "#999999", "#666666",
)  # fmt: skip
OTHER = "other"
# Codes beyond the palette are stacked together, so the chart stays readable.
CHART_CODES = len(PALETTE) - 1
CHART_WIDTH, CHART_HEIGHT, MARGIN_LEFT, MARGIN_BOTTOM = 880, 260, 48, 56

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;
color:#1b1f24;background:#fff;max-width:1100px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}
.sub{color:#57606a;margin:0 0 16px}
.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{border:1px solid #d0d7de;border-radius:6px;padding:8px 14px;min-width:110px}
.card b{display:block;font-size:20px}.card span{color:#57606a;font-size:12px}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{border-bottom:1px solid #d8dee4;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.n{text-align:right;font-variant-numeric:tabular-nums}
td.n,td:first-child{white-space:nowrap;word-break:normal}
td{word-break:break-word}code{font-size:12px}
.legend{display:flex;flex-wrap:wrap;gap:12px;font-size:12px;margin:6px 0}
.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}
svg text{font-size:11px;fill:#57606a}.note{color:#57606a;font-size:12px}
"""


def esc(value: object) -> str:
    return html.escape(text(value), quote=True)


def _rate(value: float | None) -> str:
    return "unknown" if value is None else percent(value)


def _table(header: list[str], rows: list[list[object]], numeric: set[int], cls: str) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = []
    for row in rows:
        cells = "".join(
            f'<td class="n">{esc(v)}</td>' if i in numeric else f"<td>{esc(v)}</td>"
            for i, v in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    return (
        f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
    )


def _buckets(timestamps: list[str]) -> int:
    """Characters of the timestamp that make a bucket: hours when the failures span at most
    two days, days otherwise."""
    days = {t[:10] for t in timestamps}
    return 13 if len(days) <= 2 else 10


def colours(codes: list[str]) -> dict[str, str]:
    """Each code's colour, the most frequent first; the rest share OTHER's."""
    shown = codes[:CHART_CODES]
    mapping = {code: PALETTE[i] for i, code in enumerate(shown)}
    mapping[OTHER] = PALETTE[-1]
    return mapping


def timeline_svg(summary: OperatorSummary) -> str:
    """Failures over time by code, as stacked bars (one per day, or per hour over short spans)."""
    events = summary.events
    stamped = [
        (text(t), text(c))
        for t, c in zip(events["timestamp"].to_list(), events["code"].to_list(), strict=True)
        if t
    ]
    if not stamped:
        return '<p class="note">No failure carries a time: nothing to draw.</p>'
    cut = _buckets([t for t, _ in stamped])
    by_code = Counter(c for _, c in stamped)
    palette = colours([c for c, _ in by_code.most_common()])
    counts: Counter[tuple[str, str]] = Counter(
        (t[:cut], c if c in palette else OTHER) for t, c in stamped
    )
    buckets = sorted({b for b, _ in counts})
    stack_order = [c for c in palette if any(k == c for _, k in counts)]
    highest = max(sum(counts[(b, c)] for c in stack_order) for b in buckets)
    plot_w, plot_h = CHART_WIDTH - MARGIN_LEFT - 8, CHART_HEIGHT - MARGIN_BOTTOM - 8
    step = plot_w / len(buckets)
    bar_w = max(step * 0.8, 1.0)
    parts = [
        f'<svg class="timeline" role="img" '
        f'width="{CHART_WIDTH}" height="{CHART_HEIGHT}" viewBox="0 0 {CHART_WIDTH} {CHART_HEIGHT}">'
        f"<title>Failures per {'hour' if cut == 13 else 'day'} by code</title>"
    ]
    for tick in range(5):  # the y axis: 0, a quarter, ... the highest bar
        value = highest * tick / 4
        y = 8 + plot_h - plot_h * tick / 4
        parts.append(
            f'<line x1="{MARGIN_LEFT}" x2="{CHART_WIDTH - 8}" y1="{y:.1f}" y2="{y:.1f}" '
            f'stroke="#d8dee4"/><text x="{MARGIN_LEFT - 6}" y="{y + 4:.1f}" '
            f'text-anchor="end">{value:.3g}</text>'
        )
    label_every = max(1, round(len(buckets) / 12))
    for i, bucket in enumerate(buckets):
        x = MARGIN_LEFT + i * step + (step - bar_w) / 2
        base = 8.0 + plot_h
        for code in stack_order:
            n = counts.get((bucket, code), 0)
            if not n:
                continue
            h = plot_h * n / highest
            base -= h
            parts.append(
                f'<rect class="bar" data-code="{esc(code)}" data-bucket="{esc(bucket)}" '
                f'x="{x:.1f}" y="{base:.1f}" width="{bar_w:.1f}" height="{h:.1f}" '
                f'fill="{palette[code]}"><title>{esc(bucket)} {esc(code)}: {n}</title></rect>'
            )
        if i % label_every == 0:
            shown = f"{bucket[5:10]} {bucket[11:13]}h" if cut == 13 else bucket
            parts.append(
                f'<text x="{x + bar_w / 2:.1f}" y="{CHART_HEIGHT - MARGIN_BOTTOM + 22}" '
                f'text-anchor="middle">{esc(shown)}</text>'
            )
    parts.append("</svg>")
    others = sum(n for k, n in by_code.items() if k not in palette)
    legend = "".join(
        f'<span><i style="background:{palette[c]}"></i>{esc(c)} '
        f"({by_code[c] if c != OTHER else others})</span>"
        for c in stack_order
    )
    unstamped = events.height - len(stamped)
    note = (
        f'<p class="note">{unstamped} failure(s) without a time are not drawn.</p>'
        if unstamped
        else ""
    )
    first, last = buckets[0], buckets[-1]
    span = f'<p class="note">{esc(first)} to {esc(last)}</p>'
    return f'{"".join(parts)}<div class="legend">{legend}</div>{span}{note}'


def _cards(summary: OperatorSummary) -> str:
    totals = summary.totals
    rate = _rate(totals.get("rate"))
    if totals.get("rate_note"):
        rate += f" ({totals['rate_note']})"
    cards = [
        ("failures", totals["failures"]),
        ("requests", totals.get("requests") if totals.get("requests") is not None else "unknown"),
        ("failure rate", rate),
        ("failures in no rate", totals.get("unrated", 0)),
        ("files", totals["files"]),
        ("lines", totals["lines"]),
        ("skipped", totals["skipped"]),
        ("partial", totals["partial"]),
    ]
    inner = "".join(
        f"<div class='card'><b>{esc(v)}</b><span>{esc(k)}</span></div>" for k, v in cards
    )
    note = f'<p class="note">{esc(unrated_line(totals))}</p>' if totals.get("unrated") else ""
    return f'<div class="cards">{inner}</div>{note}'


def _patterns(summary: OperatorSummary, top: int) -> str:
    events = summary.events
    if not events.height:
        return '<p class="note">No failures.</p>'
    tally: Counter[tuple[str, str]] = Counter(
        (text(c), text(p))
        for c, p in zip(events["code"].to_list(), events["pattern"].to_list(), strict=True)
    )
    example: dict[tuple[str, str], str] = {}
    for c, p, f, n in events.select("code", "pattern", "file", "line").iter_rows():
        example.setdefault((text(c), text(p)), f"{text(f)}:{text(n)}")
    rows: list[list[object]] = [
        [c, p, n, f"{n / events.height:.1%}", example[(c, p)]]
        for (c, p), n in tally.most_common(top)
    ]
    return _table(["code", "pattern", "count", "share", "example"], rows, {2, 3}, "patterns")


def _groups(summary: OperatorSummary, top: int) -> str:
    header = [*summary.keys, "count", "share", "rate", "first seen", "last seen", "example"]
    rows: list[list[object]] = [
        [
            *(g.get(k) for k in summary.keys),
            g["count"],
            f"{g['share']:.1%}",
            _rate(g.get("rate")) if not g.get("rate_note") else g["rate_note"],
            g.get("first_seen"),
            g.get("last_seen"),
            g.get("example"),
        ]
        for g in summary.groups[:top]
    ]
    numeric = {len(summary.keys), len(summary.keys) + 1, len(summary.keys) + 2}
    return _table(header, rows, numeric, "groups")


def _origins(summary: OperatorSummary) -> str:
    has_origin = "origin" in summary.events.columns or "origin" in summary.requests.columns
    rows_in = per_origin(summary)
    if not has_origin or all(r.origin == NO_ORIGIN for r in rows_in):
        return ""
    rows: list[list[object]] = [
        [r.origin or "(none)", r.failures, text(r.requests) or "unknown", _rate(r.rate), r.unrated]
        for r in rows_in
    ]
    header = ["origin", "failures", "requests", "failure rate", "no rate"]
    table = _table(header, rows, {1, 2, 4}, "origins")
    return f"<h2>By origin</h2>{table}"


def _files(summary: OperatorSummary) -> str:
    rows: list[list[object]] = [
        [
            f.get("path"),
            f.get("status"),
            f.get("failures"),
            f.get("lines"),
            f.get("bytes"),
            f.get("reason"),
        ]
        for f in summary.files
    ]
    return _table(
        ["file", "status", "failures", "lines", "bytes", "reason"], rows, {2, 3, 4}, "files"
    )


def html_page(summary: OperatorSummary, top: int, generated: str) -> str:
    """The whole page; `generated` is the time shown as when it was made."""
    title = f"harmony-doctor {summary.title}"
    by = ", ".join(summary.keys)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        # Nothing may load from elsewhere, even if a log line slipped through the escaping.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">"
        f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{esc(title)}</h1><p class='sub'>Generated {esc(generated)}; "
        f"Harmony-format failures in {esc(summary.totals['files'])} input(s).</p>"
        f"{_cards(summary)}"
        f"<h2>Failures over time by code</h2>{timeline_svg(summary)}"
        f"<h2>Top groups (by {esc(by)})</h2>{_groups(summary, top)}"
        f"<h2>Top patterns</h2>{_patterns(summary, top)}"
        f"{_origins(summary)}"
        f"<h2>Files</h2>{_files(summary)}"
        "</body></html>\n"
    )
