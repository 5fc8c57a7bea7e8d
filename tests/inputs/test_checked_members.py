"""Lines are counted only through compressed data that passed its check (issue 22, item 7).

A gzip member's bytes reach the scan before its CRC-32 and length trailer is read, so a flipped
bit can give changed bytes (more newlines than there were) before the error. The file's `lines`
stop at the end of the last member whose check passed; the lines read after it are said in the
reason (their failures are kept: they were read). Hypothesis flips one bit of, or cuts, a small
single-member and a multi-member gzip (and a zstd file with checksummed frames) of a known log.
"""

from __future__ import annotations

import gzip
import io
import itertools
import re
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import harmony_doctor as hd
from harmony_doctor.inputs.checks import CheckedLines, Checks
from harmony_doctor.inputs.files import Source, open_checked
from tests.helpers import SAMPLES

LOG = (SAMPLES / "vllm-requests.log").read_bytes() * 40  # 320 lines, 40 failures
LINES = LOG.splitlines(keepends=True)
# Members cut at line ends and inside a line: a member's end need not be a line's.
CUTS = (len(b"".join(LINES[:101])), len(b"".join(LINES[:230])) + 17)
SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


def _members(data: bytes, cuts: tuple[int, ...]) -> list[bytes]:
    edges = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges)]


def _gzip(cuts: tuple[int, ...]) -> bytes:
    return b"".join(gzip.compress(part, mtime=0) for part in _members(LOG, cuts))


def _zstd(cuts: tuple[int, ...]) -> bytes:
    compressor = zstandard.ZstdCompressor(write_checksum=True)
    return b"".join(compressor.compress(part) for part in _members(LOG, cuts))


def _verified(data: bytes, engine: Callable[[], Any], error: type[Exception]) -> tuple[bytes, bool]:
    """The bytes of the members (frames) that passed their checks, read one by one by a
    fresh `engine()` each (a reference reading with zlib or zstandard), and whether all of
    the data did."""
    verified = b""
    while data:
        reader = engine()
        try:
            out = reader.decompress(data)
        except error:
            return verified, False
        if not reader.eof:
            return verified, False
        verified += out
        data = reader.unused_data
    return verified, True


def _verified_gzip(data: bytes) -> tuple[bytes, bool]:
    return _verified(data, lambda: _GzipMember(), zlib.error)


class _GzipMember:
    """zlib's gzip reader, but for the header's reserved flag bits (5-7): zlib refuses a member
    with one set, Python's gzip and ISA-L read it, and the member's CRC-32 still checks every
    byte of its data: a flipped reserved bit changes no line, and the scan reads it as `ok`."""

    def __init__(self) -> None:
        self.inner = zlib.decompressobj(wbits=31)

    def decompress(self, data: bytes) -> bytes:
        if data[:3] == b"\x1f\x8b\x08" and len(data) > 3:
            data = data[:3] + bytes([data[3] & 0x1F]) + data[4:]
        return self.inner.decompress(data)

    @property
    def eof(self) -> bool:
        return self.inner.eof

    @property
    def unused_data(self) -> bytes:
        return self.inner.unused_data


def _verified_zstd(data: bytes) -> tuple[bytes, bool]:
    return _verified(
        data, lambda: zstandard.ZstdDecompressor().decompressobj(), zstandard.ZstdError
    )


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("whole") / "app.log"
    path.write_bytes(LOG)
    found = hd.scan_file(path)
    assert found.report.status == "ok" and found.report.lines == len(LINES)
    return found


