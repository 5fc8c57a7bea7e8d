"""`report` holds a batch of event rows and what it folded, never a whole events file: peak
memory under the bound however many events a file holds or however long a cell is (issue 34)."""

from __future__ import annotations

import csv
from pathlib import Path

from harmony_doctor.scan.event_files import MAX_CELL
from harmony_doctor.scan.summary import EVENT_COLUMNS
from tests.peak import peak_of


def _row(line: int, message: str) -> list[object]:
    values: dict[str, object] = {c: "" for c in EVENT_COLUMNS}
    values.update(
        file="a.log",
        line=line,
        timestamp=f"2026-11-28T{line // 3600 % 24:02d}:{line // 60 % 60:02d}:00",
        pid=7,
        server="vllm",
        kind="unexpected_token",
        code="HD101",
        severity="error",
        pattern="unexpected_token <text>",
        token_id=1000 + line % 5000,
        message=message,
        source="log",
        origin="h",
    )
    return list(values.values())


def _events_csv(path: Path, rows: list[list[object]]) -> Path:
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(list(EVENT_COLUMNS))
        writer.writerows(rows)
    return path


def test_a_cell_of_tens_of_megabytes_is_cut_while_read(tmp_path: Path) -> None:
    """One 40 MB message cell was read whole, then cut (150 MB: 797 MiB peak)."""
    path = _events_csv(tmp_path / "big.csv", [_row(1, "x" * 40_000_000), _row(2, "short")])
    run = peak_of(["report", str(path), "--format", "json", "--exit-zero"], tmp_path)
    assert run.exit_code == 0, run.stderr
    assert f"1 cell of {path} longer than {MAX_CELL:,} characters" in run.stderr
    assert '"failures": 2' in run.stdout
    assert run.within_bound, str(run)


def test_many_events_are_read_a_batch_at_a_time(tmp_path: Path) -> None:
    """200,000 events and a copy were held whole (564 MiB peak; 500,000: 733 MiB); the copy is
    counted once, found by a key per row. At 200,000 and a copy the peak was 150-202 MiB by load
    while polars' allocator kept freed pages for ten seconds; it hands them back at once now
    (cli/start.py): about 125 MiB (issue 34)."""
    rows = [
        _row(n, f"Unexpected token {n} while expecting start token 200006") for n in range(200_000)
    ]
    path = _events_csv(tmp_path / "events.csv", rows)
    copy = tmp_path / "copy.csv"
    copy.write_bytes(path.read_bytes())
    run = peak_of(["report", str(path), str(copy), "--format", "json"], tmp_path)
    assert run.exit_code == 1, run.stderr
    assert '"failures": 200000' in run.stdout
    assert f"200,000 events of {copy} read already from an earlier file" in run.stderr
    assert run.within_bound, str(run)
