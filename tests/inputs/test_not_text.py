"""not_text.py: data in a text stream that is not text in its encoding is found while the
stream is read, and the file is partial (exit 2), never clean: a UTF-16 header before UTF-8
lines, UTF-16LE appended to a UTF-8 log (PowerShell 5's `>>`), a binary block inside a log.
UTF-32 is decoded. The same with the Rust core and the Python reference."""

from __future__ import annotations

import codecs
import io
import random
from pathlib import Path

import pytest

from harmony_doctor.inputs.encodings import decoding, detect
from harmony_doctor.inputs.not_text import BINARY, WIDE, judge_line
from tests.helpers import SAMPLES, run

LOG = (SAMPLES / "vllm-traceback.log").read_text()  # 3 failures
PAD = "INFO 11-12 14:00:00 [api_server.py:1] started ok\n" * 200  # > 8 KiB: past the head
BLOCK = random.Random(1).randbytes(4096)  # a binary block, as a crash writes one
ELF = b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 16


def _mixed(name: str) -> bytes:
    if name == "utf16-then-utf8":
        return "Windows header\r\n".encode("utf-16") + LOG.encode()
    if name == "utf8-then-utf16":
        return PAD.encode() + LOG.encode("utf-16-le")
    if name == "binary-small":  # 2,000 bytes of log, the block, the rest of the log
        return LOG.encode()[:2000] + BLOCK + LOG.encode()[2000:]
    if name == "binary-large":  # the block past the first MiB
        return (PAD * 120).encode() + LOG.encode() + ELF + LOG.encode()
    raise AssertionError(name)


@pytest.mark.parametrize("native", ["1", "0"])
@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("utf16-then-utf8", "bytes from byte 34 are 8-bit text (UTF-8?) inside UTF-16-LE"),
        ("utf8-then-utf16", f"bytes from byte {len(PAD):,} are UTF-16 text inside UTF-8"),
        (
            "binary-small",
            f"bytes from byte 2,000 are binary data, not text (bytes {BLOCK[:8].hex(' ')})",
        ),
        (
            "binary-large",
            f"from byte {len(PAD) * 120 + len(LOG):,} are binary data, not text (bytes 7f 45",
        ),
    ],
)
def test_a_stream_that_turns_into_something_else_is_partial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, native: str, name: str, said: str
) -> None:
    monkeypatch.setenv("HARMONY_DOCTOR_NATIVE", native)
    log = tmp_path / f"{name}.log"
    log.write_bytes(_mixed(name))
    result = run(["scan", str(log)])
    assert result.exit_code == 2, result
    assert f"harmony-doctor: partial {log}: " in result.stderr
    assert said in result.stderr
    assert "No Harmony failures found" not in result.stdout
    explained = run(["explain", str(log)])
    assert explained.exit_code == 2, explained
    assert f"harmony-doctor: partial {log}: " in explained.stderr and said in explained.stderr


def test_the_text_around_a_binary_block_is_still_read(tmp_path: Path) -> None:
    """The small log was skipped whole ("starts with bytes 28 41 50 49", its text): now read,
    its failures found, the block reported."""
    log = tmp_path / "app.log"
    log.write_bytes(_mixed("binary-small"))
    result = run(["scan", str(log), "--format", "json"])
    assert result.exit_code == 2
    assert '"failures": 3' in result.stdout
    assert "starts with bytes" not in result.stderr


@pytest.mark.parametrize("native", ["1", "0"])
@pytest.mark.parametrize("encoding", ["utf-32", "utf-32-le", "utf-32-be"])
def test_utf32_is_decoded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, native: str, encoding: str
) -> None:
    monkeypatch.setenv("HARMONY_DOCTOR_NATIVE", native)
    log = tmp_path / "app.log"
    log.write_bytes(LOG.encode(encoding))
    result = run(["scan", str(log), "--format", "json"])
    assert result.exit_code == 1, result
    assert '"failures": 3' in result.stdout
    assert result.stderr == ""


@pytest.mark.parametrize(
    ("encoded", "name"),
    [
        (codecs.BOM_UTF32_LE + LOG.encode("utf-32-le"), "utf-32-le"),
        (codecs.BOM_UTF32_BE + LOG.encode("utf-32-be"), "utf-32-be"),
        (LOG.encode("utf-32-le"), "utf-32-le"),
        (LOG.encode("utf-32-be"), "utf-32-be"),
    ],
)
def test_utf32_is_detected(encoded: bytes, name: str) -> None:
    assert detect(encoded)[0] == name


def test_a_binary_file_is_still_skipped_by_its_first_bytes(tmp_path: Path) -> None:
    path = tmp_path / "a.out"
    path.write_bytes(ELF * 3 + LOG.encode())  # a head all binary
    result = run(["scan", str(path)])
    assert result.exit_code == 2
    assert "binary data, not text (starts with bytes 7f 45 4c 46" in result.stderr


@pytest.mark.parametrize(
    ("line", "utf8", "kind"),
    [
        (b"INFO a quoted NUL \x00 in a message", True, None),
        (b"\x00" * 4096, True, None),  # a hole: zeroed data, said apart
        ("é vu".encode("latin-1"), False, None),  # latin-1 text
        ("Traceback".encode("utf-16-le"), True, WIDE),
        ("\x00Traceback".encode("utf-16-le"), True, WIDE),
        (BLOCK[:200], False, BINARY),
        (b"\x00\x01\x02\x03\x04\x05", True, BINARY),
    ],
)
def test_judge_line(line: bytes, utf8: bool, kind: str | None) -> None:
    assert judge_line(line, utf8) == kind


def test_ordinary_text_has_nothing_not_text() -> None:
    data = (PAD * 40).encode() + b"\x00" * 5000 + LOG.encode("latin-1", "replace")
    stream = decoding(io.BytesIO(data), "test")
    while stream.read(65536):
        pass
    assert stream.not_text.reason() is None  # type: ignore[attr-defined]


def test_a_rotated_part_is_partial_alone(tmp_path: Path) -> None:
    """Parts of a rotated log are read as one stream: the part with the block is partial, the
    other keeps its `ok`."""
    (tmp_path / "app.log").write_text(LOG)
    (tmp_path / "app.log.1").write_bytes(_mixed("binary-small"))
    result = run(["scan", str(tmp_path), "--format", "csv"])
    assert result.exit_code == 2, result
    assert f"partial {tmp_path / 'app.log.1'}: " in result.stderr
    assert "app.log:" not in result.stderr.replace("app.log.1:", "")
