"""`harmony-doctor report`: event files from `scan --events` summarised as scan summarises."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import run
from tests.scan.vllm_logs import access, build_logs, traceback


def _groups(doc: dict[str, Any]) -> dict[tuple[Any, ...], int]:
    return {tuple(g[k] for k in doc["by"]): g["count"] for g in doc["groups"]}


@pytest.fixture
def logs_dir(tmp_path: Path) -> Path:
    root = tmp_path / "logs"
    root.mkdir()
    build_logs(root)
    return root


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_report_gives_scans_summary_from_each_format(
    logs_dir: Path, tmp_path: Path, suffix: str
) -> None:
    events = tmp_path / f"events{suffix}"
    by = ["--by", "code,pattern,file,day", "--format", "json"]
    scanned = run(["scan", str(logs_dir), "-j", "1", "--events", str(events), *by])
    reported = run(["report", str(events), *by])
    assert reported.exit_code == 1 and reported.stderr == ""
    scan_doc, report_doc = json.loads(scanned.stdout), json.loads(reported.stdout)
    assert report_doc["schema"] == "harmony-doctor.report/1"
    assert _groups(report_doc) == _groups(scan_doc) and len(_groups(scan_doc)) == 3
    assert report_doc["totals"]["failures"] == scan_doc["totals"]["failures"] == 3
    # The request tallies written beside the events give scan's requests and rates back.
    for key in ("requests", "rate", "rate_note"):
        assert report_doc["totals"][key] == scan_doc["totals"][key]
    assert report_doc["totals"]["requests"] == 13
    assert any(g["rate"] is not None for g in report_doc["groups"])
    for scan_group, report_group in zip(scan_doc["groups"], report_doc["groups"], strict=True):
        for key in ("first_seen", "last_seen", "example", "share", "requests", "rate"):
            assert report_group[key] == scan_group[key]


def test_hosts_scanned_apart_report_together(logs_dir: Path, tmp_path: Path) -> None:
    hosts = [tmp_path / "host-a", tmp_path / "host-b"]
    for host in hosts:
        host.mkdir()
    shutil.move(str(logs_dir / "vllm.log.1"), hosts[0])
    shutil.move(str(logs_dir / "vllm.log.gz"), hosts[1])
    shutil.move(str(logs_dir / "quiet.log"), hosts[1])
    outputs = [tmp_path / "a.csv", tmp_path / "b.parquet"]
    for host, out in zip(hosts, outputs, strict=True):
        assert run(["scan", str(host), "-j", "1", "--events", str(out)]).exit_code == 1
    combined = json.loads(run(["report", *map(str, outputs), "--format", "json"]).stdout)
    assert _groups(combined) == {("HD111",): 2, ("HD101",): 1}
    assert [f["lines"] for f in combined["files"]] == [2, 1]
    days = run(["report", *map(str, outputs), "--by", "day", "--format", "json"])
    assert _groups(json.loads(days.stdout)) == {("2026-11-27",): 2, ("2026-11-28",): 1}


def test_report_table_csv_and_summary_file(logs_dir: Path, tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    run(["scan", str(logs_dir), "-j", "1", "--events", str(events)])
    table = run(["report", str(events)])
    assert table.exit_code == 1
    assert table.stdout.startswith("harmony-doctor report  1 file ·")
    assert "HD111" in table.stdout and "3 failures ·" in table.stdout
    rows = list(csv.DictReader(run(["report", str(events), "--format", "csv"]).stdout.splitlines()))
    assert {r["code"]: r["count"] for r in rows} == {"HD111": "2", "HD101": "1"}
    summary = tmp_path / "summary.csv"
    assert run(["report", str(events), "--summary-csv", str(summary), "--exit-zero"]).exit_code == 0
    assert next(csv.DictReader(summary.read_text().splitlines()))["count"] == "2"


def test_report_of_a_clean_scan_exits_0(tmp_path: Path) -> None:
    (tmp_path / "quiet.log").write_text(access(1) + "\n")
    for suffix in (".csv", ".jsonl", ".parquet"):
        events = tmp_path / f"none{suffix}"
        assert run(["scan", str(tmp_path / "quiet.log"), "--events", str(events)]).exit_code == 0
        result = run(["report", str(events)])
        assert result.exit_code == 0, result
        assert "No Harmony failures found" in result.stdout


def test_report_neutralises_formulas_in_its_csv(tmp_path: Path) -> None:
    lines = traceback(1, "11-27 10:00:05", 'Unknown role: =HYPERLINK("http://x")')
    (tmp_path / "x.log").write_text("\n".join(lines) + "\n")
    events = tmp_path / "events.csv"
    run(["scan", str(tmp_path / "x.log"), "--events", str(events)])
    result = run(["report", str(events), "--by", "pattern", "--format", "csv"])
    (row,) = list(csv.reader(result.stdout.splitlines()))[1:]
    assert row[0].startswith("unknown_role")
    assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for cell in row)


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing.csv", None, "missing.csv: No such file or directory"),
        ("events.txt", "x", "cannot tell the format"),
        ("events.csv", "a,b\n1,2\n", "not an events file"),
        ("events.parquet", "PAR1 garbage", "cannot read"),
        ("events.jsonl", "{not json\n", "cannot read"),
    ],
)
def test_bad_event_files_are_one_line_exit_2(
    tmp_path: Path, name: str, content: str | None, message: str
) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    result = run(["report", str(path)])
    assert result.exit_code == 2
    assert result.stderr.startswith("harmony-doctor: error: ") and message in result.stderr
    assert result.stderr.count("\n") == 1 and result.stdout == ""


def test_report_needs_event_files() -> None:
    result = run(["report"])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1


@pytest.mark.parametrize("folder", [".", "./", "/"])  # "": no file (test_empty_paths.py)
def test_a_folder_given_to_report_is_one_line_not_a_traceback(folder: str) -> None:
    result = run(["report", folder])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "is a folder" in result.stderr
