"""Events and their request tallies as one unit: report refuses tallies that are not its
events' (a write cut short between the two, or the counts of another run), and counts an events
file named twice (or as `./x`, or through a link) once."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from harmony_doctor.cli.app import app
from harmony_doctor.scan.event_files import EVENTS_DIGEST, file_digest, read_table
from tests.scan.scoped_logs import vllm_log

SAMPLES = Path(__file__).parents[2] / "samples"


def _run(args: list[str]) -> Any:
    return CliRunner().invoke(app, args, env={"NO_COLOR": "1", "COLUMNS": "200"})


def _totals(args: list[str]) -> dict[str, Any]:
    result = _run([*args, "--format", "json"])
    return dict(json.loads(result.stdout)["totals"])


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_tallies_name_their_events(tmp_path: Path, suffix: str) -> None:
    events = tmp_path / f"ev{suffix}"
    _run(["scan", "-j", "1", str(SAMPLES / "vllm-traceback.log"), "--events", str(events)])
    tallies = read_table(tmp_path / f"ev.requests{suffix}")
    assert set(tallies[EVENTS_DIGEST].to_list()) == {file_digest(events)}


def test_a_run_without_requests_still_names_its_events(tmp_path: Path) -> None:
    events = tmp_path / "ev.csv"
    _run(["scan", "-j", "1", str(SAMPLES / "lmdeploy.log"), "--events", str(events)])
    tallies = read_table(tmp_path / "ev.requests.csv")
    assert tallies.height == 1 and tallies["count"].to_list() == ["0"]
    assert tallies[EVENTS_DIGEST].to_list() == [file_digest(events)]


def test_report_refuses_tallies_of_other_events(tmp_path: Path) -> None:
    """A write cut short between the tallies and the events: new tallies beside old events."""
    log = tmp_path / "vllm.log"
    log.write_text(vllm_log(3).text)
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    new.mkdir()
    _run(["scan", "-j", "1", str(SAMPLES / "vllm-traceback.log"), "--events", str(old / "ev.csv")])
    _run(["scan", "-j", "1", str(log), "--events", str(new / "ev.csv")])
    shutil.copy(new / "ev.requests.csv", old / "ev.requests.csv")
    result = _run(["report", str(old / "ev.csv")])
    assert result.exit_code == 2
    assert "does not belong to" in result.stderr and "its requests are not counted" in result.stderr
    assert "3 failures" in result.stdout and "rate" not in result.stdout.splitlines()[0]
    assert (
        _totals(["report", str(new / "ev.csv")])["rate"]
        == _totals(["scan", "-j", "1", str(log)])["rate"]
    )


def test_report_counts_an_events_file_named_twice_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = tmp_path / "ev.csv"
    _run(["scan", "-j", "1", str(SAMPLES), "--events", str(events), "--exit-zero"])
    (tmp_path / "link.csv").symlink_to(events)
    once = _totals(["report", str(events)])
    monkeypatch.chdir(tmp_path)
    for names in (["ev.csv", "ev.csv"], ["ev.csv", "./ev.csv"], ["ev.csv", "link.csv"]):
        assert _totals(["report", *names]) == once, names
    assert once == {**_totals(["scan", "-j", "1", str(SAMPLES)]), "files": 1} | {
        k: once[k] for k in ("bytes", "lines")
    }


def test_report_counts_a_failure_written_twice_once(tmp_path: Path) -> None:
    """A copy of an events file, or the same scan written as CSV and as JSONL, holds the same
    failures and request tallies: each counts once, and the repeat is said on stderr."""
    log = tmp_path / "v.log"
    log.write_text(vllm_log(7).text)
    csv, jsonl = tmp_path / "ev.csv", tmp_path / "ev.jsonl"
    for target in (csv, jsonl):
        _run(["scan", "-j", "1", str(log), "--events", str(target), "--exit-zero"])
    shutil.copy(csv, tmp_path / "copy.csv")
    shutil.copy(tmp_path / "ev.requests.csv", tmp_path / "copy.requests.csv")
    once = _totals(["report", str(csv)])
    assert once["failures"] and once["requests"]
    result = _run(["report", str(csv), str(tmp_path / "copy.csv"), str(jsonl), "-f", "json"])
    totals = json.loads(result.stdout)["totals"]
    assert {k: totals[k] for k in ("failures", "requests", "rate")} == {
        k: once[k] for k in ("failures", "requests", "rate")
    }
    failures = once["failures"]
    for name in ("copy.csv", "ev.jsonl"):
        assert f"{failures} events of {tmp_path / name} read already" in result.stderr


def test_report_keeps_what_two_files_do_not_share(tmp_path: Path) -> None:
    """Two exports that overlap: the shared failures count once, the others all count."""
    first, second = tmp_path / "a.log", tmp_path / "b.log"
    first.write_text(vllm_log(8).text)
    shutil.copy(SAMPLES / "error-bodies.txt", second)
    _run(["scan", "-j", "1", str(first), "--events", str(tmp_path / "one.jsonl"), "--exit-zero"])
    both = tmp_path / "both.jsonl"
    _run(["scan", "-j", "1", str(first), str(second), "--events", str(both), "--exit-zero"])
    alone = _totals(["report", str(both)])
    merged = _totals(["report", str(tmp_path / "one.jsonl"), str(both)])
    assert merged["failures"] == alone["failures"] and merged["requests"] == alone["requests"]
