"""The watch counts what scan counts: the same log fed in pieces (read boundaries anywhere,
rotations by rename and by copy-truncate) gives scan's totals by code, each failure once."""

from __future__ import annotations

import os
import random
import shutil
import time
from pathlib import Path

import pytest

from harmony_doctor.watch.run import WatchOptions
from tests.watch.conftest import Driven, scan_by_code
from tests.watch.vllm_logs import cri, log


def _pieces(data: bytes, count: int, seed: int) -> list[bytes]:
    cuts = sorted(random.Random(seed).sample(range(1, len(data)), count))
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]


def _rotate_by_rename(live: Path) -> None:
    for n in (2, 1):
        older = live.with_name(f"{live.name}.{n}")
        if older.exists():
            older.rename(live.with_name(f"{live.name}.{n + 1}"))
    live.rename(live.with_name(live.name + ".1"))
    live.write_bytes(b"")


def _rotate_by_copy(live: Path) -> None:
    for n in (2, 1):
        older = live.with_name(f"{live.name}.{n}")
        if older.exists():
            older.rename(live.with_name(f"{live.name}.{n + 1}"))
    shutil.copyfile(live, live.with_name(live.name + ".1"))
    with live.open("r+b") as handle:
        handle.truncate(0)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_pieces_and_rotations_count_as_scan(tmp_path: Path, seed: int) -> None:
    first, truth = log(0, 120)
    second, more = log(120, 120)
    truth += more
    live = tmp_path / "vllm.log"
    live.write_bytes(b"")
    driven = Driven(WatchOptions((str(live),), from_start=True, origin="test"))
    driven.look()
    for index, piece in enumerate(_pieces(first, 25, seed)):
        with live.open("ab") as handle:
            handle.write(piece)
        driven.look(1 + index % 2)  # some pieces are read alone, some with the next one
    _rotate_by_rename(live)  # between two records, as a logger rotates
    for index, piece in enumerate(_pieces(second[: len(second) // 2], 15, seed)):
        with live.open("ab") as handle:
            handle.write(piece)
        driven.look(index % 2)
    rest = second[len(second) // 2 :]
    cut = rest.index(b"\n") + 1
    with live.open("ab") as handle:  # the copy-truncate takes a record written but not read
        handle.write(second[len(second) // 2 :][:cut])
    _rotate_by_copy(live)
    with live.open("ab") as handle:
        handle.write(rest[cut:])
    driven.look(3)
    parts = [live.with_name("vllm.log.2"), live.with_name("vllm.log.1"), live]
    assert driven.by_code() == truth
    assert scan_by_code(parts) == truth
    assert driven.watcher.counts.lines == first.count(b"\n") + second.count(b"\n")


def test_rotated_mid_record_counts_as_scan_of_the_parts(tmp_path: Path) -> None:
    """A rotation that cuts a traceback: read as one stream, as scan reads the parts."""
    data, truth = log(0, 60)
    live = tmp_path / "vllm.log"
    live.write_bytes(b"")
    driven = Driven(WatchOptions((str(live),), from_start=True, origin="test"))
    cut = data.index(b"Traceback", len(data) // 2)
    live.write_bytes(data[:cut])
    driven.look()
    _rotate_by_rename(live)
    live.write_bytes(data[cut:])
    driven.look()
    assert driven.by_code() == scan_by_code([live.with_name("vllm.log.1"), live])
    assert sum(driven.by_code().values()) == sum(truth.values())


def test_kubernetes_cri_file_counts_as_scan(tmp_path: Path) -> None:
    data, truth = log(0, 80)
    folder = tmp_path / "pods" / "ns_vllm-0_uid" / "vllm"
    folder.mkdir(parents=True)
    live = folder / "0.log"
    live.write_bytes(b"")
    driven = Driven(WatchOptions((str(tmp_path / "pods"),), origin="test"))
    driven.look()
    for piece in _pieces(cri(data), 10, 4):
        with live.open("ab") as handle:
            handle.write(piece)
        driven.look()
    assert driven.by_code() == truth == scan_by_code([live])


def test_starts_at_the_end_by_default(tmp_path: Path) -> None:
    old, _ = log(0, 40)
    new, truth = log(40, 40)
    live = tmp_path / "vllm.log"
    live.write_bytes(old)
    driven = Driven(WatchOptions((str(live),), origin="test"))
    driven.look()
    with live.open("ab") as handle:
        handle.write(new)
    driven.look()
    assert driven.by_code() == truth


def test_a_new_file_matching_a_glob_is_read_from_its_start(tmp_path: Path) -> None:
    data, truth = log(0, 40)
    driven = Driven(WatchOptions((str(tmp_path / "*.log"),), origin="test"))
    driven.look()
    (tmp_path / "b.log").write_bytes(data)
    (tmp_path / "b.log.1").write_bytes(data)  # a rotated part: not followed
    driven.look(4)
    assert driven.by_code() == truth


def test_a_missing_path_is_said_once_and_followed_once_there(tmp_path: Path) -> None:
    data, truth = log(0, 40)
    live = tmp_path / "later.log"
    driven = Driven(WatchOptions((str(live),), origin="test"))
    driven.look(5)
    assert len(driven.notes) == 1
    assert "later.log" in driven.notes[0]
    live.write_bytes(data)
    driven.look(3)
    assert driven.by_code() == truth


def test_files_of_a_folder_that_go_are_forgotten(tmp_path: Path) -> None:
    """A deleted pod's log is read to its end, then forgotten, and nothing is said of it."""
    data, truth = log(0, 40)
    pod = tmp_path / "pods" / "ns_vllm-1_uid" / "vllm"
    pod.mkdir(parents=True)
    driven = Driven(WatchOptions((str(tmp_path / "pods"),), origin="test"))
    driven.look()
    (pod / "0.log").write_bytes(data)
    driven.look(3)
    shutil.rmtree(tmp_path / "pods" / "ns_vllm-1_uid")
    driven.look(12)
    assert driven.watcher.followed == {}
    assert driven.notes == []
    assert driven.by_code() == truth


def test_a_backlog_at_rest_is_read_at_the_first_look(tmp_path: Path) -> None:
    # A log not written for a while has paused already: its backlog is read at once, not a
    # look later (`--from-start` began a quarter second late); one being written still waits.
    data, truth = log(0, 300, every=5)
    rested, written = tmp_path / "rested.log", tmp_path / "written.log"
    rested.write_bytes(data)
    os.utime(rested, (1e9, 1e9))
    written.write_bytes(data)
    os.utime(written, (time.time() + 3600,) * 2)  # written now, however slow this machine is
    for path, read in ((rested, True), (written, False)):
        driven = Driven(WatchOptions((str(path),), from_start=True, origin="test"))
        driven.watcher.step(driven.now)  # one look, no time after it
        assert (driven.watcher.counts.lines == data.count(b"\n")) is read
        driven.look()
        assert driven.by_code() == truth
