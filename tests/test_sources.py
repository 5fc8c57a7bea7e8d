"""sources.py: discovery, in-process decompression, bounded lines, skip reasons."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
from pathlib import Path

import pytest
import zstandard

from harmony_doctor.sources import MAX_LINE, Source, discover, open_binary, read_lines

TEXT = b"first line\nsecond line\r\n\xff\xfe broken utf-8\nno newline at end"


def test_concatenated_gzip_members(tmp_path: Path) -> None:
    path = tmp_path / "rotated.gz"
    path.write_bytes(gzip.compress(b"one\n") + gzip.compress(b"two\n"))
    assert _lines(path) == ["one", "two"]


def test_corrupt_data_is_an_os_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00" + b"garbage" * 100)
    stream = open_binary(Source(str(path), path))
    try:
        with pytest.raises(OSError, match="corrupt gzip"):
            list(read_lines(stream))
    finally:
        stream.close()


def _lines(path: Path) -> list[str]:
    stream = open_binary(Source(str(path), path))
    try:
        return [line.text for line in read_lines(stream)]
    finally:
        stream.close()


@pytest.mark.parametrize(
    ("name", "pack"),
    [
        ("plain.log", lambda b: b),
        ("rotated.log.1.gz", gzip.compress),
        ("a.log.bz2", bz2.compress),
        ("a.log.xz", lzma.compress),
        ("a.log.zst", lambda b: zstandard.ZstdCompressor().compress(b)),
        ("no-suffix-but-gzip", gzip.compress),
        ("wrong-suffix.gz.txt", lambda b: zstandard.ZstdCompressor().compress(b)),
    ],
)
def test_every_compression_reads_the_same(tmp_path: Path, name: str, pack: object) -> None:
    path = tmp_path / name
    path.write_bytes(pack(TEXT))  # type: ignore[operator]
    assert _lines(path) == [
        "first line",
        "second line",
        "\ufffd\ufffd broken utf-8",
        "no newline at end",
    ]


def test_concatenated_zstd_frames(tmp_path: Path) -> None:
    c = zstandard.ZstdCompressor()
    path = tmp_path / "multi.zst"
    path.write_bytes(c.compress(b"one\n") + c.compress(b"two\n"))
    assert _lines(path) == ["one", "two"]


def test_long_line_is_cut_not_held(tmp_path: Path) -> None:
    path = tmp_path / "long.log"
    with path.open("wb") as handle:
        handle.write(b"before\n")
        handle.write(b"x" * (MAX_LINE * 3 + 5))
        handle.write(b"\nafter\n")
        handle.write(b"y" * (MAX_LINE + 1))  # over-long last line without newline
    stream = open_binary(Source(str(path), path))
    lines = list(read_lines(stream))
    assert [(line.number, line.cut) for line in lines] == [
        (1, False),
        (2, True),
        (3, False),
        (4, True),
    ]
    assert len(lines[1].text) == MAX_LINE and lines[2].text == "after"


def test_discover_walks_globs_and_excludes(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.log").write_text("x")
    (tmp_path / "a" / "y.txt").write_text("y")
    (tmp_path / "a" / "skip").mkdir()
    (tmp_path / "a" / "skip" / "z.log").write_text("z")
    sources, skipped = discover([str(tmp_path)], globs=["*.log"], excludes=["skip"])
    assert [Path(s.label).name for s in sources] == ["x.log"]
    assert skipped == []
    everything, _ = discover([str(tmp_path)])
    assert sorted(Path(s.label).name for s in everything) == ["x.log", "y.txt", "z.log"]


def test_symlink_loops_and_special_files_are_skipped_with_reasons(tmp_path: Path) -> None:
    (tmp_path / "real.log").write_text("ok\n")
    (tmp_path / "loop").symlink_to(tmp_path)
    os.mkfifo(tmp_path / "pipe")
    sources, skipped = discover([str(tmp_path)])
    assert [Path(s.label).name for s in sources] == ["real.log"]
    reasons = {Path(s.label).name: s.reason for s in skipped}
    assert "not followed" in reasons["loop"]
    assert "special file" in reasons["pipe"]


def test_missing_path_is_reported(tmp_path: Path) -> None:
    sources, skipped = discover([str(tmp_path / "nope.log")])
    assert sources == [] and "No such file" in skipped[0].reason


def test_truncated_gzip_raises_after_the_good_lines(tmp_path: Path) -> None:
    path = tmp_path / "cut.log.gz"
    data = gzip.compress(b"".join(b"line %d\n" % i for i in range(5000)))  # one 40 kB member
    path.write_bytes(data[: len(data) // 2])
    stream = open_binary(Source(str(path), path))
    seen = []
    try:
        with pytest.raises(EOFError):
            seen.extend(line.number for line in read_lines(stream))
    finally:
        stream.close()
    # Every line decompressed before the damage is delivered, in order.
    assert len(seen) > 1000 and seen == list(range(1, len(seen) + 1))
