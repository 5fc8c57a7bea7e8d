"""scan/event_files.py: event files read back; bad files set apart, Parquet checked in a child."""

from __future__ import annotations

from pathlib import Path

import pytest

from harmony_doctor.output import tables as export
from harmony_doctor.scan import event_batches
from harmony_doctor.scan import event_files as reading
from harmony_doctor.scan.summary import events_frame
from tests.helpers import run

# A child that dies like polars does on some corrupt files (SIGABRT), on the file named "abort".
_ABORTING_CHECK = """
import os, sys
for number, path in enumerate(sys.stdin.read().split("\\0")[:-1]):
    print("start", number, flush=True)
    if path.endswith("abort.parquet"):
        os.abort()
    print("ok", number, flush=True)
"""


def _events_file(folder: Path, name: str) -> Path:
    """One failure, of a log named after the file (two such files hold two failures: a row
    that an earlier file held already would count once)."""
    import polars as pl

    frame = events_frame(()).drop("day", "hour")
    row = {c: None for c in frame.columns} | {
        "file": f"{Path(name).stem}.log",
        "code": "HD101",
        "timestamp": "2026-11-27T10:00:00Z",
    }
    path = folder / name
    export.write_table(pl.concat([frame, pl.DataFrame([row], schema=frame.schema)]), path)
    return path


