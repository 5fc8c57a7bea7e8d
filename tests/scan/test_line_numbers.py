"""One line per failure everywhere: scan's table, its JSON, the events file and GitHub
annotations name the line that carries the error, and explain names the same one."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from harmony_doctor.cli.app import app
from tests.scan.scoped_logs import journald, vllm_log

SAMPLES = Path(__file__).parents[2] / "samples"
LOGS = [
    "vllm-traceback.log",
    "vllm-requests.log",
    "sglang-exception-group.log",
    "other-engines.log",
    "error-bodies.txt",
    "lmdeploy.log",
]
ANNOTATION = re.compile(r"^::(?:error|warning) file=[^,]*,line=(\d+),title=(HD\d+)::")


def _run(args: list[str]) -> Any:
    return CliRunner().invoke(app, args, env={"NO_COLOR": "1", "COLUMNS": "200"})


def _places(path: Path, tmp_path: Path) -> dict[str, list[tuple[str, int]]]:
    events = tmp_path / "events.csv"
    _run(["scan", "-j", "1", str(path), "--events", str(events), "--by", "code,file,hour"])
    with open(events, newline="", encoding="utf-8") as stream:
        written = sorted((row["code"], int(row["line"])) for row in csv.DictReader(stream))
    github = _run(["scan", "-j", "1", str(path), "--format", "github"]).stdout.splitlines()
    annotated = sorted(
        (m.group(2), int(m.group(1))) for m in map(ANNOTATION.match, github) if m is not None
    )
    return {"events": written, "github": annotated}


@pytest.mark.parametrize("name", LOGS)
def test_scan_events_github_and_explain_name_one_line(name: str, tmp_path: Path) -> None:
    places = _places(SAMPLES / name, tmp_path)
    explained = json.loads(_run(["explain", str(SAMPLES / name), "--format", "json"]).stdout)
    found: list[tuple[str, int]] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("code"), str) and isinstance(node.get("line"), int):
                found.append((node["code"], node["line"]))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(explained)
    assert places["events"] == places["github"] == sorted(found) and found


def test_a_wrapped_log_names_the_wrapped_files_lines(tmp_path: Path) -> None:
    log = vllm_log(8)
    (tmp_path / "vllm.json").write_text(journald(log))
    places = _places(tmp_path / "vllm.json", tmp_path)
    # journald writes one record per line: the wrapped file's lines are the log's lines
    carrying = sorted(
        number
        for number, line in enumerate(log.lines, start=1)
        if "openai_harmony.HarmonyError" in line
    )
    assert [line for _, line in places["events"]] != []
    assert sorted(line for _, line in places["events"]) == carrying
    assert places["events"] == places["github"]
