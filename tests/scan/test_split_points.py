"""Every count survives a cut: a log split at any line boundary into rotated parts gives the same
failures per code, the same requests and the same rate as the whole log, because scan reads a
log's rotated parts as one stream (a traceback, a re-raise, a streamed completion or a two-line
error cut by the rotation counts once, in the part its error line is in). A property over
every split point, for every sample (logs, pastes and token documents alike) and a generated
log; three-way splits at random points; the library's `scan_rotated` and a pool of workers
agree with one scan.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import harmony_doctor as hd
from harmony_doctor.scan.records import ScanOptions
from tests.scan.scoped_logs import split_streams, vllm_log

SAMPLES = Path(__file__).parents[2] / "samples"
OPTIONS = ScanOptions(jobs=1, origin="host")
EVERY_SAMPLE = sorted(p.name for p in SAMPLES.iterdir() if p.is_file())
GENERATED = vllm_log(11, requests=25).text.encode()

Counts = tuple[Counter[str], object, object, int]


def _scan(folder: Path, options: ScanOptions = OPTIONS) -> hd.ScanResult:
    return hd.scan([folder], options)


def _counts(result: hd.ScanResult) -> Counts:
    totals = hd.summarize_scan(result).totals
    return (
        Counter(e.code for e in result.events),
        totals["requests"],
        totals["rate"],
        totals["lines"],
    )


def _write(folder: Path, parts: list[tuple[str, bytes]]) -> Path:
    folder.mkdir()
    for name, data in parts:
        (folder / name).write_bytes(data)
    return folder


def _rotations(name: str, pieces: list[bytes]) -> list[tuple[str, bytes]]:
    """`name.N` ... `name.1`, `name`: the oldest piece has the highest number."""
    count = len(pieces)
    return [(f"{name}.{count - 1 - i}" if i < count - 1 else name, p) for i, p in enumerate(pieces)]


def _every_split(tmp_path: Path, name: str, data: bytes) -> None:
    lines = data.splitlines(keepends=True)
    whole = _counts(_scan(_write(tmp_path / "whole", [(name, data)])))
    for k in range(1, len(lines)):
        pieces = [b"".join(lines[:k]), b"".join(lines[k:])]
        folder = _write(tmp_path / f"split{k}", _rotations(name, pieces))
        assert _counts(_scan(folder)) == whole, f"split after line {k}"


@pytest.mark.parametrize("name", EVERY_SAMPLE)
def test_every_split_point_of_every_sample_keeps_every_count(tmp_path: Path, name: str) -> None:
    _every_split(tmp_path, name, (SAMPLES / name).read_bytes())


def test_every_split_point_of_a_generated_log_keeps_every_count(tmp_path: Path) -> None:
    _every_split(tmp_path, "vllm.log", GENERATED)


@settings(max_examples=15, deadline=None)
@given(cuts=st.lists(st.integers(min_value=1, max_value=10_000), min_size=2, max_size=2))
def test_three_rotated_parts_at_random_points_keep_every_count(
    tmp_path_factory: pytest.TempPathFactory, cuts: list[int]
) -> None:
    lines = GENERATED.splitlines(keepends=True)
    a, b = sorted(c % len(lines) for c in cuts)
    pieces = [b"".join(lines[:a]), b"".join(lines[a:b]), b"".join(lines[b:])]
    base = tmp_path_factory.mktemp("three")
    whole = _counts(_scan(_write(base / "whole", [("vllm.log", GENERATED)])))
    parts = _rotations("vllm.log", pieces)
    parts[0] = (parts[0][0] + ".gz", gzip.compress(parts[0][1]))  # compressed parts read alike
    assert _counts(_scan(_write(base / "parts", parts))) == whole


def test_each_failure_is_placed_in_the_part_its_line_is_in(tmp_path: Path) -> None:
    data = (SAMPLES / "vllm-traceback.log").read_bytes()
    lines = data.splitlines(keepends=True)
    whole = _scan(_write(tmp_path / "whole", [("vllm.log", data)]))
    k = len(lines) // 2
    folder = _write(
        tmp_path / "parts", _rotations("vllm.log", [b"".join(lines[:k]), b"".join(lines[k:])])
    )
    split = _scan(folder)
    expected = sorted(
        ("vllm.log.1", e.line) if e.line <= k else ("vllm.log", e.line - k) for e in whole.events
    )
    assert sorted((Path(e.file).name, e.line) for e in split.events) == expected
    reports = {Path(f.path).name: f for f in split.files}
    assert (reports["vllm.log.1"].lines, reports["vllm.log"].lines) == (k, len(lines) - k)
    assert reports["vllm.log.1"].bytes + reports["vllm.log"].bytes == len(data)


def test_a_part_without_a_final_newline_ends_its_last_line(tmp_path: Path) -> None:
    data = GENERATED
    lines = data.splitlines(keepends=True)
    k = len(lines) // 3
    older = b"".join(lines[:k]).rstrip(b"\n")  # the rotation cut the newline off
    folder = _write(tmp_path / "parts", _rotations("vllm.log", [older, b"".join(lines[k:])]))
    whole = _counts(_scan(_write(tmp_path / "whole", [("vllm.log", data)])))
    assert _counts(_scan(folder)) == whole


def test_stdout_and_stderr_splits_are_read_apart_and_rated_together(tmp_path: Path) -> None:
    log = vllm_log(5, requests=30)
    stdout, stderr = split_streams(log)
    folder = _write(
        tmp_path / "split",
        [("vllm.stdout.log", stdout.encode()), ("vllm.stderr.log", stderr.encode())],
    )
    assert [len(s) for s in hd.list_inputs([folder]).streams] == [1, 1]
    whole = _counts(_scan(_write(tmp_path / "whole", [("vllm.log", log.text.encode())])))
    assert _counts(_scan(folder))[:3] == whole[:3]


def test_a_damaged_part_ends_only_itself(tmp_path: Path) -> None:
    lines = GENERATED.splitlines(keepends=True)
    k = len(lines) // 2
    older = gzip.compress(b"".join(lines[:k]))
    damaged = older[: len(older) // 2]  # cut in the middle of its deflate stream
    folder = _write(
        tmp_path / "parts", [("vllm.log.1.gz", damaged), ("vllm.log", b"".join(lines[k:]))]
    )
    result = _scan(folder)
    reports = {Path(f.path).name: f for f in result.files}
    assert reports["vllm.log.1.gz"].status == "partial"
    assert reports["vllm.log"].status == "ok" and reports["vllm.log"].lines == len(lines) - k


def test_scan_rotated_and_a_pool_give_what_one_scan_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harmony_doctor.scan import run as scanning

    lines = GENERATED.splitlines(keepends=True)
    pieces = [b"".join(lines[:7]), b"".join(lines[7:40]), b"".join(lines[40:])]
    other = vllm_log(3, requests=20).text.encode()
    folder = _write(tmp_path / "parts", [*_rotations("vllm.log", pieces), ("other.log", other)])
    one = _scan(folder)
    streams = hd.list_inputs([folder]).streams
    assert sorted([Path(label).name for label in s] for s in streams) == [
        ["other.log"],
        ["vllm.log.2", "vllm.log.1", "vllm.log"],
    ]
    scans = [
        scan for s in reversed(streams) for scan in hd.scan_rotated(list(reversed(s)), OPTIONS)
    ]
    library = hd.merge(scans)
    assert _counts(library) == _counts(one)
    assert sorted((e.file, e.line, e.code) for e in library.events) == sorted(
        (e.file, e.line, e.code) for e in one.events
    )
    monkeypatch.setattr(scanning, "POOL_BYTES", 0)  # a pool of workers even for small files
    pools: list[int] = []
    real = scanning._in_pool

    def counted(units: list[tuple[int, scanning.Unit]], *rest: Any) -> Any:
        pools.append(len(units))
        return real(units, *rest)

    monkeypatch.setattr(scanning, "_in_pool", counted)
    pooled = _scan(folder, ScanOptions(jobs=2, origin="host"))
    assert pools == [2]
    assert _counts(pooled) == _counts(one)
    assert [f.path for f in pooled.files] == [f.path for f in one.files]


def test_scan_rotated_refuses_files_of_two_logs(tmp_path: Path) -> None:
    folder = _write(tmp_path / "two", [("a.log", GENERATED), ("b.log", GENERATED)])
    with pytest.raises(hd.InputError, match="not the parts of one rotated log"):
        hd.scan_rotated([folder / "a.log", folder / "b.log"], OPTIONS)


def test_a_token_document_longer_than_one_read_cut_by_a_rotation_counts_whole(
    tmp_path: Path,
) -> None:
    """A pretty-printed completion of some 1,400 ids (over 8 KiB: more than one read of a
    decoded stream hands out) cut in two by a rotation is one document, as it is whole."""
    ids = [int(n) for n in (SAMPLES / "duplicate-recipient.ids").read_text().split()]
    data = (json.dumps([*ids[:3], *[316] * 1400, *ids[3:]], indent=1) + "\n").encode()
    assert len(data) > 8 * 1024
    lines = data.splitlines(keepends=True)
    whole = _counts(_scan(_write(tmp_path / "whole", [("c.json", data)])))
    assert sum(whole[0].values()) == 1 and whole[3] == len(lines)
    for k in (1, 40, len(lines) // 2, len(lines) - 2):
        pieces = [b"".join(lines[:k]), b"".join(lines[k:])]
        folder = _write(tmp_path / f"split{k}", _rotations("c.json", pieces))
        assert _counts(_scan(folder)) == whole, f"split after line {k}"