def _check(found: Any, whole: Any, verified: bytes, intact: bool, read_all: bool) -> None:
    report = found.report
    assert report.lines <= whole.report.lines, report
    if intact and read_all:
        assert report.status == "ok", report
        assert report.lines == whole.report.lines
        assert {(e.code, e.line) for e in found.events} == {(e.code, e.line) for e in whole.events}
        return
    assert report.status in ("partial", "skipped"), report
    if report.status == "skipped":
        return
    assert report.reason is not None
    if not intact:  # a failed check: the lines stop at the end of the last member that passed
        # (a line it ends inside counts when nothing was read after it)
        ended = verified.count(b"\n")
        assert ended <= report.lines <= ended + (not verified.endswith(b"\n")), report
        if "more line" in report.reason:
            assert "did not pass its check" in report.reason


@SETTINGS
@given(
    cuts=st.sampled_from([(), CUTS]),
    where=st.floats(0, 1, exclude_max=True),
    bit=st.integers(0, 7),
)
def test_a_flipped_bit_in_a_gzip_never_adds_lines_nor_passes_as_ok(
    tmp_path: Path, whole: Any, cuts: tuple[int, ...], where: float, bit: int
) -> None:
    data = bytearray(_gzip(cuts))
    data[int(len(data) * where)] ^= 1 << bit
    path = tmp_path / "app.log.gz"
    path.write_bytes(bytes(data))
    verified, intact = _verified_gzip(bytes(data))
    _check(hd.scan_file(path), whole, verified, intact and verified == LOG, True)


@SETTINGS
@given(cuts=st.sampled_from([(), CUTS]), where=st.floats(0, 1, exclude_max=True))
def test_a_cut_gzip_never_adds_lines_nor_passes_as_ok(
    tmp_path: Path, whole: Any, cuts: tuple[int, ...], where: float
) -> None:
    data = _gzip(cuts)[: int(len(_gzip(cuts)) * where)]
    path = tmp_path / "app.log.gz"
    path.write_bytes(data)
    verified, intact = _verified_gzip(data)
    if intact and data:
        _reads_as_the_shorter_log(path, verified, whole)
        return
    _check(hd.scan_file(path), whole, verified, intact, False)


def test_a_gzip_cut_where_a_member_ends_reads_as_the_shorter_log(
    tmp_path: Path, whole: Any
) -> None:
    data = _gzip(CUTS)
    ends = [n for n in range(1, len(data)) if _verified_gzip(data[:n])[1]]
    assert len(ends) == len(CUTS)  # the property above meets these cuts only by chance
    for n in ends:
        path = tmp_path / f"cut{n}.log.gz"
        path.write_bytes(data[:n])
        _reads_as_the_shorter_log(path, _verified_gzip(data[:n])[0], whole)


def _reads_as_the_shorter_log(path: Path, verified: bytes, whole: Any) -> None:
    """A gzip cut exactly where a member ends is whole gzip members, which no reader can tell
    from a shorter log: it reads as that shorter log does, plain."""
    plain = path.with_suffix("")
    plain.write_bytes(verified)
    found, alone = hd.scan_file(path), hd.scan_file(plain)
    assert found.report.status == alone.report.status == "ok", found.report
    assert found.report.lines == alone.report.lines < whole.report.lines
    assert [(e.code, e.line) for e in found.events] == [(e.code, e.line) for e in alone.events]


@SETTINGS
@given(
    where=st.floats(0, 1, exclude_max=True),
    bit=st.integers(0, 7),
)
def test_a_flipped_bit_in_checksummed_zstd_frames_never_adds_lines(
    tmp_path: Path, whole: Any, where: float, bit: int
) -> None:
    data = bytearray(_zstd(CUTS))
    data[int(len(data) * where)] ^= 1 << bit
    path = tmp_path / "app.log.zst"
    path.write_bytes(bytes(data))
    verified, intact = _verified_zstd(bytes(data))
    _check(hd.scan_file(path), whole, verified, intact and verified == LOG, True)


