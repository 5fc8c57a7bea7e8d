"""Issue 23: a scan with nothing to aggregate is summarized without a frame (and without
polars), and what it prints is exactly what the frames would have given."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

import harmony_doctor as hd
from harmony_doctor.scan.records import FileReport, ScanResult
from harmony_doctor.scan.service import EventFrames, summary_of
from harmony_doctor.scan.summary import empty_frames

_FILES = [
    (),
    (FileReport("a.log", "ok", None, 0, 0, 0),),
    (
        FileReport("a.log", "ok", None, 465, 6, 0),
        FileReport("b.log.gz", "partial", "truncated gzip stream", 1200, 31, 0, cut_lines=2),
        FileReport("c.log", "skipped", "permission denied", 0, 0, 0),
        FileReport("d.jsonl", "ignored", "written by scan --events", 0, 0, 0),
    ),
]


@pytest.mark.parametrize("files", _FILES, ids=["none", "one-empty", "mixed"])
@pytest.mark.parametrize("by", [("code",), ("pid", "hour"), ("origin", "file", "day")])
def test_nothing_found_summary_is_the_frames_summary(
    files: tuple[FileReport, ...], by: tuple[str, ...]
) -> None:
    """Totals, days and groups of a scan without events or tallies equal those the one frame
    path (summary_of over empty frames) computes; its frames, asked for, are that path's."""
    lazy = hd.summarize_scan(ScanResult((), (), files), by)
    framed = summary_of(files, EventFrames(), empty_frames()[1], by)
    assert not lazy.aggregated and framed.aggregated
    assert "_frames" not in lazy.__dict__  # nothing built so far
    assert list(lazy.totals.items()) == list(framed.totals.items())  # the JSON's key order too
    assert lazy.days == framed.days == ()
    assert lazy.groups == framed.groups == framed.table.to_dicts() == []
    assert lazy.keys == framed.keys and lazy.files == framed.files
    assert lazy.table.equals(framed.table) and lazy.table.schema == framed.table.schema
    assert lazy.folded.schema == framed.folded.schema and lazy.folded.height == 0
    assert lazy.first.schema == framed.first.schema == empty_frames()[0].schema
    assert lazy.first.height == 0
    assert lazy.requests.schema == framed.requests.schema and lazy.requests.height == 0
    again = pickle.loads(pickle.dumps(hd.summarize_scan(ScanResult((), (), files), by)))
    assert again.totals == lazy.totals and again.table.equals(lazy.table)


def test_a_summary_with_rows_groups_from_its_table() -> None:
    """With failures, `groups` is the polars table's rows, frames built once."""
    samples = Path(__file__).resolve().parent.parent / "samples"
    summary = hd.summarize_scan(hd.scan_paths([samples / "vllm-traceback.log"]))
    assert summary.aggregated
    assert summary.groups == summary.table.to_dicts() and len(summary.groups) == 3
    assert summary.table is summary.table and summary.folded is summary.folded
    assert summary.totals["failures"] == summary.folded["n"].sum() == summary.first.height == 3
    assert pickle.loads(pickle.dumps(summary)).table.equals(summary.table)
