"""The lnav format for the events JSONL: shipped as package data, read by Debian's lnav."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
from importlib import resources
from pathlib import Path

import pytest

from tests.helpers import run
from tests.scan.vllm_logs import build_logs

FORMAT = "harmony_doctor_events"


def _format_file() -> Path:
    return Path(str(resources.files("harmony_doctor") / "data" / "lnav" / f"{FORMAT}.json"))


def test_format_is_valid_json_with_the_keys_lnav_requires() -> None:
    spec = json.loads(_format_file().read_text())[FORMAT]
    assert spec["json"] is True and spec["timestamp-field"] == "timestamp"
    assert spec["level-field"] == "severity" and set(spec["level"]) == {"error", "warning"}
    fields = [p["field"] for p in spec["line-format"] if isinstance(p, dict)]
    assert fields == ["__timestamp__", "code", "file", "line", "message"]
    assert set(fields[1:]) <= set(spec["value"])
    from harmony_doctor.scan.summary import events_frame

    assert set(events_frame(()).columns) <= set(spec["value"])  # every column described


def test_lnav_reads_scan_events(tmp_path: Path) -> None:
    lnav = shutil.which("lnav")
    if lnav is None:
        pytest.skip("lnav is not installed (Debian: apt-get install lnav)")
    logs = tmp_path / "logs"
    logs.mkdir()
    build_logs(logs)
    events = tmp_path / "events.jsonl"
    assert run(["scan", str(logs), "-j", "1", "--events", str(events)]).exit_code == 1
    env = {**os.environ, "HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "c")}
    (tmp_path / "home").mkdir()
    install = subprocess.run(
        [lnav, "-i", str(_format_file())], env=env, capture_output=True, text=True, timeout=60
    )
    assert install.returncode == 0, install.stderr
    query = f";SELECT log_level, code, file, line FROM {FORMAT} ORDER BY file, line"
    read = subprocess.run(
        [lnav, "-n", "-c", query, "-c", ":write-csv-to -", str(events)],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert read.returncode == 0, read.stderr
    rows = list(csv.DictReader(io.StringIO(read.stdout)))
    expected = sorted(
        (e["code"], e["file"], str(e["line"]))
        for e in map(json.loads, events.read_text().splitlines())
    )
    assert sorted((r["code"], r["file"], r["line"]) for r in rows) == expected
    assert {r["log_level"] for r in rows} == {"error"}
