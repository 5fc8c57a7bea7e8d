"""--prometheus: node-exporter textfile equal to the JSON summary, written atomically."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest
from prometheus_client.parser import text_string_to_metric_families

from harmony_doctor.errors import OutputError
from harmony_doctor.output.escape import one_line
from harmony_doctor.output.operator import OperatorSummary
from harmony_doctor.output.operator_files import write_textfile
from harmony_doctor.output.prometheus import prometheus_registry, prometheus_text
from harmony_doctor.output.words import stated
from harmony_doctor.scan.fold import fold
from harmony_doctor.scan.service import Rates
from harmony_doctor.scan.summary import events_frame, requests_frame
from tests.helpers import run
from tests.output.operator_logs import operator_logs


def _samples(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    found: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, []).append((sample.labels, sample.value))
    return found


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    return operator_logs(tmp_path / "logs")


def test_textfile_equals_the_json_summary(logs: Path, tmp_path: Path) -> None:
    prom = tmp_path / "out" / "harmony.prom"
    prom.parent.mkdir()
    result = run(["scan", str(logs), "-j", "1", "--format", "json", "--prometheus", str(prom)])
    assert result.exit_code == 1, result.stderr
    doc = json.loads(result.stdout)
    samples = _samples(prom.read_text())
    failures = samples["harmony_doctor_failures"]
    assert sum(v for _, v in failures) == doc["totals"]["failures"] == 4
    by_code: dict[str, float] = {}
    for labels, value in failures:
        assert set(labels) == {"code", "kind", "server", "origin"}
        by_code[labels["code"]] = by_code.get(labels["code"], 0) + value
    assert by_code == {g["code"]: g["count"] for g in doc["groups"]}
    requests = samples["harmony_doctor_requests"]
    assert sum(v for _, v in requests) == doc["totals"]["requests"] == 15
    assert {labels["server"] for labels, _ in requests} == {"vllm"}
    [(_, rate)] = samples["harmony_doctor_failure_rate"]  # one host: one origin
    assert stated(rate) == doc["totals"]["rate"]  # JSON states it to SIGNIFICANT_DIGITS
    [(_, stamp)] = samples["harmony_doctor_scan_timestamp_seconds"]
    assert stamp > 1.6e9
    # complete: nothing left beside it (prometheus_client writes a temporary, then renames)
    assert os.listdir(prom.parent) == ["harmony.prom"]


def test_report_textfile_counts_event_files(logs: Path, tmp_path: Path) -> None:
    events, prom = tmp_path / "events.jsonl", tmp_path / "report.prom"
    assert run(["scan", str(logs), "-j", "1", "--events", str(events)]).exit_code == 1
    result = run(["report", str(events), "--prometheus", str(prom), "--format", "json"])
    doc = json.loads(result.stdout)
    failures = _samples(prom.read_text())["harmony_doctor_failures"]
    assert sum(v for _, v in failures) == doc["totals"]["failures"] == 4


def test_textfile_name_must_end_in_prom(logs: Path, tmp_path: Path) -> None:
    target = tmp_path / "harmony.txt"
    result = run(["scan", str(logs), "-j", "1", "--prometheus", str(target)])
    assert result.exit_code == 2 and "must end in .prom" in result.stderr
    assert result.stdout == "" and not target.exists()  # refused before reading


def test_unwritable_textfile_is_absent_not_partial(tmp_path: Path) -> None:
    empty = events_frame(())
    folded, requests = fold(empty), requests_frame(())
    summary = OperatorSummary(
        "scan", ("code",), {}, [], [], folded, empty, requests, Rates(folded, requests)
    )
    target = tmp_path / "gone" / "x.prom"
    with pytest.raises(OutputError, match="cannot write"):
        write_textfile(target, prometheus_registry(summary, 0.0))
    assert not target.parent.exists()


def test_label_values_are_escaped_by_the_library() -> None:
    """The one escaper makes a value one plain line, then the library escapes it: the file
    parses (an ESC shown as `\\x1b` after the library's escaping made Prometheus refuse it)."""
    hostile = 'host"a\\b\nc,d=e}\x1b[31m\u202e'
    events = events_frame(()).vstack(
        pl.DataFrame(
            [
                {
                    **{c: None for c in events_frame(()).columns},
                    "file": "x.log",
                    "line": 1,
                    "code": "HD111",
                    "kind": "unexpected_token",
                    "server": hostile,
                }
            ],
            schema=events_frame(()).schema,
        )
    )
    folded, requests = fold(events), requests_frame(())
    summary = OperatorSummary(
        "scan", ("code",), {}, [], [], folded, events, requests, Rates(folded, requests)
    )
    text = prometheus_text(summary, 1.0)
    [(labels, value)] = _samples(text)["harmony_doctor_failures"]
    assert labels["server"] == one_line(hostile) and value == 1
    assert "\x1b" not in text and "\u202e" not in text
    if shutil.which("promtool"):
        checked = subprocess.run(["promtool", "check", "metrics"], input=text, text=True)
        assert checked.returncode == 0


def test_the_requests_series_counts_as_the_totals_count(tmp_path: Path) -> None:
    # The sample logs one request three ways (a Received line, completions, an access line):
    # the totals count each process one way; the series must not add the ways up (it said 5).
    from tests.helpers import SAMPLES

    prom = tmp_path / "harmony.prom"
    log = str(SAMPLES / "vllm-requests.log")
    result = run(["scan", log, "-j", "1", "--format", "json", "--prometheus", str(prom)])
    totals = json.loads(result.stdout)["totals"]
    requests = _samples(prom.read_text())["harmony_doctor_requests"]
    assert sum(v for _, v in requests) == totals["requests"] == 3
