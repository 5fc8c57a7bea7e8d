"""Nothing lost, nothing hidden: no output replaces an input or another output."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import SAMPLES, run

LOG = (SAMPLES / "vllm-requests.log").read_bytes()  # a log with failures and request counts


def _refused(args: list[str], *names: str) -> None:
    """The run exits 2 with one line on stderr naming each of `names`, and prints nothing."""
    result = run(args)
    assert result.exit_code == 2, result
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("harmony-doctor: error: ")
    for name in names:
        assert name in result.stderr


# --- 1. an output path that names an input -------------------------------------------------


@pytest.mark.parametrize(
    ("option", "name"),
    [
        ("--events", "app.jsonl"),
        ("--summary-csv", "app.csv"),
        ("--prometheus", "app.prom"),
        ("--html", "app.html"),
    ],
)
def test_scan_refuses_to_write_over_its_input(tmp_path: Path, option: str, name: str) -> None:
    log = tmp_path / name
    log.write_bytes(LOG)
    _refused(["scan", str(log), option, str(log)], f"{option} {log}", f"the input {log}")
    assert log.read_bytes() == LOG


@pytest.mark.parametrize("spelling", ["dot", "symlink", "hardlink"])
def test_the_same_file_under_another_name_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("app.jsonl").write_bytes(LOG)
    if spelling == "dot":
        output = "./app.jsonl"
    elif spelling == "symlink":
        Path("link.jsonl").symlink_to("app.jsonl")
        output = "link.jsonl"
    else:
        os.link("app.jsonl", "hard.jsonl")
        output = "hard.jsonl"
    _refused(["scan", "app.jsonl", "--events", output], "the input app.jsonl")
    _refused(["scan", output, "--events", "app.jsonl"], "--events app.jsonl")
    assert Path("app.jsonl").read_bytes() == LOG


def test_a_file_the_folder_scan_would_read_is_refused(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "app.log").write_bytes(LOG)
    (logs / "old.csv").write_bytes(LOG)  # a log, whatever its name says
    _refused(["scan", str(logs), "--events", str(logs / "old.csv")], "the input")
    assert (logs / "old.csv").read_bytes() == LOG
    # Left out by --glob, it is not read: writing it loses no input.
    kept = run(["scan", str(logs), "-j", "1", "-g", "*.log", "--events", str(logs / "old.csv")])
    assert kept.exit_code == 1, kept.stderr
    assert (logs / "old.csv").read_bytes().startswith(b"file,line,")


def test_scan_writes_its_events_into_the_folder_it_scans_again_and_again(tmp_path: Path) -> None:
    """An earlier export in the scanned folder is not read (scan leaves its exports out), so the
    next run may replace it."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "app.log").write_bytes(LOG)
    events = logs / "events.csv"
    for _ in range(2):
        result = run(["scan", str(logs), "-j", "1", "--events", str(events), "-f", "json"])
        assert result.exit_code == 1, result.stderr
    assert "ignored" in result.stderr and events.read_bytes().startswith(b"file,line,")


def test_standard_input_from_a_file_is_an_input(tmp_path: Path) -> None:
    log = tmp_path / "app.jsonl"
    log.write_bytes(LOG)
    with log.open("rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "harmony_doctor", "scan", "-", "--events", str(log)],
            stdin=stdin,
            capture_output=True,
            check=False,
        )
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.decode().count("\n") == 1 and "is the input <stdin>" in done.stderr.decode()
    assert log.read_bytes() == LOG


def test_nothing_is_read_before_the_refusal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harmony_doctor.scan import service

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("an input was read before the outputs were checked")

    monkeypatch.setattr(service, "scan_inputs", never)
    monkeypatch.setattr(service, "summarize_event_files", never)
    log = tmp_path / "app.jsonl"
    log.write_bytes(LOG)
    _refused(["scan", str(log), "--events", str(log)], "the input")
    _refused(["report", str(log), "--summary-csv", str(log)], "the input")


def test_report_refuses_to_write_over_its_events_or_their_counts(tmp_path: Path) -> None:
    log, events = tmp_path / "app.log", tmp_path / "ev.csv"
    log.write_bytes(LOG)
    assert run(["scan", str(log), "-j", "1", "--events", str(events)]).exit_code == 1
    tallies = tmp_path / "ev.requests.csv"
    before = events.read_bytes(), tallies.read_bytes()
    _refused(["report", str(events), "--summary-csv", str(events)], "the input")
    _refused(["report", str(events), "--summary-csv", str(tallies)], "request counts beside")
    assert (events.read_bytes(), tallies.read_bytes()) == before


def test_github_step_summary_over_an_input_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(LOG)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(log))
    _refused(["scan", str(log), "-f", "github"], "$GITHUB_STEP_SUMMARY", "the input")
    assert log.read_bytes() == LOG


@pytest.mark.parametrize("option", ["--events", "--summary-csv", "--html", "--prometheus"])
def test_a_file_option_given_twice_is_refused_not_dropped(tmp_path: Path, option: str) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(LOG)
    suffix = {"--html": ".html", "--prometheus": ".prom"}.get(option, ".csv")
    first, second = tmp_path / f"a{suffix}", tmp_path / f"b{suffix}"
    _refused(["scan", str(log), option, str(first), option, str(second)], str(first), str(second))
    assert not first.exists() and not second.exists()


def test_two_outputs_that_are_one_file_are_refused(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(LOG)
    events = tmp_path / "out.csv"
    # The request counts go beside the events, in out.requests.csv.
    args = ["scan", str(log), "--events", str(events)]
    _refused([*args, "--summary-csv", str(tmp_path / "out.requests.csv")], "the same file")
    _refused([*args, "--summary-csv", f"{tmp_path}/./out.csv"], "the same file")
    assert not events.exists()
