"""Failures in no rate are counted and shown apart in every output alike: table, JSON, CSV,
the summary CSV, HTML, GitHub and Prometheus."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from harmony_doctor.cli.app import app
from tests.scan.scoped_logs import vllm_log
from tests.scan.vllm_logs import traceback

LINE = "3 failures unrated (in no rate): their process logged no requests in their hour"


def _run(args: list[str], **env: str) -> Any:
    return CliRunner().invoke(app, args, env={"NO_COLOR": "1", "COLUMNS": "200", **env})


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    root = tmp_path / "logs"
    root.mkdir()
    (root / "vllm.log").write_text(vllm_log(5).text)
    lonely = traceback(9, "11-27 10:30:00", "Unknown role: assistantassistant") * 3
    (root / "worker.log").write_text("\n".join(lonely) + "\n")
    return root


def test_every_output_shows_the_unrated_failures(logs: Path, tmp_path: Path) -> None:
    scan = ["scan", "-j", "1", str(logs), "--origin", "h"]
    table = _run(scan).stdout
    assert LINE in table.splitlines()[1]
    totals = json.loads(_run([*scan, "-f", "json"]).stdout)["totals"]
    assert totals["unrated"] == 3 and 0 < totals["rate"] < 1
    rows = list(csv.DictReader(io.StringIO(_run([*scan, "-f", "csv"]).stdout)))
    assert sum(int(r["unrated"]) for r in rows) == 3
    html, prom, summary = tmp_path / "r.html", tmp_path / "m.prom", tmp_path / "s.csv"
    _run([*scan, "--html", str(html), "--prometheus", str(prom), "--summary-csv", str(summary)])
    assert LINE in html.read_text()
    assert 'harmony_doctor_unrated_failures{origin="h"} 3.0' in prom.read_text()
    assert sum(int(r["unrated"]) for r in csv.DictReader(io.StringIO(summary.read_text()))) == 3
    step = tmp_path / "step.md"
    github = _run([*scan, "-f", "github"], GITHUB_STEP_SUMMARY=str(step)).stdout
    assert LINE in github.splitlines()[-1] and LINE in step.read_text()


def test_a_summary_whose_every_failure_is_unrated_gives_no_rate_of_zero(tmp_path: Path) -> None:
    # the failures' process logged no request; another's requests alone make no rate of them
    (tmp_path / "worker.log").write_text(
        "openai_harmony.HarmonyError: Unexpected token 200002 while expecting start token 200006\n"
    )
    (tmp_path / "api.log").write_text(
        'INFO:     127.0.0.1:1 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
    )
    result = _run(["scan", str(tmp_path)])
    head = result.stdout.splitlines()[0]
    assert result.exit_code == 1, result.output
    assert "1 failure · 1 request · no failure in a rate" in head
    assert "0.00%" not in head
    assert "1 failure unrated (in no rate)" in result.stdout
