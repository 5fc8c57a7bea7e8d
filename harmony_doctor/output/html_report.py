"""The summary as one self-contained HTML page to share in an incident.

Inline CSS and SVG drawn here: no script, no font, no image, nothing fetched, so the page
opens the same offline, in a mail client or from an incident ticket. Every string that came
from a log (file names included) goes through the one escaper (output/escape.py `for_html`):
markup escaped, control and bidi characters shown as escapes.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from harmony_doctor.output.escape import for_html
from harmony_doctor.output.html import chart, series
from harmony_doctor.output.operator import (
    NO_ORIGIN,
    OperatorSummary,
    per_origin,
    percent,
    text,
    unrated_line,
)
from harmony_doctor.output.words import stated

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
th{background:#f6f8fa}.n{text-align:right;font-variant-numeric:tabular-nums}
td.n,td:first-child{white-space:nowrap;word-break:normal}.card small{display:block;
color:#57606a;font-size:11px;max-width:260px}
td{word-break:break-word}code{font-size:12px}
.legend{display:flex;flex-wrap:wrap;gap:12px;font-size:12px;margin:6px 0}
.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}
svg text{font-size:11px;fill:#57606a}.note{color:#57606a;font-size:12px}
"""


def esc(value: object) -> str:
    return for_html(text(value))


def _rate(value: float | None) -> str:
    return "unknown" if value is None else percent(value)


def _table(header: list[str], rows: list[list[object]], numeric: set[int], cls: str) -> str:
    head = "".join(
        f'<th class="n">{esc(h)}</th>' if i in numeric else f"<th>{esc(h)}</th>"
        for i, h in enumerate(header)
    )
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


def _card(key: str, raw: object, shown: object, label: str, why: str = "") -> str:
    """One card; `data-total`/`data-value` carry the number as `--format json` has it."""
    value = "" if raw is None else repr(stated(raw)) if isinstance(raw, float) else str(raw)
    small = f"<small>{esc(why)}</small>" if why else ""
    return (
        f'<div class="card" data-total="{key}" data-value="{esc(value)}">'
        f"<b>{esc(shown)}</b><span>{esc(label)}</span>{small}</div>"
    )


def _cards(summary: OperatorSummary) -> str:
    """The totals, each as `--format json` gives it; the rate with what it divides."""
    totals = summary.totals
    failures, unrated = totals["failures"], totals.get("unrated", 0)
    requests, rate = totals.get("requests"), totals.get("rate")
    if rate is not None:
        scope = (
            f"{failures - unrated:,} failure(s) over the {totals['rate_requests']:,} "
            "requests of their own origin, process and hour"
        )
        rate_card = _card("rate", rate, percent(rate), "failure rate", scope)
    else:
        why = totals.get("rate_note") or (
            "no request lines were logged" if not requests else "no failure is in a rate"
        )
        rate_card = _card("rate", None, "no rate", "failure rate", why)
    cards = [
        _card("failures", failures, f"{failures:,}", "failures"),
        _card(
            "requests",
            requests,
            f"{requests:,}" if requests is not None else "unknown",
            "requests",
            "" if requests is not None else "no request lines in these logs",
        ),
        rate_card,
        _card(
            "unrated",
            unrated,
            f"{unrated:,}",
            "failures in no rate",
            "shown apart: no requests were counted where they happened" if unrated else "",
        ),
        *(_card(k, totals[k], f"{totals[k]:,}", k) for k in ("files", "lines", "skipped")),
        _card("partial", totals["partial"], f"{totals['partial']:,}", "partial"),
    ]
    note = f'<p class="note">{esc(unrated_line(totals))}</p>' if unrated else ""
    clock = (
        f'<p class="note">Hours are read on {esc(totals["clock"])}.</p>'
        if totals.get("clock")
        else ""
    )
    return f'<div class="cards">{"".join(cards)}</div>{note}{clock}'