def test_failures_read_from_a_member_that_failed_its_check_are_kept_and_said(
    tmp_path: Path,
) -> None:
    """A last member whose CRC is wrong decodes to the original bytes, handed out (a step at a
    time) before its check: its failures are found, since they were read; its lines are not
    counted, and the reason says how many."""
    big = LOG * 40  # more than one decompression step: part of it is read before the check
    plain = tmp_path / "app.log"
    plain.write_bytes(LOG + big)
    expected = {(e.code, e.line) for e in hd.scan_file(plain).events}
    data = bytearray(gzip.compress(LOG, mtime=0) + gzip.compress(big, mtime=0))
    data[-8] ^= 0x01  # the last member's CRC-32
    path = tmp_path / "app.log.gz"
    path.write_bytes(bytes(data))
    found = hd.scan_file(path)
    report = found.report
    assert report.status == "partial"
    assert report.lines == len(LINES)
    assert report.reason is not None
    assert f"stopped after line {len(LINES)}: corrupt gzip data" in report.reason
    read = re.search(
        r"([\d,]+) more lines read from data that did not pass its check", report.reason
    )
    assert read is not None and 0 < int(read.group(1).replace(",", "")) <= big.count(b"\n")
    got = {(e.code, e.line) for e in found.events}
    assert got <= expected
    assert {k for k in expected if k[1] <= len(LINES)} <= got
    assert any(line > report.lines for _, line in got)  # read, and kept


def test_rotated_parts_each_count_their_own_checked_lines(tmp_path: Path) -> None:
    """Parts of one rotated log are read as one stream: the damaged part's lines stop at its
    last good member, the parts after it count in full."""
    bad = bytearray(gzip.compress(LOG, mtime=0) + gzip.compress(LOG * 40, mtime=0))
    bad[-8] ^= 0x01
    (tmp_path / "app.log.1.gz").write_bytes(bytes(bad))
    (tmp_path / "app.log").write_bytes(LOG)
    older, newer = hd.scan_rotated([tmp_path / "app.log.1.gz", tmp_path / "app.log"])
    assert older.report.status == "partial" and older.report.lines == len(LINES)
    assert older.report.reason is not None and "did not pass its check" in older.report.reason
    assert newer.report.status == "ok" and newer.report.lines == len(LINES)
    # the newer part's failures are on its own lines (and a stream the damage cut may end there)
    alone = {(e.code, e.line) for e in hd.scan_file(tmp_path / "app.log").events}
    assert alone <= {(e.code, e.line) for e in newer.events}


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
def test_checked_lines_follow_member_ends_in_any_chunking(bom: bytes) -> None:
    """CheckedLines, fed the chunks a reader gets (of any size), finds the newlines through
    the last member that passed exactly, a byte-order mark dropped by the reader or not."""
    # the last member is read in steps before its check fails
    members = _members(bom + LOG * 41, (CUTS[0] + len(bom), CUTS[1] + len(bom)))
    data = bytearray(b"".join(gzip.compress(m, mtime=0) for m in members))
    data[-8] ^= 0x01
    for size in (1, 7, 4096, 1 << 20):
        path_bytes = bytes(data)
        stream, checks = _open(path_bytes)
        checked = CheckedLines(checks, 0)
        newlines = 0
        with pytest.raises(OSError, match="corrupt gzip"):
            while chunk := stream.read(size):
                newlines += chunk.count(b"\n")
                checked.read(chunk, newlines)
        stream.close()
        assert checked.checked[1] == LOG[: CUTS[1]].count(b"\n"), size
        passed = LOG[: CUTS[1]].count(b"\n")
        assert newlines > passed  # lines after the member that passed were read
        assert checked.unchecked(newlines + 1) == newlines + 1 - passed


def test_nothing_is_unchecked_without_a_failed_check() -> None:
    checks = Checks()
    lines = CheckedLines(checks, 5)
    lines.read(b"a\nb\n", 7)
    assert lines.unchecked(7) == 0
    assert CheckedLines(None, 0).unchecked(3) == 0


def _open(data: bytes) -> tuple[Any, Checks]:
    return open_checked(Source("x.gz", None, io.BytesIO(data)))
