"""Issue 12 bullet 4: exports fail safely (checked first, one line on failure, umask, no .part)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harmony_doctor.errors import OutputError
from harmony_doctor.output import tables as export
from harmony_doctor.output.targets import Target, check_targets
from tests.helpers import run


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("events.txt", "cannot tell the format"),
        ("missing-folder/events.csv", "no folder"),
        ("a-directory.csv", "is a directory"),
    ],
)
def test_exports_bad_output_path_refused_before_reading_input(
    tmp_path: Path, name: str, message: str
) -> None:
    (tmp_path / "a-directory.csv").mkdir()
    # stdin is a terminal and no path is given: reading input would be its own error.
    for option in ("--events", "--summary-csv"):
        result = run(["scan", option, str(tmp_path / name), str(tmp_path / "nope.log")])
        assert result.exit_code == 2
        assert result.stderr.count("\n") == 1 and message in result.stderr
        assert result.stdout == ""


def test_exports_read_only_folder_refused(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        if os.access(folder, os.W_OK):
            pytest.skip("running as a user who may write anywhere")
        with pytest.raises(OutputError, match="not writable"):
            check_targets([Target("--events", folder / "events.csv", "table")])
    finally:
        folder.chmod(0o700)


def test_exports_special_file_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "events.csv"
    os.mkfifo(fifo)
    with pytest.raises(OutputError, match="not a regular file"):
        check_targets([Target("--events", fifo, "table")])


def test_exports_write_error_is_one_line_after_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "a.log"
    log.write_text("nothing to see\n")

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(export, "write_csv", full)
    result = run(["scan", "--events", str(tmp_path / "events.csv"), str(log)])
    assert result.exit_code == 2
    assert "No Harmony failures" in result.stdout or "0 failure" in result.stdout
    assert result.stderr.splitlines() == [  # one unit: no tallies without their events
        f"harmony-doctor: error: cannot write {tmp_path / 'events.csv'}: No space left on device"
    ]
    assert not (tmp_path / "events.requests.csv").exists()
    assert not list(tmp_path.glob("*.part")) and not list(tmp_path.glob(".*.part"))


def test_exports_follow_the_umask(tmp_path: Path) -> None:
    import polars as pl

    frame = pl.DataFrame({"a": [1]})
    old = os.umask(0o027)
    try:
        for suffix in (".csv", ".jsonl", ".parquet"):
            path = tmp_path / f"t{suffix}"
            export.write_table(frame, path)
            assert path.stat().st_mode & 0o777 == 0o640, suffix
    finally:
        os.umask(old)


_SLOW_WRITE = """
import signal, sys, time, polars as pl
signal.signal(signal.SIGHUP, signal.SIG_DFL)  # as a shell starts it (nohup's ignore not inherited)
from pathlib import Path
from harmony_doctor.output import tables as export
real = export._write_text_batches
def endless(frames, columns, kind, stream):
    real(frames, columns, kind, stream)  # the real rows, flushed: then a write that never ends
    stream.flush()
    while True:
        time.sleep(1)
export._write_text_batches = endless
frame = pl.DataFrame({"a": ["=x" * 20] * 1000})
print("ready", flush=True)
export.write_table(frame, Path(sys.argv[1]))
"""


def _writing(tmp_path: Path) -> tuple[subprocess.Popen[bytes], list[Path]]:
    """A process writing `big.csv` in `tmp_path`, once its temporary file has grown, and that
    temporary file. Its write never ends (the rows, then a wait): a signal lands mid-write
    however loaded the machine is (a write of 3 million rows finished first on a busy CI)."""
    child = subprocess.Popen(
        [sys.executable, "-c", _SLOW_WRITE, str(tmp_path / "big.csv")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None
    child.stdout.readline()
    for _ in range(2000):
        parts = list(tmp_path.glob(".big.csv.*.part"))
        if parts and parts[0].stat().st_size > 0:
            return child, parts
        time.sleep(0.005)
    child.kill()
    child.communicate()
    pytest.fail("the export never started")


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_exports_signal_mid_write_leaves_no_part(tmp_path: Path, number: int) -> None:
    child, _ = _writing(tmp_path)
    child.send_signal(number)
    try:
        _, err = child.communicate(timeout=60)
    finally:
        child.kill()  # never left running into another test (a signal it did not answer)
        child.communicate()
    assert child.returncode != 0, err
    assert list(tmp_path.iterdir()) == []


def test_a_part_sigkill_left_is_removed_by_the_next_write_there(tmp_path: Path) -> None:
    """The rule: a temporary file of ours whose writer is gone (its lock free) is removed by
    the next write into its folder; a running writer's, an older name and a file of the
    user's that looks alike are left."""
    child, parts = _writing(tmp_path)
    child.kill()  # SIGKILL: nothing can answer it
    child.communicate(timeout=60)
    assert list(tmp_path.glob(".big.csv.*.part")) == parts  # left behind
    theirs = [tmp_path / ".notes.txt.abcdefgh.part", tmp_path / "draft.part"]
    for path in theirs:
        path.write_text("mine\n")
    export.write_text(tmp_path / "other.html", "<p>x</p>\n")
    assert sorted(tmp_path.iterdir()) == sorted([*theirs, tmp_path / "other.html"])


_HOLD_PART = """
import sys, time
from pathlib import Path
from harmony_doctor.output import tables as export
with export._atomic(Path(sys.argv[1])) as stream:
    stream.write("half")
    stream.flush()
    print("writing", flush=True)
    sys.stdin.read()
"""


def test_a_running_writers_part_is_kept(tmp_path: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", _HOLD_PART, str(tmp_path / "slow.csv")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == b"writing\n"
        (running,) = tmp_path.glob(".slow.csv.*.part")
        assert export.sweep_parts(tmp_path) == [] and running.read_text() == "half"
    finally:
        child.communicate(b"")
    assert child.returncode == 0
    assert (tmp_path / "slow.csv").read_text() == "half"
