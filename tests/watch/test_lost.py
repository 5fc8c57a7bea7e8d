"""Nothing the watch is given is dropped without a word: input it cannot read whole (a line cut
at MAX_LINE, data that is not text) is said once per read with scan's own reason, and
counted; a glob that matches nothing and a FIFO in a watched folder are said once; the files it
writes are checked at start-up, never followed back, and their errors name them."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from harmony_doctor.errors import OutputError
from harmony_doctor.inputs.files import MAX_LINE
from harmony_doctor.scan.run import scan_stream
from harmony_doctor.watch.backlog import Layout
from harmony_doctor.watch.metrics import (
    TEXTFILE,
    exposition,
    metrics_registry,
    write_metrics_textfile,
)
from harmony_doctor.watch.run import Watcher, WatchOptions
from tests.watch.conftest import Driven
from tests.watch.vllm_logs import log

CHECKOUT = Path(__file__).resolve().parents[2]
FAILURE = (
    b"(APIServer pid=7) ERROR 11-01 10:00:00 [serving.py:1184] openai_harmony.HarmonyError: "
    b"Unexpected token 200002 while expecting start token 200006"
)


def _long_line() -> bytes:
    """A failure line longer than MAX_LINE, the failure past the cut (scan says it is cut)."""
    return b"x" * (MAX_LINE + 10) + b" " + FAILURE + b"\n"


def _binary(size: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(size)


def _watching(tmp_path: Path, **options: object) -> tuple[Path, Driven]:
    live = tmp_path / "app.log"
    live.write_bytes(b"")
    driven = Driven(WatchOptions((str(live),), origin="test", **options))  # type: ignore[arg-type]
    driven.look()
    return live, driven


def _append(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)


def test_a_line_cut_short_is_said_with_scans_reason_and_counted(tmp_path: Path) -> None:
    live, driven = _watching(tmp_path)
    data = _long_line() + b"ok\n" + _long_line()
    _append(live, data)
    driven.look()
    (tmp_path / "same.log").write_bytes(data)
    with (tmp_path / "same.log").open("rb") as stream:
        scanned = scan_stream(stream, "app.log")
    assert scanned.report.status == "partial"
    # one line for the read (not one per cut line), in scan's words, with scan's count
    assert driven.notes == [f"{live}: {scanned.report.reason}"]
    assert "2 lines longer than 4 MiB" in driven.notes[0]
    counts = driven.watcher.counts
    assert (counts.read_errors, counts.cut_lines) == (1, 2)
    _append(live, _long_line())
    driven.look()
    assert len(driven.notes) == 2  # a later cut line: another event, said again
    assert (counts.read_errors, counts.cut_lines) == (2, 3)


def test_data_that_is_not_text_is_said_once_skipped_whole_and_counted(tmp_path: Path) -> None:
    live = tmp_path / "bin.log"
    live.write_bytes(_binary(200_000, 1))  # longer than what scan looks at to tell
    driven = Driven(WatchOptions((str(live),), from_start=True, origin="test"))
    driven.look()
    assert len(driven.notes) == 1
    assert "binary data, not text" in driven.notes[0]
    assert "200,000 bytes skipped" in driven.notes[0]
    assert driven.watcher.counts.read_errors == 1
    _append(live, _binary(20_000, 2))
    driven.look()
    assert len(driven.notes) == 1  # still not text: counted, not said again
    assert driven.watcher.counts.read_errors == 2
    follower = driven.watcher.followed[str(live)]
    place = follower.place()
    assert place is not None
    assert place[1] == live.stat().st_size  # skipped whole: not read again
    data, truth = log(0, 30)
    _append(live, b"\n" + data)  # text again: read and counted
    driven.look()
    assert driven.by_code() == truth
    _append(live, _binary(20_000, 3))
    driven.look()
    assert len(driven.notes) == 2  # not text once more, after text: said again


def test_a_large_backlog_with_a_cut_line_is_read_as_one_stream_and_said(tmp_path: Path) -> None:
    data, truth = log(0, 200)
    live = tmp_path / "vllm.log"
    live.write_bytes(data + _long_line() + data)
    small = Layout(split=1, margin=16 * 1024, per_job=4, least=1)
    options = WatchOptions((str(live),), from_start=True, origin="test", jobs=2, layout=small)
    driven = Driven(options)
    driven.look()
    assert len(driven.notes) == 1 and "1 line longer than 4 MiB" in driven.notes[0]
    assert driven.watcher.counts.cut_lines == 1
    assert driven.by_code() == truth + truth


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_the_cut_lines_counter_is_in_the_textfile(tmp_path: Path) -> None:
    live, driven = _watching(tmp_path)
    _append(live, _long_line())
    driven.look()
    folder = tmp_path / "metrics"
    folder.mkdir()
    write_metrics_textfile(folder, metrics_registry(driven.watcher.snapshot))
    text = (folder / TEXTFILE).read_text()
    values = {
        s.name: s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if not s.labels
    }
    assert values["harmony_doctor_watch_cut_lines_total"] == 1.0
    assert values["harmony_doctor_watch_read_errors_total"] == 1.0
    assert "# HELP harmony_doctor_watch_cut_lines_total Log lines longer than 4 MiB" in text
    checked = subprocess.run(
        ["promtool", "check", "metrics"],
        input=exposition(metrics_registry(driven.watcher.snapshot)),
        capture_output=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_cut_lines_are_kept_by_the_state(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    live, driven = _watching(tmp_path, state=state)
    _append(live, _long_line())
    driven.look()
    driven.watcher.save()
    driven.watcher.close()
    again = Driven(WatchOptions((str(live),), origin="test", state=state))
    assert (again.watcher.counts.read_errors, again.watcher.counts.cut_lines) == (1, 1)


def test_a_glob_that_matches_nothing_is_said_once(tmp_path: Path) -> None:
    glob = str(tmp_path / "nomatch-*.log")
    driven = Driven(WatchOptions((glob,), origin="test", rescan_every=0.5))
    driven.look(5)
    assert driven.notes == [f"{glob}: no log matches (looked for again every 0.5 s)"]
    driven.watcher.reopen()  # SIGHUP: what is still wrong is said again
    driven.look()
    assert len(driven.notes) == 2
    data, truth = log(0, 20)
    (tmp_path / "nomatch-1.log").write_bytes(data)
    driven.look(3)
    assert driven.by_code() == truth


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_in_a_watched_folder_is_said_once(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.log")
    data, truth = log(0, 20)
    (tmp_path / "app.log").write_bytes(data)
    driven = Driven(WatchOptions((str(tmp_path),), from_start=True, origin="test"))
    driven.look(8)
    assert driven.notes == [
        f"{tmp_path / 'pipe.log'}: special file (FIFO, device or socket), not followed"
    ]
    assert driven.by_code() == truth


def test_its_own_outputs_in_a_watched_folder_are_not_followed(tmp_path: Path) -> None:
    data, truth = log(0, 20)
    (tmp_path / "app.log").write_bytes(data)
    options = WatchOptions(
        (str(tmp_path),),
        from_start=True,
        origin="test",
        state=tmp_path / "state.json",
        events=tmp_path / "events.jsonl",
        textfile=tmp_path,
        rescan_every=0.5,
    )
    driven = Driven(options)
    for _ in range(4):  # the textfile is written as it runs, as the CLI writes it
        driven.look()
        write_metrics_textfile(tmp_path, metrics_registry(driven.watcher.snapshot))
    driven.watcher.save()
    driven.look(4)
    assert list(driven.watcher.followed) == [str(tmp_path / "app.log")]
    assert driven.by_code() == truth
    assert driven.notes == []


def test_its_events_file_that_cannot_be_written_is_named(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    state = tmp_path / "state.json"
    live, driven = _watching(tmp_path, events=events, state=state)
    log_file = driven.watcher.events
    assert log_file is not None
    full = os.open("/dev/full", os.O_WRONLY)
    os.dup2(full, log_file.fd)  # the disk fills up under the watch
    os.close(full)
    data, _ = log(0, 30)
    _append(live, data)
    with pytest.raises(OutputError, match=f"cannot write the events file {events}: No space"):
        driven.look()
    with pytest.raises(OutputError, match="the events file"):
        driven.watcher.save()  # no state saved past the failures the file does not hold
    assert not state.exists() or b"HD1" not in state.read_bytes()


@pytest.mark.parametrize(
    ("option", "said"),
    [
        (
            {"state": Path("/nonexistent/dir/st.json")},
            "--state /nonexistent/dir/st.json: no folder",
        ),
        ({"events": Path("ev.csv")}, "--events ev.csv: watch appends JSON lines"),
        ({"events": Path("/dev/full")}, "--events /dev/full: watch appends JSON lines"),
        ({"events": Path("/nonexistent/ev.jsonl")}, "--events /nonexistent/ev.jsonl: no folder"),
        ({"state": Path("/proc/st.json")}, "--state /proc/st.json: cannot write in /proc"),
    ],
)
def test_outputs_it_cannot_write_are_refused_at_start(
    tmp_path: Path, option: dict[str, Path], said: str
) -> None:
    with pytest.raises(OutputError) as refused:
        Watcher(WatchOptions((str(tmp_path / "app.log"),), **option), print)  # type: ignore[arg-type]
    assert said in str(refused.value)
    assert not (Path.cwd() / "ev.csv").exists()


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--state", "/nonexistent/dir/st.json"], "--state /nonexistent/dir/st.json: no folder"),
        (["--events", "ev.csv"], "give a name ending in .jsonl"),
        (["--state", "app.log"], "--state app.log is the followed log app.log"),
        (["--state", "s.jsonl", "--events", "s.jsonl"], "are the same file"),
    ],
)
def test_the_command_refuses_them_in_one_line(tmp_path: Path, extra: list[str], said: str) -> None:
    """At once: it ran for seconds, or for ever, before (a process: a bound, not a measure)."""
    (tmp_path / "app.log").write_text("nothing\n")
    command = [sys.executable, "-m", "harmony_doctor", "watch", "app.log", "--textfile", "."]
    done = subprocess.run(
        [*command, *extra],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(CHECKOUT)},  # this checkout's package, from tmp_path
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert said in done.stderr
    assert not (tmp_path / "ev.csv").exists()
