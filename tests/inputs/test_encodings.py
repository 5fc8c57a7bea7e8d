"""encodings.py: UTF-8 with BOM, UTF-16 with or without BOM, latin-1, binary data refused."""

from __future__ import annotations

import codecs
import io
from pathlib import Path

import pytest

from harmony_doctor.errors import Undecodable
from harmony_doctor.inputs.encodings import decoding, detect
from harmony_doctor.inputs.files import Source, discover, open_binary, plain_size
from harmony_doctor.scan.records import ScanOptions
from harmony_doctor.scan.run import scan

LOG = (
    "INFO 08-06 23:25:57 [serving_chat.py:1001] café ✓\r\n"
    "ERROR 08-06 23:25:58 [serving_chat.py:1002] openai_harmony.HarmonyError: "
    "Unexpected token 200002 while expecting start token 200006\n"
)


def _read(data: bytes) -> bytes:
    stream = decoding(io.BytesIO(data), "test")
    out = b""
    while chunk := stream.read(5):  # small reads cross characters and the head
        out += chunk
    return out


@pytest.mark.parametrize(
    ("encoded", "name"),
    [
        (codecs.BOM_UTF8 + LOG.encode(), "utf-8"),
        (LOG.encode("utf-16-le"), "utf-16-le"),
        (LOG.encode("utf-16-be"), "utf-16-be"),
        (codecs.BOM_UTF16_LE + LOG.encode("utf-16-le"), "utf-16-le"),
        (codecs.BOM_UTF16_BE + LOG.encode("utf-16-be"), "utf-16-be"),
    ],
)
def test_utf16_and_bom_are_detected_and_transcoded(encoded: bytes, name: str) -> None:
    assert detect(encoded)[0] == name
    assert _read(encoded) == LOG.encode()  # CRLF and everything else kept as written


def test_latin1_file_is_read_as_latin1() -> None:
    encoded = LOG.replace("✓", "").encode("latin-1")
    assert detect(encoded) == ("latin-1", 0)
    assert _read(encoded) == LOG.replace("✓", "").encode()


def test_utf8_cut_inside_a_character_is_still_utf8() -> None:
    assert detect(LOG.encode()[:50])[0] == "utf-8"  # "é" cut by the head's end


def test_copytruncate_nul_hole_is_text() -> None:
    assert detect(b"\x00" * 4096 + LOG.encode()) == ("utf-8", 0)


def test_undecodable_file_is_reported_as_skipped(tmp_path: Path) -> None:
    path = tmp_path / "core.bin"
    path.write_bytes(bytes(range(256)) * 64)
    with pytest.raises(Undecodable, match="binary data"):
        open_binary(Source(str(path), path))
    sources, skipped = discover([str(path)])
    result = scan(sources, ScanOptions(jobs=1), skipped)
    assert [(f.status, "binary data" in (f.reason or "")) for f in result.files] == [
        ("skipped", True)
    ]


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-16-le", "utf-16-be"])
def test_scan_finds_the_same_failures_in_every_encoding(tmp_path: Path, encoding: str) -> None:
    plain, encoded = tmp_path / "plain.log", tmp_path / "encoded.log"
    plain.write_bytes(LOG.encode())
    encoded.write_bytes(LOG.encode(encoding))
    expected = scan(discover([str(plain)])[0], ScanOptions(jobs=1))
    result = scan(discover([str(encoded)])[0], ScanOptions(jobs=1))
    assert [e.code for e in result.events] == [e.code for e in expected.events]
    assert [e.line for e in result.events] == [e.line for e in expected.events] == [2]


def test_only_plain_utf8_files_are_cut_into_ranges(tmp_path: Path) -> None:
    utf8, utf16 = tmp_path / "a.log", tmp_path / "b.log"
    utf8.write_bytes(LOG.encode())
    utf16.write_bytes(LOG.encode("utf-16"))
    assert plain_size(Source(str(utf8), utf8)) == len(LOG.encode())
    assert plain_size(Source(str(utf16), utf16)) is None


@pytest.mark.parametrize("padding", [0, 64 * 1024])
def test_one_odd_byte_is_one_latin1_line_whatever_the_size(padding: int) -> None:
    # issue 34 A, 11: a small file with one invalid byte was latin-1 whole ("cafÃ©" in every
    # line), a large one UTF-8 with U+FFFD: now both read each line by its own bytes.
    filler = b"INFO fine\n" * (padding // 10)
    data = filler + "INFO café ✓\n".encode() + b"INFO \xff odd\n" + "INFO über\n".encode()
    stream = decoding(io.BytesIO(data), "test")
    out = b""
    while chunk := stream.read(7):
        out += chunk
    assert out.decode("utf-8") == filler.decode() + "INFO café ✓\nINFO \xff odd\nINFO über\n"
    assert stream.latin1_lines == 1  # type: ignore[attr-defined]


def test_scan_says_the_lines_read_as_latin1(tmp_path: Path) -> None:
    log = tmp_path / "odd.log"
    log.write_bytes(LOG.encode() + b"INFO \xff\n")
    (report,) = scan([Source(str(log), log)], ScanOptions(jobs=1)).files
    assert report.status == "ok" and report.reason == "1 line not UTF-8, read as latin-1"
