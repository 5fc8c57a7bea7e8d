"""export.py: formula-safe CSV in every file the tool writes, atomic writes, round trips."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from harmony_doctor.errors import InputError
from harmony_doctor.inputs.files import Source
from harmony_doctor.output import tables as export
from harmony_doctor.scan import event_files as reading
from harmony_doctor.scan import run as scanning
from harmony_doctor.scan.records import ScanOptions
from harmony_doctor.scan.summary import events_frame, requests_frame, summarize_frames
from tests.helpers import run
from tests.scan.vllm_logs import access, traceback

EVENTS_SCHEMA = events_frame(()).schema
FORMULA = ("=", "+", "-", "@", "\t", "\r")


def _hostile_log(folder: Path) -> Path:
    """A log whose file name, header remainder and role start like spreadsheet formulas."""
    lines = [access(1)]
    lines += traceback(
        1,
        "11-27 10:00:05",
        "unexpected tokens remaining in message header: Some(\"=cmd|' /C calc'!A0\")",
    )
    lines += traceback(1, "11-27 10:00:07", "Unknown role: @SUM(A1:A9)")
    lines += traceback(1, "11-27 10:00:09", "Unknown role: +1+1")
    path = folder / "=HYPERLINK(1).log"
    path.write_text("\n".join(lines) + "\n")
    return path


def _cells(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text, newline="")) for cell in row]


def _assert_safe(text: str) -> None:
    cells = _cells(text)
    assert cells
    unsafe = [c for c in cells if c.startswith(FORMULA)]
    assert not unsafe, unsafe


def test_every_csv_the_tool_writes_is_formula_safe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    log = _hostile_log(tmp_path).name
    by = ["--by", "file,pattern,code"]
    events, summary = tmp_path / "events.csv", tmp_path / "summary.csv"
    scanned = run(["scan", log, "-j", "1", *by, "--format", "csv", "--events", str(events)])
    run(["scan", log, "-j", "1", *by, "--summary-csv", str(summary)])
    reported = run(["report", str(events), *by, "--format", "csv"])
    report_summary = tmp_path / "report-summary.csv"
    run(["report", str(events), *by, "--summary-csv", str(report_summary)])
    assert scanned.exit_code == reported.exit_code == 1
    for text in (
        scanned.stdout,
        events.read_text(),
        summary.read_text(),
        reported.stdout,
        report_summary.read_text(),
    ):
        _assert_safe(text)
    # The neutralised values are really there, shown with their leading quote.
    assert "'=HYPERLINK(1).log" in _cells(events.read_text())
    assert any(c.startswith("'=cmd") for c in _cells(events.read_text()))
    # Read back, the quote is gone: counts and values round-trip.
    back = reading.read_table(events)
    assert back.height == 3
    assert set(back["file"].to_list()) == {"=HYPERLINK(1).log"}


def test_safe_cell_leaves_numbers_and_plain_text() -> None:
    assert export.safe_cell(-1) == -1
    assert export.safe_cell("plain") == "plain"
    assert export.safe_cell("-1") == "'-1"
    assert export.safe_cell("\rx") == "'\rx"


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_events_round_trip_keeps_counts_and_values(tmp_path: Path, suffix: str) -> None:
    _hostile_log(tmp_path)
    sources = [Source(str(p), p) for p in tmp_path.glob("*.log")]
    result = scanning.scan(sources, ScanOptions(jobs=1))
    frame = events_frame(result.events)
    path = tmp_path / f"events{suffix}"
    export.write_table(frame, path)
    back, counts = reading.read_events([path], EVENTS_SCHEMA)
    assert counts == [3] and back.height == frame.height
    assert back.columns == frame.columns
    for column in ("file", "code", "pattern", "header_remainder", "line", "token_id"):
        assert back[column].to_list() == frame[column].to_list(), column
    by = ("code", "pattern")
    assert (
        summarize_frames(back, requests_frame(()), by).to_dicts()
        == summarize_frames(frame, requests_frame(()), by).to_dicts()
    )


def test_regression_empty_jsonl_events_file_reads_back(tmp_path: Path) -> None:
    # Found by fuzzing: a scan without failures writes an empty .jsonl, which polars refused
    # to read ("empty string is not a valid JSON value"), so `report` failed on clean hosts.
    path = tmp_path / "events.jsonl"
    export.write_table(events_frame(()), path)
    assert path.read_bytes() == b""
    assert reading.read_table(path).height == 0
    events, counts = reading.read_events([path], EVENTS_SCHEMA)
    assert counts == [0] and events.height == 0 and "code" in events.columns


def test_regression_empty_events_file_is_not_one_null_event(tmp_path: Path) -> None:
    # Found while testing `report`: selecting literals from a frame without columns gives
    # one row, so a clean host's empty events file counted as one failure.
    path = tmp_path / "events.jsonl"
    path.write_text("\n")
    assert reading.read_events([path], EVENTS_SCHEMA)[0].height == 0


def _partial_writer(rows_before_interrupt: int) -> Any:
    def write_csv(columns: list[str], rows: Any, stream: Any) -> None:
        stream.write(",".join(columns) + "\n")
        for index, row in enumerate(rows):
            if index == rows_before_interrupt:
                raise KeyboardInterrupt
            stream.write(",".join(map(str, row)) + "\n")

    return write_csv


def test_interrupted_write_leaves_no_file_that_looks_complete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    frame = pl.DataFrame({"code": ["HD101"] * 10})
    fresh, existing = tmp_path / "fresh.csv", tmp_path / "existing.csv"
    existing.write_text("code\nold\n")
    monkeypatch.setattr(export, "write_csv", _partial_writer(5))
    for path in (fresh, existing):
        with pytest.raises(KeyboardInterrupt):
            export.write_table(frame, path)
    assert not fresh.exists()
    assert existing.read_text() == "code\nold\n"  # the last complete file, untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["existing.csv"]  # no .part left


def test_ctrl_c_during_export_exits_130_without_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _hostile_log(tmp_path)
    events = tmp_path / "events.csv"
    monkeypatch.setattr(export, "write_csv", _partial_writer(1))
    result = run(["scan", str(log), "-j", "1", "--events", str(events)])
    assert result.exit_code == 130
    assert result.stderr == "harmony-doctor: interrupted\n" and result.stdout == ""
    assert not events.exists() and not list(tmp_path.glob(".*.part"))


def test_ctrl_c_during_scan_exits_130_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _hostile_log(tmp_path)
    events, summary = tmp_path / "events.parquet", tmp_path / "summary.csv"

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(scanning, "scan_unit", interrupted)
    args = ["scan", str(log), "-j", "1", "--events", str(events), "--summary-csv", str(summary)]
    result = run(args)
    assert result.exit_code == 130 and result.stderr == "harmony-doctor: interrupted\n"
    assert not events.exists() and not summary.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [log.name]


def test_json_outputs_parse(tmp_path: Path) -> None:
    log = _hostile_log(tmp_path)
    events = tmp_path / "events.jsonl"
    for args in (
        ["scan", str(log), "-j", "1", "--format", "json", "--events", str(events)],
        ["report", str(events), "--format", "json"],
    ):
        result = run(args)
        assert result.exit_code == 1
        assert json.loads(result.stdout)["totals"]["failures"] == 3
    assert [json.loads(line)["code"] for line in events.read_text().splitlines()]


@pytest.mark.parametrize("depth", [1000, 600, 20])
def test_regression_deeply_nested_jsonl_crashed_polars(tmp_path: Path, depth: int) -> None:
    # Found by the deep fuzz run: polars' read_ndjson dies with SIGSEGV on an object nested
    # about a thousand deep, so `report evil.jsonl` killed the process. Now such lines are
    # refused before polars reads them. Run in a subprocess: a regression must not kill pytest.
    path = tmp_path / "events.jsonl"
    path.write_text('{"a":' * depth + "1" + "}" * depth + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "harmony_doctor", "report", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2, done
    assert done.stderr.startswith(f"harmony-doctor: error: cannot read {path}: line 1 ")
    assert done.stderr.count("\n") == 1


def test_regression_corrupt_parquet_panicked_polars(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    # Found by mutating real event files: on some corrupt Parquet polars raises
    # PanicException (a BaseException, so a traceback) after its Rust code printed the panic
    # to file descriptor 2 itself. Now it is an InputError and fd 2 stays quiet.

    def panicking(*args: Any, **kwargs: Any) -> Any:
        os.write(2, b"thread '<unnamed>' panicked at crates/polars-parquet/src/x.rs:1:1\n")
        raise pl.exceptions.PanicException("assertion `left == right` failed")

    path = tmp_path / "events.parquet"
    path.write_bytes(b"PAR1" + b"\0" * 64 + b"PAR1")
    monkeypatch.setattr(pl, "read_parquet", panicking)
    with pytest.raises(InputError, match="the parquet data is corrupt"):
        reading.read_table(path)
    assert capfd.readouterr().err == ""


def test_csv_to_a_terminal_shows_control_characters() -> None:
    """`--format csv` on a terminal: escapes are shown as text, each cell one line; to a
    pipe or a file the escapes are shown too (a file is `cat`ed), line breaks kept."""
    from harmony_doctor.output.tables import write_csv

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    rows = [["evil\x1b]0;owned\x07", "=1+1", "\u202eright"]]
    shown, piped = Terminal(), io.StringIO()
    write_csv(["a", "b", "c"], rows, shown)
    write_csv(["a", "b", "c"], rows, piped)
    assert "\x1b" not in shown.getvalue() and "\u202e" not in shown.getvalue()
    assert "\\x1b" in shown.getvalue() and "'=1+1" in shown.getvalue()
    assert "evil\\x1b]0;owned\\x07" in piped.getvalue() and "'=1+1" in piped.getvalue()
    assert "\x1b" not in piped.getvalue() and "\u202e" not in piped.getvalue()


def test_parquet_row_groups_stay_within_what_report_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Parquet file the tool writes is cut into row groups of about ROW_GROUP_BYTES, so that
    `report` never refuses it (it refuses a row group past MAX_ROW_GROUP decoded)."""
    from harmony_doctor.inputs import parquet_footer

    monkeypatch.setattr(export, "ROW_GROUP_BYTES", 1_000_000)
    monkeypatch.setattr(parquet_footer, "MAX_ROW_GROUP", 4_000_000)
    frame = pl.DataFrame({"n": range(20_000), "message": [f"{n:0500d}" for n in range(20_000)]})
    path = tmp_path / "t.parquet"
    export.write_table(frame, path)
    sizes = parquet_footer.row_group_sizes(path)
    assert len(sizes) >= 10  # 10 MB of text in groups of about 1 MB
    assert max(s.decoded for s in sizes) < 2_000_000
    assert parquet_footer.too_large(path) is None
    assert pl.read_parquet(path).equals(frame)
    export.write_table(frame.head(0), path)  # an empty frame still writes a file
    assert pl.read_parquet(path).height == 0
