"""Every byte's newline is counted once (native.chunk_lines, in the Unwrapper), and the count is
the same however the bytes arrive: a log read in chunks of any size gives the same lines, the
same per-file report (failures and where they are, requests, completions, cut lines) as the
log read whole, bare or wrapped (Docker JSON with its 16 KiB pieces, CRI with P/F partial
lines, journald JSON and short), and a mix of plain and wrapped lines. The line count is also
checked against the bytes themselves, and the Unwrapper's pieces against their own newlines.
"""

from __future__ import annotations

from datetime import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harmony_doctor.inputs.files import MAX_LINE
from harmony_doctor.inputs.wrappers import LineMeta, Unwrapper
from harmony_doctor.native import NATIVE_ENV
from harmony_doctor.scan.found import SourceScan
from harmony_doctor.scan.source import scan_source
from tests.helpers import Trickle
from tests.inputs import wrapping
from tests.scan.scoped_logs import vllm_log

REFERENCE = datetime(2026, 12, 1)
_LOG = vllm_log(23, requests=40)
# a long line: Docker and CRI split it into 16 KiB pieces (P lines, "log" without a newline)
_LINES = [
    *_LOG.lines[:30],
    "(APIServer pid=4121) INFO 11-27 10:00:02 " + "x" * 40_000,
    *_LOG.lines[30:],
]
_PLAIN = "".join(line + "\n" for line in _LINES).encode()

FORMS: dict[str, bytes] = {
    "plain": _PLAIN,
    "plain-unended": _PLAIN.rstrip(b"\n"),
    "crlf": _PLAIN.replace(b"\n", b"\r\n"),
    "docker": wrapping.docker(_LINES),
    "cri": wrapping.cri(_LINES),
    "journal-json": wrapping.journal_json(_LINES),
    "journal-short": wrapping.journal_short(_LINES),
    # plain lines, then wrapped ones, then plain again: the pass-through stops and starts
    "mixed": _PLAIN[:3000].rsplit(b"\n", 1)[0]
    + b"\n"
    + wrapping.docker(_LINES[20:45])
    + b"".join(line.encode() + b"\n" for line in _LINES[45:]),
}


def _scan(data: bytes, size: int) -> SourceScan:
    return scan_source(Trickle(data, size), "x.log", REFERENCE, replay=True)


def _lines_in(data: bytes) -> int:
    return data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)


_WHOLE = {name: _scan(data, len(data)) for name, data in FORMS.items()}


@pytest.mark.parametrize("name", FORMS)
def test_whole_reads_count_every_line_and_find_the_failures(name: str) -> None:
    whole = _WHOLE[name]
    assert whole.lines == _lines_in(FORMS[name])
    assert whole.bytes == len(FORMS[name])
    assert whole.errors, "the log's failures are found"
    assert sum(whole.received.values()) + sum(whole.requests.values()) > 0


@pytest.mark.parametrize("name", FORMS)
@settings(max_examples=25, deadline=None)
@given(size=st.integers(min_value=1, max_value=20_000))
def test_any_chunking_gives_the_whole_read_report(name: str, size: int) -> None:
    assert _scan(FORMS[name], size) == _WHOLE[name]


@pytest.mark.parametrize("name", ["plain", "docker", "cri", "mixed"])
def test_the_python_chunk_answers_give_the_same_report(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HARMONY_DOCTOR_NATIVE=0: the reference chunk_lines (and the Python core) agree."""
    monkeypatch.setenv(NATIVE_ENV, "0")
    for size in (1, 97, 4096, len(FORMS[name])):
        assert _scan(FORMS[name], size) == _WHOLE[name], size


def _unwrap(data: bytes, size: int) -> tuple[bytes, list[LineMeta], int, int, Unwrapper]:
    unwrapper = Unwrapper(MAX_LINE)
    pieces = [unwrapper.feed(data[i : i + size]) for i in range(0, len(data), size)]
    pieces.append(unwrapper.finish())
    for piece in pieces:
        assert piece.lines == piece.data.count(b"\n"), "a piece's count is its own newlines"
    text = b"".join(p.data for p in pieces)
    meta = [m for p in pieces for m in p.meta]
    return text, meta, sum(p.lines for p in pieces), unwrapper.newlines, unwrapper


@pytest.mark.parametrize("name", FORMS)
@settings(max_examples=40, deadline=None)
@given(size=st.integers(min_value=1, max_value=20_000))
def test_unwrapped_pieces_count_their_lines_in_any_chunking(name: str, size: int) -> None:
    data = FORMS[name]
    whole_text, whole_meta, whole_lines, _, whole = _unwrap(data, len(data))
    text, meta, lines, newlines, chunked = _unwrap(data, size)
    assert (text, meta, lines) == (whole_text, whole_meta, whole_lines)
    assert newlines == data.count(b"\n")
    assert [chunked.source_line(n) for n in range(1, lines + 2)] == [
        whole.source_line(n) for n in range(1, lines + 2)
    ]
    assert chunked.wrappers == whole.wrappers
