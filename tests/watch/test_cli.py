"""The command's manners: one-line errors, a missing path said once and retried, SIGTERM and
SIGINT stop it with its state saved (exit 0), no traceback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import run
from tests.watch.vllm_logs import log


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["watch"], "PATH"),
        (["watch", "x.log"], "--listen"),
        (["watch", "x.log", "--listen", "nowhere"], "HOST:PORT"),
        (["watch", "x.log", "--textfile", "/nonexistent/folder"], "not a folder"),
    ],
)
def test_usage_errors_are_one_line(args: list[str], said: str) -> None:
    result = run(args)
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert said in result.stderr


def _watch(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "harmony_doctor", "watch", *args]
    # this checkout's package: from tmp_path, `-m harmony_doctor` finds the installed one
    checkout = str(Path(__file__).resolve().parents[2])
    return subprocess.Popen(
        command,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": checkout},
    )


def _until(check: object, limit: float = 60.0) -> None:
    """Wait for check() (a safety bound only: the test asserts no time)."""
    ends = time.monotonic() + limit
    while not check():  # type: ignore[operator]
        assert time.monotonic() < ends, "gave up waiting"
        time.sleep(0.05)


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_it_with_the_state_saved(tmp_path: Path, number: int) -> None:
    data, truth = log(0, 50)
    (tmp_path / "vllm.log").write_bytes(data)
    textfile = tmp_path / "metrics"
    textfile.mkdir()
    process = _watch(
        tmp_path,
        "vllm.log",
        "missing.log",
        "--from-start",
        "--textfile",
        str(textfile),
        "--state",
        "state.json",
    )
    prom = textfile / "harmony_doctor_watch.prom"
    _until(lambda: prom.exists() and "failures_total{" in prom.read_text())
    process.send_signal(number)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr
    assert [line for line in stderr.splitlines() if "missing.log" in line] != []
    assert len(stderr.splitlines()) == 1  # said once, though it was looked for again
    saved = json.loads((tmp_path / "state.json").read_text())
    failures = sum(row[-1] for row in saved["counts"]["failures"])
    assert failures == sum(truth.values())
    assert saved["files"]["vllm.log"]["offset"] == len(data)


def test_sighup_looks_again_and_does_not_stop_it(tmp_path: Path) -> None:
    textfile = tmp_path / "metrics"
    textfile.mkdir()
    process = _watch(tmp_path, "missing.log", "--textfile", str(textfile), "--interval", "0.1")
    assert process.stderr is not None
    first = process.stderr.readline()
    assert "missing.log" in first
    process.send_signal(signal.SIGHUP)  # the problem is said again, once
    again = process.stderr.readline()
    assert "missing.log" in again
    assert process.poll() is None
    process.send_signal(signal.SIGTERM)
    rest = process.communicate(timeout=60)[1]
    assert process.returncode == 0
    assert "Traceback" not in first + again + rest


def test_a_pipe_is_counted_and_its_end_ends_the_watch(tmp_path: Path) -> None:
    data, truth = log(0, 50)
    textfile = tmp_path / "metrics"
    textfile.mkdir()
    command = [sys.executable, "-m", "harmony_doctor", "watch", "-", "--textfile", str(textfile)]
    done = subprocess.run(command, input=data, capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    from prometheus_client.parser import text_string_to_metric_families

    text = (textfile / "harmony_doctor_watch.prom").read_text()
    counted = {
        s.labels["code"]: int(s.value)
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == "harmony_doctor_watch_failures_total"
    }
    assert counted == dict(truth)


def test_a_stop_sent_twice_is_one_stop_with_the_state_saved(tmp_path: Path) -> None:
    """`timeout` and systemd signal the process and then its group: one stop arrives twice.
    The second came after Python had run the first handler now and then, and ended the watch
    with exit 130 and no state (issue 36); a repeat so soon is the same request."""
    data, truth = log(0, 50)
    (tmp_path / "vllm.log").write_bytes(data)
    textfile = tmp_path / "metrics"
    textfile.mkdir()
    process = _watch(
        tmp_path, "vllm.log", "--from-start", "--textfile", str(textfile), "--state", "state.json"
    )
    prom = textfile / "harmony_doctor_watch.prom"
    _until(lambda: prom.exists() and "failures_total{" in prom.read_text())
    process.send_signal(signal.SIGINT)
    time.sleep(0.05)  # the first handler has run: the watch sleeps between its looks
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    assert stderr == ""
    saved = json.loads((tmp_path / "state.json").read_text())
    assert sum(row[-1] for row in saved["counts"]["failures"]) == sum(truth.values())


def test_events_written_into_the_followed_log_are_refused(tmp_path: Path) -> None:
    """`--events app.log` on the log it follows would write into what it reads: refused in one
    line, as scan refuses it (it followed nothing, silently, forever)."""
    followed = tmp_path / "app.log"
    followed.write_text("nothing\n")
    (tmp_path / "link.log").symlink_to(followed)
    for events in (followed, tmp_path / "link.log"):
        result = run(["watch", str(followed), "--textfile", str(tmp_path), "--events", str(events)])
        assert result.exit_code == 2
        assert result.stderr.count("\n") == 1 and "followed log" in result.stderr
