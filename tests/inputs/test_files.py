"""sources.py: discovery, in-process decompression, bounded lines, skip reasons."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import os
import random
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
import zstandard

from harmony_doctor.inputs.files import (
    CHUNK,
    MAX_LINE,
    STEP_OUTPUT,
    Source,
    discover,
    open_binary,
    read_lines,
)
from tests.helpers import run

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
        "\xff\xfe broken utf-8",  # not UTF-8, clearly 8-bit text: read as latin-1
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


def test_symlink_loops_add_nothing_and_special_files_are_skipped_with_reasons(
    tmp_path: Path,
) -> None:
    (tmp_path / "real.log").write_text("ok\n")
    (tmp_path / "loop").symlink_to(tmp_path)
    os.mkfifo(tmp_path / "pipe")
    sources, skipped = discover([str(tmp_path)])
    assert [Path(s.label).name for s in sources] == ["real.log"]  # once, not through loop/
    reasons = {Path(s.label).name: s.reason for s in skipped}
    assert set(reasons) == {"pipe"} and "special file" in reasons["pipe"]


def test_a_symlinked_folder_is_followed_once(tmp_path: Path) -> None:
    """A log folder with `current -> 2026-11-27` (and a link back up): every file read once,
    nothing skipped, so the run does not fail for a link."""
    day = tmp_path / "logs" / "2026-11-27"
    day.mkdir(parents=True)
    (day / "a.log").write_text("x\n")
    (tmp_path / "logs" / "current").symlink_to("2026-11-27")
    (day / "up").symlink_to("..")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "b.log").write_text("y\n")
    (tmp_path / "logs" / "more").symlink_to(elsewhere)
    sources, skipped = discover([str(tmp_path / "logs")])
    assert skipped == []
    assert sorted(Path(s.label).name for s in sources) == ["a.log", "b.log"]


def test_missing_path_is_reported(tmp_path: Path) -> None:
    sources, skipped = discover([str(tmp_path / "nope.log")])
    assert sources == [] and "No such file" in skipped[0].reason


def test_truncated_gzip_raises_after_the_good_lines(tmp_path: Path) -> None:
    path = tmp_path / "cut.log.gz"
    data = gzip.compress(b"".join(b"line %d\n" % i for i in range(5000)))  # one 40 kB member
    path.write_bytes(data[: len(data) // 2])
    stream = open_binary(Source(str(path), path))
    seen: list[int] = []
    try:
        with pytest.raises(EOFError):
            seen.extend(line.number for line in read_lines(stream))
    finally:
        stream.close()
    # Every line decompressed before the damage is delivered, in order.
    assert len(seen) > 1000 and seen == list(range(1, len(seen) + 1))


def _bomb(kind: str, mebibytes: int) -> bytes:
    """`mebibytes` MiB of NUL bytes without one newline: a bomb that is one endless line."""
    block = b"\0" * (1 << 20)
    if kind == "gzip":
        packer = zlib.compressobj(9, zlib.DEFLATED, 31)
        return b"".join(packer.compress(block) for _ in range(mebibytes)) + packer.flush()
    zpacker = zstandard.ZstdCompressor().compressobj()
    return b"".join(zpacker.compress(block) for _ in range(mebibytes)) + zpacker.flush()


# Expanded sizes, half gzip (~400 kB on disk) and half zstd (~12 kB): 768 MiB; deep 4 GiB.
BOMB_MIB = 4096 if os.environ.get("HYPOTHESIS_PROFILE") == "deep" else 768
RSS_LIMIT_MB = 200  # the interpreter with polars is ~75 MB; the old reader held 384 MiB at once

# Peak RSS of the child's own image. getrusage's ru_maxrss is not enough on Linux: it keeps
# the high-water mark of the image the child had before exec, a copy of pytest's (500 MB late in
# the suite), so VmHWM from /proc comes first.
_MEASURE = """
import resource, sys
from harmony_doctor.cli.app import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
try:
    with open("/proc/self/status") as status:
        peak = next(int(l.split()[1]) for l in status if l.startswith("VmHWM:"))