def test_report_parquet_reader_crash_is_a_corrupt_file_not_an_abort(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(event_batches, "_PARQUET_CHECK", _ABORTING_CHECK)
    first, crash, last = (tmp_path / f"{n}.parquet" for n in ("first", "abort", "last"))
    problems = reading.check_parquet([first, crash, last])
    assert problems == {crash: "the parquet data is corrupt (the reader was killed by SIGABRT)"}


def test_report_corrupt_parquet_reason(tmp_path: Path) -> None:
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1" + b"\xff" * 200 + b"PAR1")
    problems = reading.check_parquet([bad])
    assert problems[bad].startswith("the parquet data is corrupt (")


def test_report_keeps_good_files(tmp_path: Path) -> None:
    good_csv = _events_file(tmp_path, "a.csv")
    good_parquet = _events_file(tmp_path, "b.parquet")
    bad = tmp_path / "c.parquet"
    bad.write_bytes(b"PAR1 garbage PAR1")
    missing = tmp_path / "d.jsonl"
    result = run(
        ["report", "--format", "json", str(good_csv), str(bad), str(good_parquet), str(missing)]
    )
    assert result.exit_code == 2
    import json

    summary = json.loads(result.stdout)
    assert summary["totals"]["failures"] == 2
    assert [f["path"] for f in summary["files"]] == [str(good_csv), str(good_parquet)]
    # Event files made by hand have no request tallies beside: noted, after the bad files.
    lines = [line for line in result.stderr.splitlines() if "no request counts" not in line]
    assert len(lines) == 2
    assert lines[0].startswith(f"harmony-doctor: cannot read {bad}: the parquet data is corrupt")
    assert lines[1] == f"harmony-doctor: {missing}: No such file or directory"


def test_report_summary_csv_checked_before_reading(tmp_path: Path) -> None:
    good = _events_file(tmp_path, "a.csv")
    result = run(["report", "--summary-csv", str(tmp_path / "out.txt"), str(good)])
    assert result.exit_code == 2 and result.stdout == ""
    assert "cannot tell the format" in result.stderr


@pytest.mark.parametrize("name", ["long.parquet", "long.csv", "long.jsonl"])
def test_report_cuts_a_long_cell_and_says_so(tmp_path: Path, name: str) -> None:
    """A text cell longer than MAX_CELL is kept cut to it (Parquet cut in the query, before it
    is collected), counted per file, and `report` says so on stderr: never cut silently."""
    import polars as pl

    path = _events_file(tmp_path, name)
    frame = reading.read_table(path)
    long_message = "x" * (3 * reading.MAX_CELL) + "y"
    frame = frame.with_columns(pl.lit(long_message).alias("message"))
    path.unlink()
    export.write_table(
        pl.concat([frame, frame.with_columns(pl.lit("short").alias("message"))]), path
    )
    read = reading.read_event_files([path], events_frame(()).schema)
    assert read.cut == (1,)
    assert read.frame["message"].to_list() == ["x" * reading.MAX_CELL, "short"]
    result = run(["report", str(path), "--exit-zero"])
    assert f"1 cell of {path} longer than {reading.MAX_CELL:,} characters" in result.stderr
    assert result.exit_code == 0


def test_report_of_whole_cells_says_nothing_of_cuts(tmp_path: Path) -> None:
    path = _events_file(tmp_path, "plain.parquet")
    assert reading.read_event_files([path], events_frame(()).schema).cut == (0,)
    assert "read to that length" not in run(["report", str(path), "--exit-zero"]).stderr


def test_report_reads_an_events_csv_resaved_with_every_field_quoted(tmp_path: Path) -> None:
    # Spreadsheets and pandas (QUOTE_ALL) write an empty cell as `""`: it is empty, as `,,` is,
    # not text a number column cannot be cast from.
    import csv

    log = tmp_path / "vllm.log"
    log.write_text(
        "ERROR 11-27 10:00:01 openai_harmony.HarmonyError: Unexpected token 200002 while "
        "expecting start token 200006\n"
        "ERROR 11-27 10:00:02 openai_harmony.HarmonyError: Unexpected token 12606 while "
        "expecting start token 200006\n"
    )
    written = tmp_path / "events.csv"
    run(["scan", "-j", "1", "--events", str(written), str(log)])
    quoted = tmp_path / "quoted.csv"
    with written.open(newline="") as source, quoted.open("w", newline="") as target:
        csv.writer(target, quoting=csv.QUOTE_ALL).writerows(csv.reader(source))
    assert '""' in quoted.read_text()
    plain = reading.read_events([written], events_frame(()).schema)[0]
    resaved = reading.read_events([quoted], events_frame(()).schema)[0]
    assert resaved.height == 2
    assert resaved.equals(plain)


@pytest.mark.parametrize("name", ["old.csv", "old.jsonl", "old.parquet"])
def test_report_reads_events_written_before_the_traceback_line_column(
    tmp_path: Path, name: str
) -> None:
    """Events files scan wrote before events said which traceback their raise ended: the
    column is missing, and the file still reads, as a failure like any other."""
    import json

    import polars as pl

    frame = events_frame(()).drop("day", "hour", "traceback_line")
    row = {c: None for c in frame.columns} | {"file": "a.log", "code": "HD187"}
    path = tmp_path / name
    export.write_table(pl.concat([frame, pl.DataFrame([row], schema=frame.schema)]), path)
    result = run(["report", "--format", "json", str(path)])
    summary = json.loads(result.stdout)
    assert summary["totals"]["failures"] == 1
    assert [f["path"] for f in summary["files"]] == [str(path)]


def test_an_events_csv_cut_inside_a_row_is_refused_not_read_as_ok(tmp_path: Path) -> None:
    """A CSV scan wrote ends each row with a line end: one cut inside its last row was read as
    ok, the cut row counted as a whole event (12 of 22), when no request counts sat beside it."""
    from tests.helpers import SAMPLES, run

    events = tmp_path / "ev.csv"
    run(["scan", str(SAMPLES / "vllm-traceback.log"), "--events", str(events), "--exit-zero"])
    whole = events.read_bytes()
    cut = tmp_path / "cut.csv"
    cut.write_bytes(whole[: whole.rindex(b"\n", 0, len(whole) - 1) + 20])
    result = run(["report", str(cut)])
    assert result.exit_code == 2 and "ends inside a row" in result.stderr
    assert run(["report", str(events)]).exit_code == 1