def _example_link(file: str, line: object) -> str:
    """`path:line`, linked to the file when it is one on this machine."""
    shown = f"{esc(file)}:{esc(line)}"
    try:
        path = Path(file)
        if path.is_file():
            return f'<a href="{esc(path.resolve().as_uri())}">{shown}</a>'
    except (OSError, ValueError):
        pass
    return shown


def _patterns(summary: OperatorSummary, top: int) -> str:
    """The most frequent templates (code and pattern), each with its first failure: where it
    is and what it said."""
    folded = summary.folded
    if not folded.height:
        return '<p class="note">No failures.</p>'
    tally: Counter[tuple[str, str]] = Counter()
    example: dict[tuple[str, str], tuple[str, object, str]] = {}
    columns = ("code", "pattern", "file", "line", "message", "n")
    for c, p, f, line, m, n in folded.select(columns).iter_rows():
        key = (text(c), text(p))
        tally[key] += n
        example.setdefault(key, (text(f), line, text(m)))
    total = tally.total()
    head = (
        "<tr><th>code</th><th>pattern</th><th class='n'>count</th><th class='n'>share</th>"
        "<th>example</th></tr>"
    )
    rows = []
    for (code, pattern), n in tally.most_common(top):
        file, line, message = example[(code, pattern)]
        said = message if len(message) <= 200 else message[:199] + "…"
        rows.append(
            f"<tr><td>{esc(code)}</td><td><code>{esc(pattern)}</code></td>"
            f'<td class="n">{n:,}</td><td class="n">{esc(percent(n / total))}</td>'
            f"<td>{_example_link(file, line)}<br><code>{esc(said)}</code></td></tr>"
        )
    return f'<table class="patterns"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


def _groups(summary: OperatorSummary, top: int) -> str:
    header = [*summary.keys, "count", "share", "rate", "first seen", "last seen", "example"]
    rows: list[list[object]] = [
        [
            *(g.get(k) for k in summary.keys),
            g["count"],
            percent(g["share"]),
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
    rows_in = per_origin(summary)  # the folded rows always have an origin column
    if all(r.origin == NO_ORIGIN for r in rows_in):
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


def _charts(summary: OperatorSummary) -> str:
    """The rate over time by code and by origin, then failures over time (rated or not)."""
    hours = [series.hour_of(h) for h in summary.folded["hour"].to_list()]
    if summary.requests.height:
        hours += [series.hour_of(h) for h in summary.requests["hour"].to_list()]
    unit = series.unit_of(hours)
    per = "hour" if unit == series.HOUR else "day"
    counts = series.failure_counts(summary, unit)
    palette = chart.colours(counts.ranked)
    by_code = series.rates(summary, unit, "code")
    by_origin = series.rates(summary, unit, "origin")
    no_rate = "in no rate, or without a time"
    return (
        f"<h2>Failure rate per {per} by code</h2>"
        f'<p class="note">Each bar is the {per}\'s rate: failures over the requests counted in '
        "their own origin, process and hour; each code's part is its share.</p>"
        + chart.chart(by_code, palette, f"Failure rate per {per} by code", stack=True,
                      rate=True, left_out=no_rate)
        + f"<h2>Failure rate per {per} by origin</h2>"
        + chart.chart(by_origin, chart.colours(by_origin.ranked), f"Failure rate per {per} by "
                      "origin", stack=False, rate=True, left_out=no_rate)
        + f"<h2>Failures per {per} by code</h2>"
        + chart.chart(counts, palette, f"Failures per {per} by code", stack=True, rate=False,
                      left_out="without a time")
    )  # fmt: skip


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
        f"{_charts(summary)}"
        f"<h2>Top groups (by {esc(by)})</h2>{_groups(summary, top)}"
        f"<h2>Top patterns</h2>{_patterns(summary, top)}"
        f"{_origins(summary)}"
        f"<h2>Files</h2>{_files(summary)}"
        "</body></html>\n"
    )
