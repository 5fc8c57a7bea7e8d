"""`scan`'s spill: events go to a temporary directory as they become final, the outputs are
those of a scan that held them, and the directory is gone after the run, an interrupted one's
too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from harmony_doctor.scan import spill as spilling
from harmony_doctor.scan.spill import BATCH
from tests.helpers import run


def _log(count: int) -> bytes:
    return b"".join(
        b"(APIServer pid=4121) INFO 11-28 10:%02d:%02d [logger.py:71] Received request r%d: x\n"
        b"(APIServer pid=4121) ERROR 11-28 10:%02d:%02d [serving_chat.py:1145] "
        b"openai_harmony.HarmonyError: unexpected tokens remaining in message header: [%d, %d]\n"
        % (i // 60 % 60, i % 60, i, i // 60 % 60, i % 60, i, i * 7)
        for i in range(count)
    )


@pytest.fixture
def temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temporary directory the run uses (watched: nothing of it may stay)."""
    place = tmp_path / "tmp"
    place.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(place))
    return place


def test_a_scan_spills_its_events_and_removes_the_spill(
    tmp_path: Path, temporary: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(_log(BATCH + 100))
    written: list[str] = []
    write = spilling.write_batch

    def watched(events: Any, directory: Path) -> str:
        written.append(write(events, directory))
        assert directory.parent == temporary
        return written[-1]

    monkeypatch.setattr(spilling, "write_batch", watched)
    events = tmp_path / "events.jsonl"
    result = run(["scan", str(log), "-j", "1", "--format", "json", "--events", str(events)])
    assert result.exit_code == 1, result.stderr
    assert json.loads(result.stdout)["totals"]["failures"] == BATCH + 100
    assert len(written) == 2  # a full batch as it was final, then the rest
    lines = [json.loads(line) for line in events.read_text().splitlines()]
    assert [row["line"] for row in lines] == list(range(2, 2 * (BATCH + 100) + 1, 2))
    assert list(temporary.iterdir()) == []


def test_an_interrupted_scan_removes_its_spill(
    tmp_path: Path, temporary: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(_log(BATCH + 100))
    close = spilling.EventSink.close

    def interrupted(sink: Any, found: Any) -> Any:
        close(sink, found)  # the batches are written: then Ctrl-C
        assert list(temporary.glob("harmony-doctor-spill-*/*.arrow"))
        raise KeyboardInterrupt

    monkeypatch.setattr(spilling.EventSink, "close", interrupted)
    result = run(["scan", str(log), "-j", "1", "--format", "json"])
    assert result.exit_code == 130 and result.stderr == "harmony-doctor: interrupted\n"
    assert list(temporary.iterdir()) == []


def test_a_clean_scan_makes_no_spill(tmp_path: Path, temporary: Path) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(b"INFO all is well\n" * 100)
    assert run(["scan", str(log), "-j", "1"]).exit_code == 0
    assert list(temporary.iterdir()) == []


def test_a_spill_that_cannot_be_written_ends_the_scan_in_one_line(
    tmp_path: Path, temporary: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    import polars as pl

    def full(frame: pl.DataFrame, path: Path) -> None:
        Path(path).write_bytes(b"part")  # cut short by a full disk
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(pl.DataFrame, "write_ipc", full)
    log = tmp_path / "app.log"
    log.write_bytes(_log(BATCH + 1))
    result = run(["scan", str(log), "-j", "1", "--format", "json"])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith("harmony-doctor: error: cannot write the failures found to ")
    assert "(No space left on device)" in result.stderr and result.stderr.count("\n") == 1
    assert list(temporary.iterdir()) == []


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_spills_killed_scans_left_are_removed_by_the_next(tmp_path: Path, temporary: Path) -> None:
    """SIGKILL (or the out-of-memory killer) leaves a scan's spill behind; the next scan removes
    it, and only it: not a running scan's, another host's, another user's or anything else."""
    killed = spilling.spill_path(temporary)
    stale = killed.with_name(killed.name.replace(f"-{os.getpid()}-", f"-{_dead_pid()}-"))
    running = spilling.spill_path(temporary)  # this process's: alive
    host = stale.name.split("-")[3]
    elsewhere = stale.with_name(stale.name.replace(f"-{host}-", "-00000000-"))
    unlike = temporary / "harmony-doctor-spill-notes"
    for directory in (stale, running, elsewhere, unlike):
        directory.mkdir()
        (directory / "x.arrow").write_bytes(b"batch")
    linked = stale.with_name(stale.name[:-4] + "beef")
    linked.symlink_to(unlike)  # a link is never followed nor removed
    kept = [running, elsewhere, unlike, linked]
    if os.getuid() == 0:  # another user's, stale too: root can make one
        foreign = stale.with_name(stale.name[:-4] + "f00d")
        foreign.mkdir()
        os.chown(foreign, 65534, 65534)
        kept.append(foreign)
    log = tmp_path / "app.log"
    log.write_bytes(_log(3))
    assert run(["scan", str(log)]).exit_code == 1
    assert sorted(p.name for p in temporary.iterdir()) == sorted(p.name for p in kept)
    assert spilling.sweep(temporary) == []  # nothing else to remove


_HOLD = """
import fcntl, os, sys
lock = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(lock, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()  # until the test is done
"""


def test_a_running_scans_spill_is_kept_whatever_its_pid_says(
    tmp_path: Path, temporary: Path
) -> None:
    """The rule: a spill is owned by its lock, not by a pid. A scan in another pid namespace
    (a container sharing the temporary folder and the hostname) has a pid that names no
    process here, or another one; its spill is kept while its lock is held, and removed once
    it is not."""
    theirs = spilling.spill_path(temporary)
    theirs = theirs.with_name(theirs.name.replace(f"-{os.getpid()}-", f"-{_dead_pid()}-"))
    theirs.mkdir()
    (theirs / ".lock").write_bytes(b"")  # the name is the contract between scans
    (theirs / "x.arrow").write_bytes(b"batch")
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(theirs / ".lock")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        log = tmp_path / "app.log"
        log.write_bytes(_log(3))
        assert run(["scan", str(log)]).exit_code == 1
        assert (theirs / "x.arrow").read_bytes() == b"batch"
    finally:
        holder.communicate(b"")
    assert run(["scan", str(tmp_path / "app.log")]).exit_code == 1
    assert list(temporary.iterdir()) == []  # its lock free: a killed scan's, removed


def test_a_scan_holds_its_spills_lock_while_it_runs(tmp_path: Path, temporary: Path) -> None:
    import fcntl

    with spilling.held_spill(temporary) as spill:
        lock = os.open(spill / spilling.LOCK, os.O_RDONLY)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(lock)
        assert spilling.sweep(temporary) == [] and spill.is_dir()
    assert list(temporary.iterdir()) == []


def test_a_spill_removed_under_the_scan_is_one_line_and_exit_2(
    tmp_path: Path, temporary: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process empties the temporary folder while the scan runs: the failures it had
    written out are gone, and the scan says so in one line, without a traceback."""
    import shutil

    log = tmp_path / "app.log"
    log.write_bytes(_log(BATCH + 100))
    close = spilling.EventSink.close

    def swept(sink: Any, found: Any) -> Any:
        parts = close(sink, found)
        for spill in temporary.glob("harmony-doctor-spill-*"):
            shutil.rmtree(spill)
        return parts

    monkeypatch.setattr(spilling.EventSink, "close", swept)
    result = run(["scan", str(log), "-j", "1", "--format", "json"])
    assert (result.exit_code, result.stdout) == (2, ""), result.stderr
    assert result.stderr.startswith("harmony-doctor: error: the scan's temporary folder ")
    assert "was removed while the scan ran" in result.stderr
    assert result.stderr.count("\n") == 1
