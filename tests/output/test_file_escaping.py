"""One escaper for files too: whatever a log or a file name holds, no file this tool writes
carries a control, C1 or bidi character (output/escape.py `unsafe`), as no terminal line does.

The rule, tested as a property: any string, put in every untrusted field of a scan's events
(file, message, pattern, header remainder, server, origin), through each writer (the HTML
page, the Prometheus textfile, the step summary's Markdown, CSV, JSONL), yields text with no
such character; and the repro bundle's ISSUE.md likewise.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import harmony_doctor as hd
from harmony_doctor.models import ScanEvent
from harmony_doctor.output.escape import unsafe
from harmony_doctor.output.github import step_summary
from harmony_doctor.output.html_report import html_page
from harmony_doctor.output.operator import operator_summary
from harmony_doctor.output.prometheus import prometheus_text
from harmony_doctor.output.tables import write_csv, write_table
from harmony_doctor.scan.records import FileReport, ScanResult
from harmony_doctor.scan.service import summarize_scan
from harmony_doctor.scan.summary import events_frame
from tests.helpers import SAMPLES

# Every class of character the rule names, and what an attacker writes with them.
ATTACKS = [
    "\x1b]52;c;ZXZpbA==\x07",  # OSC 52: a clipboard write when the file is `cat`ed
    "\x1b]52;c;ZXZpbA==\x1b\\",
    "\x9b31m",  # C1 CSI
    "\x85",
    "\u202eexe.txt",  # reorders what follows
    "\u2066\u2067\u2068\u2069\u200e\u200f\u061c\u202a\u202b\u202c\u202d",
    "\x00\x07\x08\x0b\x0c\r\x7f",
    "\u2028\u2029\ufeff",
]
untrusted = st.lists(st.sampled_from(ATTACKS) | st.text(max_size=8), min_size=1, max_size=6).map(
    "".join
)


def _event(file: str, said: str, server: str, origin: str) -> ScanEvent:
    return ScanEvent(
        file=file,
        line=3,
        timestamp="2026-11-27T10:00:05",
        pid=1,
        server=server,
        harmony_version=None,
        kind="header_leftover",
        code="HD106",
        severity="error",
        pattern=f"header_leftover {said}",
        token_id=None,
        token_text=said,
        header_remainder=said,
        message=f"unexpected tokens remaining in message header: {said}",
        origin=origin,
    )


def _no_unsafe(name: str, text: str) -> None:
    # CSV ends its rows with CR LF, its format's own line end: only those CRs are allowed.
    found = unsafe(text.replace("\r\n", "\n")) if name == "csv" else unsafe(text)
    assert not found, (name, [c for c in text if unsafe(c)][:5])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(file=untrusted, said=untrusted, server=untrusted, origin=untrusted)
def test_no_writer_lets_a_control_or_bidi_character_into_its_file(
    file: str, said: str, server: str, origin: str
) -> None:
    events = (_event(file, said, server, origin),)
    report = FileReport(file, "ok", None, 10, 3, 1)
    result = ScanResult(held=events, requests=(), files=(report,))
    summary = summarize_scan(result, ("file", "pattern", "server"))
    operator = operator_summary("scan", summary)
    csv_text = io.StringIO()
    write_csv(summary.table.columns, summary.table.iter_rows(), csv_text)
    events_csv = io.StringIO()
    frame = events_frame(events)
    write_csv(frame.columns, frame.iter_rows(), events_csv)
    for name, text in (
        ("html", html_page(operator, 10, "now")),
        ("prometheus", prometheus_text(operator, 0.0)),
        ("markdown", step_summary(operator, 10)),
        ("csv", csv_text.getvalue()),
        ("csv", events_csv.getvalue()),
    ):
        _no_unsafe(name, text)


def test_jsonl_events_keep_every_character_as_a_json_escape(tmp_path: Path) -> None:
    """JSONL has escapes of its own: the characters are written as `\\uXXXX`, and read back."""
    said = "".join(ATTACKS)
    frame = events_frame((_event(f"a{said}.log", said, said, said),))
    path = tmp_path / "events.jsonl"
    write_table(frame, path)
    text = path.read_text(encoding="utf-8")
    _no_unsafe("jsonl", text)
    assert json.loads(text.splitlines()[0])["header_remainder"] == said


def test_csv_file_shows_the_escapes_the_terminal_shows(tmp_path: Path) -> None:
    frame = events_frame((_event("a\u202eb.log", "\x1b]0;x\x07=1", "s", "o"),))
    path = tmp_path / "events.csv"
    write_table(frame, path)
    text = path.read_text(encoding="utf-8")
    assert "a\\u202eb.log" in text and "\\x1b]0;x\\x07=1" in text
    _no_unsafe("csv", text)


def test_repro_issue_markdown_shows_control_and_bidi_characters(tmp_path: Path) -> None:
    """ISSUE.md quotes the decoded stream and the input's name: both through the escaper."""
    vocab = hd.load_vocab()
    seed = hd.parse_tokens((SAMPLES / "seed-multiturn-completion.json").read_text())
    hostile = vocab.encode("\x1b]52;c;ZXZpbA==\x07 \u202eevil\u202c \x9b")
    small = hd.shrink(hd.parse_tokens(json.dumps([*hostile, *seed.tokens])), budget=50)
    out = tmp_path / "bundle"
    hd.write_repro(small, out, copy_vocab=False, label=str(tmp_path / "in\u202ejson.txt"))
    text = (out / "ISSUE.md").read_text(encoding="utf-8")
    _no_unsafe("markdown", text)
    assert "\\u202eevil" in text and "in\\u202ejson.txt" in text
