"""Small manners of scan and report (issue 24): ratios stated to a fixed precision in JSON and
CSV, counts said in words ("1 request"), `--by`'s help from the one list of group keys, a
column dropped on a narrow terminal taking its footnote with it, and the rate per hour drawn
on a terminal only."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console, RenderableType

import harmony_doctor as hd
from harmony_doctor.choices import GROUP_KEYS
from harmony_doctor.output.rate_view import GAP, LEVELS, hourly_rates_view
from harmony_doctor.output.scan_view import scan_view
from harmony_doctor.output.words import SIGNIFICANT_DIGITS, counted, stated
from harmony_doctor.scan.hourly import hourly_rates
from harmony_doctor.scan.summary import events_frame, requests_frame
from tests.helpers import run
from tests.scan.scoped_logs import vllm_log


def _access(hour: int, minute: int) -> str:
    return (
        f"(APIServer pid=1) INFO 11-27 {hour:02d}:{minute:02d}:00 "
        '"POST /v1/chat/completions HTTP/1.1" 200\n'
    )


# Three failure forms of three codes (HD121, HD101, HD111).
FORMS = (
    "Unknown role: assistantassistant",
    'unexpected tokens remaining in message header: Some("to=functions.get json")',
    "Unexpected token 200002 while expecting start token 200006",
)


def _failure(hour: int, minute: int, form: int = 0) -> str:
    return (
        f"(APIServer pid=1) ERROR 11-27 {hour:02d}:{minute:02d}:01 [serving_chat.py:1] "
        f"openai_harmony.HarmonyError: {FORMS[form]}\n"
    )


@pytest.fixture
def gap_logs(tmp_path: Path) -> Path:
    """A process with 4 requests and 1 failure at 10:00, nothing at 11:00 and 12:00, 2 requests
    and 1 failure at 13:00; and a log without request lines (1 failure, in no rate)."""
    text = "".join(_access(10, m) for m in range(4)) + _failure(10, 5)
    text += "".join(_access(13, m) for m in range(2)) + _failure(13, 5)
    (tmp_path / "vllm.log").write_text(text)
    (tmp_path / "worker.log").write_text(_failure(12, 0))
    return tmp_path


# --- ratios: never `0.15000000000000002` ----------------------------------------------------


def test_stated_rounds_floats_to_the_stated_digits_and_leaves_the_rest() -> None:
    assert stated(0.1 + 0.2 - 0.15) == 0.15 and json.dumps(stated(0.1 + 0.2 - 0.15)) == "0.15"
    assert stated(1 / 7) == 0.142857 and stated(2 / 3) == 0.666667
    assert stated({"a": [1 / 3, 2, None, "x"], "b": (0.5,)}) == {
        "a": [0.333333, 2, None, "x"],
        "b": [0.5],
    }
    assert stated(True) is True and stated(7) == 7
    assert stated(float("nan")) != stated(float("nan"))  # left as it is (JSON writers clear it)


def _floats(value: Any) -> list[float]:
    if isinstance(value, float):
        return [value]
    if isinstance(value, dict):
        return [f for v in value.values() for f in _floats(v)]
    if isinstance(value, list):
        return [f for v in value for f in _floats(v)]
    return []


def _digits(value: float) -> int:
    return len(re.sub(r"^0\.0*|\.|e.*$", "", repr(value)).lstrip("0"))


def test_json_and_csv_state_shares_and_rates_from_counts(tmp_path: Path) -> None:
    # 7 failures of 3 codes over 9 requests: shares 3/7, 2/7 and rates 3/9, 2/9 have long tails.
    text = "".join(_access(10, m) for m in range(9))
    text += "".join(_failure(10, 10 + n, form=min(n, 2) % 3) for n in range(7))
    (tmp_path / "vllm.log").write_text(text)
    doc = json.loads(run(["scan", "-j", "1", "-f", "json", str(tmp_path)]).stdout)
    groups = doc["groups"]
    assert sorted(g["count"] for g in groups) == [1, 1, 5]
    for g in groups:
        assert g["share"] == float(f"{g['count'] / 7:.{SIGNIFICANT_DIGITS}g}")
        assert g["rate"] == float(f"{g['count'] / 9:.{SIGNIFICANT_DIGITS}g}")
    assert all(_digits(f) <= SIGNIFICANT_DIGITS for f in _floats(doc)), _floats(doc)
    shown = run(["scan", "-j", "1", "-f", "csv", str(tmp_path)]).stdout
    summary = tmp_path / "out" / "summary.csv"
    summary.parent.mkdir()
    lines = tmp_path / "out" / "summary.jsonl"
    for path in (summary, lines):
        assert run(["scan", "-j", "1", "--summary-csv", str(path), str(tmp_path)]).exit_code == 1
    for table in (shown, summary.read_text()):
        rows = list(csv.DictReader(io.StringIO(table)))
        assert [float(r["share"]) for r in rows] == [g["share"] for g in groups]
        for r in rows:
            assert len(r["share"]) <= SIGNIFICANT_DIGITS + 2 and len(r["rate"]) <= 8, r
    records = [json.loads(line) for line in lines.read_text().splitlines()]
    assert [r["share"] for r in records] == [g["share"] for g in groups]


# --- counts in words ---------------------------------------------------------------------------


def test_counted_says_one_and_many() -> None:
    assert counted(1, "request") == "1 request"
    assert counted(0, "request") == "0 requests"
    assert counted(1234, "failure") == "1,234 failures"
    assert counted(1, "process") == "1 process" and counted(2, "process") == "2 processes"


def test_scan_and_report_headers_say_one_request_and_one_failure(tmp_path: Path) -> None:
    (tmp_path / "vllm.log").write_text(_access(10, 0) + _failure(10, 1))
    events = tmp_path / "out" / "events.csv"
    events.parent.mkdir()
    scanned = run(["scan", "-j", "1", "--events", str(events), str(tmp_path / "vllm.log")])
    assert scanned.stdout.startswith("harmony-doctor scan  1 file · ")
    assert " · 2 lines · 1 failure · 1 request · rate 100.00%\n" in scanned.stdout
    assert "(s)" not in scanned.stdout and "1 requests" not in scanned.stdout
    report = run(["report", str(events)]).stdout
    assert report.startswith("harmony-doctor report  1 file · ")
    assert " · 1 failure · 1 request · rate 100.00%\n" in report


def test_unrated_line_reads_as_one_sentence_in_the_table_and_the_gate(gap_logs: Path) -> None:
    table = run(["scan", "-j", "1", str(gap_logs)])
    lines = table.stdout.splitlines()
    assert lines[0].endswith("3 failures · 6 requests · rate 33.33% (2 of 6 requests)")
    assert lines[1] == (
        "1 failure unrated (in no rate): their process logged no requests in their hour"
    )
    gate = run(["scan", "-j", "1", "--max-rate", "0.5", str(gap_logs)])
    assert gate.exit_code == 1
    assert gate.stderr.count("\n") == 1 and "--max-rate fails: 1 failure unrated" in gate.stderr


# --- --by: one list of group keys ---------------------------------------------------------------


@pytest.mark.parametrize("command", ["scan", "report"])
def test_by_help_lists_every_group_key(command: str) -> None:
    shown = " ".join(run([command, "--help"]).stdout.replace("│", " ").split())
    listed = re.search(r"Group by ([a-z_, ]+) \(comma-separated", shown)
    assert listed is not None, shown
    assert tuple(listed.group(1).split(", ")) == GROUP_KEYS
    assert "origin" in GROUP_KEYS


def test_an_unknown_group_key_names_every_key() -> None:
    result = run(["scan", "--by", "host", "-"], stdin=_failure(10, 0))
    assert result.exit_code == 2
    assert result.stderr.rstrip().endswith(f"use {', '.join(GROUP_KEYS)}")


# --- narrow terminals: a dropped column takes its footnote --------------------------------------


def _shown(view: RenderableType, width: int, terminal: bool = False) -> str:
    console = Console(
        file=io.StringIO(), width=width, force_terminal=terminal, no_color=True, record=True
    )
    console.print(view)
    return console.export_text()


def _noted_groups() -> list[dict[str, Any]]:
    """Groups whose rate is unknown ("?"), as a summary with too few requests gives them."""
    return [
        {
            "code": "HD121",
            "pattern": "unknown_role <w> " + "x" * 20,
            "count": 3,
            "share": 1.0,
            "requests": 1,
            "rate": None,
            "rate_note": "requests not logged",
            "unrated": 0,
            "first_seen": None,
            "last_seen": None,
            "example": "x.log:2",
        }
    ]


def test_a_rate_column_dropped_on_a_narrow_terminal_takes_its_footnote() -> None:
    totals = {"files": 1, "bytes": 10, "lines": 4, "failures": 3}
    view = scan_view(_noted_groups(), ("code", "pattern"), totals, [], [], top=20)
    wide, narrow = _shown(view, 120), _shown(view, 60)
    assert re.search(r"^code +pattern +count +share +rate", wide, re.MULTILINE)
    assert "? rate unknown: more failures than requests (requests not logged)" in wide
    header = next(line for line in narrow.splitlines() if line.startswith("code"))
    assert header.split() == ["code", "pattern", "count"], narrow
    assert "rate unknown" not in narrow and "?" not in narrow
    assert all(len(line) <= 60 for line in narrow.splitlines())


def test_narrow_columns_go_in_order_and_never_cut_a_value(tmp_path: Path) -> None:
    # Three failures over one request: no rate ("?"), all three unrated.
    failures = (
        _failure(10, n).replace("assistantassistant", f"assistantassistant{n}") for n in range(3)
    )
    (tmp_path / "x.log").write_text(_access(10, 0) + "".join(failures))
    for width, columns in [
        (60, ["code", "pattern", "count", "share", "rate", "no", "rate"]),
        (50, ["code", "pattern", "count", "rate", "no", "rate"]),
        (40, ["code", "pattern", "count"]),
    ]:
        args = ["scan", "-j", "1", "--width", str(width), "--by", "code,pattern", str(tmp_path)]
        lines = run(args).stdout.splitlines()
        header = next(i for i, line in enumerate(lines) if line.startswith("code"))
        assert lines[header].split() == columns, (width, lines)
        assert lines[header + 1].split()[:4] == ["HD121", "unknown_role", "<w>", "3"], lines
        assert all(len(line) <= width for line in lines[header:])


# --- the rate per hour: on a terminal only --------------------------------------------------------


def test_hourly_rates_are_the_scoped_ground_truth(tmp_path: Path) -> None:
    log = vllm_log(2)
    (tmp_path / "vllm.log").write_text(log.text)
    rates = hourly_rates(*_frames(tmp_path / "vllm.log"))
    assert len(rates.scopes) == 1  # one log, one process: its pids are summed per hour
    (scope,) = rates.scopes
    truth: dict[str, list[int]] = {}
    for (_, hour), n in log.requests.items():
        truth.setdefault(hour[:13], [0, 0])[0] += n
    for (_, hour), n in log.failures.items():
        truth.setdefault(hour[:13], [0, 0])[1] += n
    assert {h.hour: [h.requests, h.failures] for h in scope.hours} == truth
    assert scope.failures / scope.requests == pytest.approx(log.rate)
    assert rates.unrated == scope.unrated == 0


def _frames(path: Path) -> tuple[Any, Any]:
    result = hd.scan_paths([path], hd.ScanOptions(jobs=1, origin="host"))
    return events_frame(result.events), requests_frame(result.requests)


def test_sparkline_on_a_terminal_shows_gaps_peak_and_unrated(
    gap_logs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TERM", "xterm")  # rich lays a dumb terminal out at 80 columns
    result = hd.scan_paths([gap_logs], hd.ScanOptions(jobs=1, origin="host"))
    summary = hd.summarize_scan(result, ["code"])
    hourly = hourly_rates_view(summary.rates)
    out = _shown(hourly, 100, terminal=True)
    lines = out.splitlines()
    assert lines[0].startswith("failure rate over time  2026-11-27 10:00 → 2026-11-27 13:00")
    assert "a cell is 1 hour" in lines[0]
    row = lines[1].split()
    assert row[0].endswith("vllm.log")
    # 10:00 at 25% (half the peak), no requests at 11:00 and 12:00, 13:00 at the peak, 50%
    assert row[1] == LEVELS[4] + GAP + GAP + LEVELS[-1]
    assert " ".join(row[2:]) == "33.33% of 6 requests peak 50.00% at 2026-11-27 13:00"
    assert lines[2] == "+1 failure unrated in 1 process without request lines (not drawn)"
    assert _shown(hourly, 100, terminal=False) == ""


def test_scan_draws_the_sparkline_only_when_forced_onto_a_terminal(
    gap_logs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TERM", "xterm")  # rich lays a dumb terminal out at 80 columns
    piped = run(["scan", "-j", "1", str(gap_logs)]).stdout
    wide = run(["scan", "-j", "1", "--width", "100", str(gap_logs)]).stdout
    forced = run(["scan", "-j", "1", "--color", "always", "--width", "100", str(gap_logs)])
    plain = re.sub(r"\x1b\[[0-9;]*m", "", forced.stdout)
    for shown in (piped, wide):
        assert "failure rate over time" not in shown and LEVELS[4] + GAP not in shown
    assert "failure rate over time" in plain
    assert LEVELS[4] + GAP + GAP + LEVELS[-1] in plain
    # The rest of the summary is the piped one, the sparkline added.
    assert plain.splitlines()[0].rstrip() == wide.splitlines()[0]


def test_no_sparkline_without_any_rate(tmp_path: Path) -> None:
    (tmp_path / "worker.log").write_text(_failure(12, 0))
    forced = run(["scan", "-j", "1", "--color", "always", "--width", "100", str(tmp_path)])
    assert "failure rate over time" not in forced.stdout
