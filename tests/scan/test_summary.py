"""scan/summary.py: groups, shares, rates and the totals scan and report print."""

from __future__ import annotations

from pathlib import Path

import pytest

import harmony_doctor as hd
from harmony_doctor.choices import GROUP_KEYS
from harmony_doctor.scan.summary import REQUEST_KEYS, summarize
from tests.scan.vllm_logs import scan_folder, traceback


def test_rates_by_file_use_that_files_requests(logs_dir: Path) -> None:
    table = summarize(scan_folder(logs_dir), ("file",)).to_dicts()
    by_file = {Path(r["file"]).name: r for r in table}
    assert by_file["vllm.log.1"]["requests"] == 8 and by_file["vllm.log.1"][
        "rate"
    ] == pytest.approx(0.25)
    assert by_file["vllm.log.gz"]["requests"] == 4


def test_group_by_day_and_pattern(logs_dir: Path) -> None:
    result = scan_folder(logs_dir)
    days = {r["day"]: r["count"] for r in summarize(result, ("day",)).to_dicts()}
    assert days == {"2026-11-27": 2, "2026-11-28": 1}
    patterns = {r["pattern"] for r in summarize(result, ("pattern",)).to_dicts()}
    assert patterns == {"unexpected_token 200002 <|return|>", "header_leftover <prose>"}


@pytest.mark.parametrize("key", GROUP_KEYS)
def test_every_group_key_partitions_the_failures(logs_dir: Path, key: str) -> None:
    result = scan_folder(logs_dir)
    table = summarize(result, (key,)).to_dicts()
    assert sum(row["count"] for row in table) == len(result.events) == 3
    assert all(row["share"] > 0 and row["example"] for row in table)
    if key in REQUEST_KEYS and key != "server":
        assert all(row["requests"] for row in table if row[key] is not None)


def test_scan_totals_rate_counts_only_files_with_requests(logs_dir: Path) -> None:
    lines = traceback(9, "11-28 12:00:00", "Unknown role: assistantassistant")
    (logs_dir / "no-requests.log").write_text("\n".join(lines) + "\n")
    result = scan_folder(logs_dir)
    totals = hd.summarize_scan(result).totals
    assert list(totals) == [
        "files",
        "bytes",
        "lines",
        "requests",
        "failures",
        "rate",
        "skipped",
        "partial",
        "rate_note",
        "unrated",
        "clock",
        "rate_requests",
    ]  # the JSON contract's order (later keys added last)
    assert totals["files"] == 4 and totals["failures"] == 4 and totals["requests"] == 13
    assert totals["rate"] == pytest.approx(3 / 13)  # the log without requests adds no rate
    assert totals["unrated"] == 1  # ... and its failure is counted apart
    assert totals["bytes"] == result.bytes and totals["lines"] == result.lines
    assert totals["skipped"] == totals["partial"] == 0


def test_scan_totals_without_requests_have_no_rate(tmp_path: Path) -> None:
    lines = traceback(9, "11-28 12:00:00", "Unknown role: assistantassistant")
    (tmp_path / "a.log").write_text("\n".join(lines) + "\n")
    (tmp_path / "gone.log").symlink_to(tmp_path / "missing")
    totals = hd.summarize_scan(scan_folder(tmp_path)).totals
    assert totals["requests"] is None and totals["rate"] is None and totals["unrated"] == 1
    assert totals["failures"] == 1 and totals["lines"] == len(lines)
    assert totals["files"] == 2 and totals["skipped"] == 1


@pytest.mark.parametrize("by", [("pattern",), ("pattern", "hour"), ("file",)])
def test_a_summary_lists_a_bounded_number_of_groups_and_the_rest_as_other(
    by: tuple[str, ...],
) -> None:
    """A group per distinct value made tables (and their JSON) as long as the failures: the
    GROUP_LIMIT largest are listed, then one OTHER row counting the rest (no example: it is no
    cause), so that the rows still add up to the totals."""
    import polars as pl

    from harmony_doctor.scan.fold import OTHER
    from harmony_doctor.scan.summary import GROUP_LIMIT, requests_frame, summarize_frames
    from tests.scan.test_fold import _distinct_patterns

    count = GROUP_LIMIT * 3 // 2
    frame = _distinct_patterns(count).with_columns(
        pl.format("f{}.log", pl.col("line") % count).alias("file")
    )
    table = summarize_frames(frame, requests_frame(()), by)
    assert table.height == GROUP_LIMIT + 1
    last = table.row(-1, named=True)
    assert all(last[k] == OTHER for k in by) and last["example"] is None
    assert OTHER not in table.head(GROUP_LIMIT)[by[0]].to_list()
    assert table["count"].sum() == count
    assert table["share"].sum() == pytest.approx(1.0)
    assert int(table.head(GROUP_LIMIT)["count"].min()) >= 1  # type: ignore[arg-type]