except OSError:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
sys.stderr.write(f"rss-kb {peak} exit {code}\\n")
"""


def test_decompression_bombs_are_scanned_in_bounded_memory(tmp_path: Path) -> None:
    paths = []
    for kind, suffix in (("gzip", ".log.gz"), ("zstd", ".log.zst")):
        path = tmp_path / f"bomb{suffix}"
        path.write_bytes(_bomb(kind, BOMB_MIB // 2))
        assert path.stat().st_size < 2_000_000
        paths.append(str(path))
    args = ["scan", *paths, "-j", "1", "--format", "json"]
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, *args], capture_output=True, text=True, check=False
    )
    _, rss, _, code = done.stderr.split()[-4:]
    doc = json.loads(done.stdout)
    # each an endless line, cut: read to the cap only, so partial and exit 2 (issue 34)
    assert code == "2" and doc["totals"]["failures"] == 0
    assert doc["totals"]["bytes"] == BOMB_MIB << 20  # every byte was read
    assert [(f["lines"], f["status"]) for f in doc["files"]] == [(1, "partial")] * 2
    assert int(rss) // 1024 < RSS_LIMIT_MB, f"peak RSS {int(rss) // 1024} MB"


def test_regression_decompression_bomb_expanded_whole_per_chunk(tmp_path: Path) -> None:
    # Found by the bomb test: one 64 kB read of zstd became up to GBs in memory, and gzip's
    # 64 MB per chunk was copied on every read (a 1 GiB bomb took minutes). Now each step
    # hands out a bounded amount and reads never copy the rest.
    path = tmp_path / "bomb.zst"
    path.write_bytes(_bomb("zstd", 64))
    stream = open_binary(Source(str(path), path))
    try:
        total = 0
        while chunk := stream.read(CHUNK):
            assert len(chunk) <= CHUNK
            assert len(stream._raw._output) <= 8 * STEP_OUTPUT  # type: ignore[attr-defined]
            total += len(chunk)
    finally:
        stream.close()
    assert total == 64 << 20


@pytest.mark.parametrize("kind", ["gzip", "bzip2", "xz", "zstd"])
def test_bounded_steps_read_every_format_and_member(tmp_path: Path, kind: str) -> None:
    packers: dict[str, Callable[[bytes], bytes]] = {
        "gzip": gzip.compress,
        "bzip2": bz2.compress,
        "xz": lzma.compress,
        "zstd": zstandard.compress,
    }
    pack = packers[kind]
    first = b"".join(b"line %d\n" % i for i in range(200_000))
    second = b"\0" * (3 * STEP_OUTPUT) + b"\nlast\n"
    path = tmp_path / "two-members"
    path.write_bytes(pack(first) + pack(second))
    stream = open_binary(Source(str(path), path))
    try:
        data = b"".join(iter(lambda: stream.read(CHUNK), b""))
    finally:
        stream.close()
    assert data == first + second


def test_scan_skips_fifos_and_symlink_loops_with_reasons(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "real.log").write_text("INFO fine\n")
    os.mkfifo(logs / "pipe.log")  # opening it would block forever: it must not be opened
    (logs / "self.log").symlink_to(logs / "self.log")  # a symlink loop to a "file"
    (logs / "up").symlink_to(logs)  # a folder loop: followed once, adds nothing
    result = run(["scan", str(logs), "-j", "1", "--format", "json"])
    doc = json.loads(result.stdout)
    assert doc["totals"]["failures"] == 0
    reasons = {Path(f["path"]).name: f["reason"] for f in doc["files"] if f["status"] != "ok"}
    assert "special file" in reasons["pipe.log"]
    assert "symbolic links" in reasons["self.log"]
    assert "up" not in reasons
    assert [Path(f["path"]).name for f in doc["files"] if f["status"] == "ok"] == ["real.log"]
    assert result.exit_code == 2  # something was not read: said on stderr, one line each
    assert len(result.stderr.splitlines()) == 2
    assert all(line.startswith("harmony-doctor: skipped ") for line in result.stderr.splitlines())


@pytest.mark.parametrize("cut", [None, 0.5, 0.97])
def test_gzip_reads_the_same_through_isal_and_zlib(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cut: float | None
) -> None:
    """ISA-L and zlib give the same bytes, members and damage report (rotated members
    appended together, a file cut inside its second member). Where the data is cut, ISA-L may
    hold back the last byte it could decode (a quarter of cut points, never more than one):
    the cut line was incomplete anyway, and the file is reported partial either way."""
    pytest.importorskip("isal", reason="isal has no wheel on this platform")
    body = b"".join(b"(APIServer pid=1) INFO line %d\n" % i for i in range(60_000))
    data = gzip.compress(body[:700_000]) + gzip.compress(body[700_000:], compresslevel=1)
    path = tmp_path / "vllm.log.gz"
    path.write_bytes(data if cut is None else data[: int(len(data) * cut)])

    def read() -> tuple[bytes, str | None]:
        stream = open_binary(Source(str(path), path))
        out: list[bytes] = []
        try:
            while chunk := stream.read(CHUNK):
                out.append(chunk)
        except (EOFError, OSError) as exc:
            return b"".join(out), type(exc).__name__
        finally:
            stream.close()
        return b"".join(out), None

    with_isal = read()
    monkeypatch.setitem(sys.modules, "isal", None)  # `from isal import ...` now fails
    with_zlib = read()
    assert with_isal[1] == with_zlib[1]
    assert with_zlib[0].startswith(with_isal[0])
    assert len(with_zlib[0]) - len(with_isal[0]) <= (0 if cut is None else 1)
    assert (with_zlib[1] is None) == (cut is None) and len(with_zlib[0]) > 100_000
    if cut is None:
        assert with_zlib[0] == body


@pytest.mark.parametrize(
    "pack",
    [
        lambda b: gzip.compress(b[:70_000]) + gzip.compress(b[70_000:]),
        lambda b: zstandard.ZstdCompressor(write_checksum=True).compress(b),
    ],
)
@pytest.mark.parametrize("size", [1, 1000, CHUNK, STEP_OUTPUT, 3 * STEP_OUTPUT])
def test_reads_are_at_most_their_size_and_end_only_at_the_end(
    pack: Callable[[bytes], bytes], size: int
) -> None:
    """A read hands out what one decompression step made (no copy to fill it from the next):
    never more than asked, never empty before the end, every byte in order."""
    rng = random.Random(7)
    text = b"".join(b"line %d %s\n" % (n, b"x" * rng.randrange(200)) for n in range(40_000))
    stream = open_binary(Source("x", None, io.BytesIO(pack(text))))
    got = []
    while piece := stream.read(size):
        assert len(piece) <= size
        got.append(piece)
    stream.close()
    assert b"".join(got) == text


def test_a_file_name_that_is_not_utf8_is_scanned_and_shown_with_escapes(tmp_path: Path) -> None:
    """A name's bytes that are no UTF-8 (held as surrogates) are shown as `\\xff`: every output
    holds it (polars, JSON, CSV refused surrogates with a traceback); the file is opened by its
    path."""
    import json

    from tests.helpers import run

    folder = os.fsencode(tmp_path) + b"/bad\xff.log"
    with open(folder, "wb") as stream:
        stream.write(b"openai_harmony.HarmonyError: Unknown role: assistantassistant\n")
    result = run(["scan", str(tmp_path), "-j", "1", "--format", "json"])
    assert result.exit_code == 1, result.stderr
    (group,) = json.loads(result.stdout)["groups"]
    assert group["example"].endswith("bad\\xff.log:1")
