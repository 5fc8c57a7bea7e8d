"""reader.py: one reader for single-input commands; pipes read whole; endless input bounded."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from harmony_doctor.errors import InputError
from harmony_doctor.inputs.files import Source, discover, open_binary, plain_size, read_lines
from harmony_doctor.inputs.reader import read_input, read_text
from harmony_doctor.scan.records import ScanOptions
from harmony_doctor.scan.run import scan
from tests.inputs import wrapping

PIPED = b"".join(b"INFO line %d\n" % n for n in range(20_000))  # far more than a pipe's buffer
FAILURE = (
    b"ERROR 08-06 23:25:58 [serving_chat.py:1002] openai_harmony.HarmonyError: "
    b"Unexpected token 200002 while expecting start token 200006\n"
)


@contextmanager
def _pipe(data: bytes) -> Iterator[str]:
    """A real pipe named /dev/fd/N (what `<(...)` gives), written by a thread."""
    read_end, write_end = os.pipe()

    def write() -> None:
        with os.fdopen(write_end, "wb") as handle:
            handle.write(data)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        yield f"/dev/fd/{read_end}"
    finally:
        writer.join()
        os.close(read_end)


def test_pipe_given_as_path_loses_no_data() -> None:
    with _pipe(PIPED) as path:
        source = Source(path, Path(path))
        assert plain_size(source) is None  # never sized nor read before the reader
        stream = open_binary(source)
        lines = [line.text for line in read_lines(stream)]
    assert len(lines) == 20_000 and lines[0] == "INFO line 0"


def test_scan_of_a_pipe_given_as_path_loses_no_data() -> None:
    with _pipe(FAILURE + PIPED) as path:
        sources, _ = discover([path])
        result = scan(sources, ScanOptions(jobs=1))
    assert [f.lines for f in result.files] == [20_001]
    assert [e.line for e in result.events] == [1]


def test_process_substitution_is_read_whole() -> None:
    code = "import sys; from harmony_doctor.inputs.reader import read_text; "
    code += "t, l = read_text(sys.argv[1]); print(len(t.splitlines()), t.splitlines()[0])"
    result = subprocess.run(
        ["bash", "-c", f'"{sys.executable}" -c "{code}" <(seq 1 30000)'],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.split() == ["30000", "1"]


def test_endless_input_ends_with_one_clear_error() -> None:
    with pytest.raises(InputError, match=r"/dev/zero is larger than 1 MiB"):
        read_text("/dev/zero", limit=1024 * 1024)


def test_compressed_input_is_read(tmp_path: Path) -> None:
    path = tmp_path / "server.log.gz"
    path.write_bytes(gzip.compress(FAILURE))
    assert read_text(str(path)) == (FAILURE.decode(), str(path))


def test_wrapped_input_is_unwrapped_with_its_metadata(tmp_path: Path) -> None:
    path = tmp_path / "container.json"
    path.write_bytes(wrapping.docker(["plain", FAILURE.decode().rstrip("\n")]))
    found = read_input(str(path))
    assert found.text == "plain\n" + FAILURE.decode()
    assert found.wrappers == ("docker",)
    assert [(m.line, m.stamp) for m in found.meta] == [
        (1, b"2026-11-27 10:00:01"),
        (2, b"2026-11-27 10:00:01"),
    ]
    assert found.source_line(2) == 2


def test_utf16_input_is_decoded(tmp_path: Path) -> None:
    path = tmp_path / "windows.log"
    path.write_bytes(FAILURE.decode().encode("utf-16"))
    assert read_text(str(path))[0] == FAILURE.decode()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.mkdir(), "is a directory"),
        (lambda p: p.write_bytes(bytes(range(256)) * 8), "binary data"),
        (lambda p: None, "cannot read"),
    ],
)
def test_unreadable_input_is_an_input_error(tmp_path: Path, make: object, message: str) -> None:
    path = tmp_path / "input"
    make(path)  # type: ignore[operator]
    with pytest.raises(InputError, match=message):
        read_text(str(path))
