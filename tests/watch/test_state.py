"""Restarts: a watch resumes where its state says, with no failure counted twice and none lost,
even when the log rotated while it was down or the run before was killed between saves."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harmony_doctor.errors import InputError
from harmony_doctor.watch.run import WatchOptions
from harmony_doctor.watch.state import load_state
from tests.watch.conftest import Driven
from tests.watch.vllm_logs import log


def _options(tmp_path: Path, live: Path) -> WatchOptions:
    return WatchOptions(
        (str(live),),
        from_start=True,
        origin="test",
        state=tmp_path / "state.json",
        events=tmp_path / "events.jsonl",
    )


def _events(tmp_path: Path) -> list[dict[str, object]]:
    text = (tmp_path / "events.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


@pytest.mark.parametrize("rotation", ["none", "rename", "copy", "rename twice"])
def test_restart_resumes_without_recounting(tmp_path: Path, rotation: str) -> None:
    first, truth = log(0, 90)
    second, more = log(90, 90)
    third, most = log(180, 60)
    truth += more + most
    live = tmp_path / "vllm.log"
    live.write_bytes(first)
    driven = Driven(_options(tmp_path, live))
    driven.look()
    driven.watcher.save()
    with live.open("ab") as handle:  # read by a run killed before it saved again
        handle.write(second)
    driven.look()
    assert sum(driven.by_code().values()) > 0
    driven.watcher.close()  # no save: as after SIGKILL
    if rotation in ("rename", "rename twice"):
        live.rename(tmp_path / "vllm.log.1")
        live.write_bytes(b"")
    if rotation == "rename twice":
        (tmp_path / "vllm.log.1").rename(tmp_path / "vllm.log.2")
        middle, between = log(500, 40)  # a whole part written and rotated while it was down
        live.write_bytes(middle)
        truth += between
        live.rename(tmp_path / "vllm.log.1")
        live.write_bytes(b"")
    if rotation == "copy":
        shutil.copyfile(live, tmp_path / "vllm.log.1")
        live.write_bytes(b"")
    with live.open("ab") as handle:
        handle.write(third)
    again = Driven(_options(tmp_path, live))
    again.look()
    again.watcher.save()
    again.watcher.close()
    assert again.by_code() == truth
    assert sum(1 for _ in _events(tmp_path)) == sum(truth.values())
    assert load_state(tmp_path / "state.json") is not None


def test_events_have_scans_columns(tmp_path: Path) -> None:
    from harmony_doctor.scan.summary import EVENT_COLUMNS

    data, truth = log(0, 30)
    live = tmp_path / "vllm.log"
    live.write_bytes(data)
    driven = Driven(_options(tmp_path, live))
    driven.look()
    driven.watcher.save()
    rows = _events(tmp_path)
    assert [list(row)[: len(EVENT_COLUMNS)] for row in rows] == [list(EVENT_COLUMNS)] * len(rows)
    assert sorted(str(row["code"]) for row in rows) == sorted(truth.elements())


def test_a_file_that_is_not_a_state_is_refused(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    state.write_text('{"version": 99}')
    with pytest.raises(InputError, match="not a watch state file"):
        load_state(state)


def test_stopped_in_the_middle_of_a_backlog_resumes_at_a_line_end(tmp_path: Path) -> None:
    data, truth = log(0, 6000)
    live = tmp_path / "vllm.log"
    live.write_bytes(data)
    driven = Driven(_options(tmp_path, live))
    asked = iter(range(10**9))
    driven.watcher.stopped = lambda: next(asked) > 3  # SIGTERM during the first read
    driven.look()
    driven.watcher.save()
    driven.watcher.close()
    place = load_state(tmp_path / "state.json")
    assert place is not None
    offset = place.places[str(live)][1]
    assert 0 < offset < len(data)
    assert data[offset - 1 : offset] == b"\n"
    again = Driven(_options(tmp_path, live))
    again.look()
    assert again.by_code() == truth
    assert again.watcher.counts.lines == data.count(b"\n")
