"""--format github: workflow-command annotations escaped as GitHub reads them, step summary."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import harmony_doctor as hd
from harmony_doctor.output.github import escape_data, escape_property, workflow_commands
from harmony_doctor.output.operator import OperatorSummary
from harmony_doctor.scan.fold import fold
from harmony_doctor.scan.service import Rates
from harmony_doctor.scan.summary import events_frame, requests_frame
from tests.helpers import run
from tests.output.operator_logs import HOSTILE_NAME, HOSTILE_REMAINDER, operator_logs
from tests.scan.vllm_logs import scan_folder

COMMAND = re.compile(r"^::(error|warning|notice)(?: ([^:]*))?::(.*)$")


def _unescape(value: str) -> str:
    """What GitHub's runner does to a property or message (the toolkit's inverse)."""
    for code, ch in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
        value = value.replace(code, ch)
    return value


def _properties(text: str) -> dict[str, str]:
    return {k: _unescape(v) for k, v in (p.split("=", 1) for p in text.split(","))}


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    return operator_logs(tmp_path / "logs")


def test_escaping_follows_the_actions_toolkit() -> None:
    assert escape_data("50%\r\nnext: a, b") == "50%25%0D%0Anext: a, b"
    assert escape_property("a,b:c%\n") == "a%2Cb%3Ac%25%0A"
    assert escape_data("\x1b[31mred") == "\\x1b[31mred"  # no colour codes in the job log


def test_hostile_file_names_and_messages_stay_one_command(logs: Path) -> None:
    result = run(["scan", str(logs), "-j", "1", "--format", "github"])
    assert result.exit_code == 1, result.stderr
    lines = result.stdout.splitlines()
    parsed = [COMMAND.match(line) for line in lines]
    assert all(parsed), lines
    errors = [m for m in parsed if m and m.group(1) == "error"]
    assert len(errors) == 4
    hostile = [m for m in errors if m.group(2) and HOSTILE_NAME in _properties(m.group(2))["file"]]
    assert len(hostile) == 1
    props = _properties(hostile[0].group(2))
    assert props["file"] == str(logs / HOSTILE_NAME) and props["line"] == "9"
    assert props["title"] == "HD101"
    assert HOSTILE_REMAINDER.replace("%", "%25") in hostile[0].group(3)
    # the closing notice carries the totals
    assert "4 failure(s)" in lines[-1] and "failure rate 26.67%" in lines[-1]


def test_annotations_are_capped_with_a_notice(tmp_path: Path) -> None:
    logs = operator_logs(tmp_path / "logs")
    result = scan_folder(logs)
    folded, requests = fold(events_frame(result.events)), requests_frame(result.requests)
    summary = OperatorSummary(
        "scan", ("code",), hd.summarize_scan(result).totals, [], [],
        folded, events_frame(result.events), requests, Rates(folded, requests),
    )  # fmt: skip
    lines = workflow_commands(summary, limit=1).splitlines()
    assert [line.split(" ", 1)[0].split("::")[1] for line in lines] == ["error", "notice", "notice"]
    assert lines[1] == "::notice::3 more failure(s) not annotated"


def test_step_summary_appended_when_github_sets_it(
    logs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    step = tmp_path / "step_summary.md"
    step.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    result = run(["scan", str(logs), "-j", "1", "--format", "github", "--by", "code,file"])
    assert result.exit_code == 1
    markdown = step.read_text()
    assert markdown.startswith("earlier step\n## harmony-doctor scan\n")
    assert "| 4 | 15 | 26.67% | 0 | 4 | 0 | 0 |" in markdown  # no failure outside a rate
    assert "### Top 4 of 4 group(s)" in markdown
    rows = [line for line in markdown.splitlines() if line.startswith("| HD")]
    assert len(rows) == 4
    hostile = next(row for row in rows if "evil" in row)
    assert "<b>" not in markdown and "100%&lt;b&gt;" in hostile
    assert "\\|&#91;x&#93;" in hostile  # no cell break, no link
    assert hostile.count(" | ") == 5  # code, file, count, share, rate, example: 6 cells


def test_no_step_summary_without_the_variable(
    logs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.chdir(tmp_path)
    result = run(["scan", str(logs), "-j", "1", "--format", "github"])
    assert result.exit_code == 1 and result.stderr == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["logs"]


@pytest.mark.parametrize(("max_rate", "code"), [("0.5", 0), ("0.1", 1)])
def test_github_gate_exits_as_the_table_does(logs: Path, max_rate: str, code: int) -> None:
    for output in ("github", "table"):
        result = run(["scan", str(logs), "-j", "1", "-f", output, "--max-rate", max_rate])
        assert result.exit_code == code, (output, result.stderr)
