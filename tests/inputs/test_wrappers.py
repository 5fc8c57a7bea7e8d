"""wrappers.py: every wrapper removed, split records rejoined, metadata and wrapped lines kept."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from harmony_doctor.inputs.files import MAX_LINE
from harmony_doctor.inputs.line_map import LineMap
from harmony_doctor.inputs.wrappers import LineMeta, Unwrapper, unwrap_text
from tests.helpers import SAMPLES, shared_files
from tests.inputs import wrapping

UTC = b"2026-11-27 10:00:01"


def _excerpts(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []


_CORPUS: list[Path | None] = [*shared_files("corpus")] or [None]


@pytest.fixture(params=_CORPUS, ids=lambda p: p.name if p else "absent")
def corpus_excerpt(request: pytest.FixtureRequest) -> Path:
    if request.param is None:
        pytest.skip("../shared/corpus is not beside this clone")
    path: Path = request.param
    return path


def _lines(path: Path) -> list[str]:
    text = path.read_bytes().decode("utf-8", errors="replace")
    lines = text.split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def _unwrapped_lines(data: bytes) -> list[str]:
    text, _ = unwrap_text(data)
    lines = text.decode("utf-8", errors="replace").split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def _roundtrip(lines: list[str]) -> Iterator[tuple[str, list[str], list[str]]]:
    for name, wrap in wrapping.WRAPPERS.items():
        # Line-based wrappers cannot carry a "\r" at the end of a line (it reads as CRLF).
        expected = (
            lines
            if name not in ("cri", "journal-short", "journal-short-iso", "logcli")
            else [line.removesuffix("\r") for line in lines]
        )
        yield name, expected, _unwrapped_lines(wrap(lines))


@pytest.mark.parametrize("path", _excerpts(SAMPLES), ids=lambda p: p.name)
def test_every_sample_wrapped_in_every_wrapper_unwraps_to_its_lines(path: Path) -> None:
    for name, expected, got in _roundtrip(_lines(path)):
        assert got == expected, name


def test_every_corpus_excerpt_wrapped_in_every_wrapper_unwraps_to_its_lines(
    corpus_excerpt: Path,
) -> None:
    for name, expected, got in _roundtrip(_lines(corpus_excerpt)):
        assert got == expected, name


def test_docker_split_record_is_rejoined() -> None:
    long = "ERROR 08-06 23:25:57 [serving_chat.py:1001] " + "x" * 40_000 + " HarmonyError: end"
    data = wrapping.docker(["first", long, "last"])
    assert data.count(b"\n") == 5  # the long line took three records
    text, unwrapper = unwrap_text(data)
    assert text.split(b"\n") == [b"first", long.encode(), b"last", b""]
    assert [unwrapper.source_line(n) for n in (1, 2, 3)] == [1, 2, 5]


def test_docker_split_records_of_two_streams_are_rejoined_apart() -> None:
    records = [
        {"log": "err-part-", "stream": "stderr", "time": wrapping.STAMP},
        {"log": "out line\n", "stream": "stdout", "time": wrapping.STAMP},
        {"log": "end\n", "stream": "stderr", "time": wrapping.STAMP},
    ]
    text, unwrapper = unwrap_text(("\n".join(map(json.dumps, records)) + "\n").encode())
    assert text == b"out line\nerr-part-end\n"
    assert unwrapper.source_line(2) == 1  # a rejoined line starts at its first piece


def test_cri_partial_lines_are_rejoined() -> None:
    data = b"".join(
        [
            b"2026-11-27T11:00:01.5+01:00 stderr P Harmony",
            b"\n2026-11-27T11:00:01.6+01:00 stderr P Error: unexp",
            b"\n2026-11-27T11:00:01.7+01:00 stderr F ected token\n",
        ]
    )
    unwrapper = Unwrapper()
    out = unwrapper.feed(data)
    assert out.data == b"HarmonyError: unexpected token\n"
    assert out.meta == (LineMeta(1, 1, UTC, None, None, "cri"),)  # +01:00 turned into UTC


def test_journal_json_byte_array_message_is_read() -> None:
    message = b"\x1b[31mERROR\x1b[0m openai_harmony.HarmonyError: unexpected \xff"
    record = {
        "MESSAGE": list(message),
        "__REALTIME_TIMESTAMP": wrapping.REALTIME,
        "_PID": "812",
        "_HOSTNAME": "gpu-1",
    }
    unwrapper = Unwrapper()
    out = unwrapper.feed(json.dumps(record).encode() + b"\n")
    assert out.data == message + b"\n"
    assert out.meta == (LineMeta(1, 1, UTC, 812, "gpu-1", "journal"),)
    assert out.core_meta() == [(1, UTC, 812)]


def test_journal_json_multiline_message_keeps_its_wrapped_line() -> None:
    record = {"MESSAGE": "Traceback:\n  File x\nError", "_PID": "7", "__REALTIME_TIMESTAMP": "0"}
    data = b"plain\n" + json.dumps(record).encode() + b"\nafter\n"
    text, unwrapper = unwrap_text(data)
    assert text == b"plain\nTraceback:\n  File x\nError\nafter\n"
    assert [unwrapper.source_line(n) for n in range(1, 6)] == [1, 2, 2, 2, 3]


def test_journal_short_keeps_syslog_time_without_year_and_pid() -> None:
    data = (
        b"-- Boot 0123abcd --\n"
        b"Nov 27 10:00:01 gpu-1 vllm[1234]: Traceback (most recent call last):\n"
        + b" " * len(b"Nov 27 10:00:01 gpu-1 vllm[1234]: ")
        + b"  File x\n"
        + b"2026-11-27T11:00:01+0100 gpu-1 vllm[99]: iso\n"
    )
    unwrapper = Unwrapper()
    out = unwrapper.feed(data)
    assert out.data == b"Traceback (most recent call last):\n  File x\niso\n"
    assert [(m.line, m.source_line, m.stamp, m.pid) for m in out.meta] == [
        (1, 2, b"11-27 10:00:01", 1234),
        (2, 3, b"11-27 10:00:01", 1234),
        (3, 4, UTC, 99),
    ]


def test_journal_short_without_the_host() -> None:
    """`journalctl --no-hostname` (Ollama's journald logs as posted): the identifier and pid
    come first; `ollama[1914]:` was read as a host and `time=2025-08-20T09` as the identifier,
    cutting the line's own date off its text."""
    data = (
        b'Aug 20 09:38:05 ollama[1914]: [GIN] 2025/08/20 - 09:38:05 | 200 | 1m43s | POST "/api/chat"\n'
        b'Aug 20 09:40:01 ollama[1914]: time=2025-08-20T09:40:01.186Z level=ERROR msg="x"\n'
        b"Aug 20 09:40:02 kernel: y\n"
        b"Aug 20 09:40:03 gpu-1 kernel: z\n"
    )
    unwrapper = Unwrapper()
    out = unwrapper.feed(data)
    assert out.data == (
        b'[GIN] 2025/08/20 - 09:38:05 | 200 | 1m43s | POST "/api/chat"\n'
        b'time=2025-08-20T09:40:01.186Z level=ERROR msg="x"\ny\nz\n'
    )
    assert [(m.pid, m.host) for m in out.meta] == [
        (1914, None),
        (1914, None),
        (None, None),
        (None, "gpu-1"),
    ]


def test_loki_query_range_is_put_in_time_order() -> None:
    data = wrapping.loki_query_range(["first", "second", "third"])
    text, unwrapper = unwrap_text(data)
    assert text == b"first\nsecond\nthird\n"
    assert dict(unwrapper.wrappers) == {"loki": 3}
    lines = data.split(b"\n")
    # a value's line is the line of its timestamp
    assert str(wrapping.LOKI_NS).encode() in lines[unwrapper.source_line(1) - 1]


def test_mixed_wrapper_file_is_unwrapped_per_line() -> None:
    data = b"".join(
        [
            wrapping.docker(["from docker"]),
            b"a plain line\n",
            wrapping.cri(["from cri"]),
            wrapping.journal_json(["from journald"]),
            wrapping.vector(["from vector"]),
            b'{"object":"error","message":"an error body is not a wrapper","code":400}\n',
        ]
    )
    text, unwrapper = unwrap_text(data)
    assert text.split(b"\n") == [
        b"from docker",
        b"a plain line",
        b"from cri",
        b"from journald",
        b"from vector",
        b'{"object":"error","message":"an error body is not a wrapper","code":400}',
        b"",
    ]
    assert set(unwrapper.wrappers) == {"docker", "cri", "journal", "json"}


def test_plain_file_passes_through_byte_for_byte() -> None:
    data = b"INFO 08-06 x\r\n\x1b[32mcolour\x1b[0m\n{not json\nno newline at end"
    text, unwrapper = unwrap_text(data)
    assert text == data
    assert not unwrapper.wrappers
    assert unwrapper.source_line(3) == 3


@pytest.mark.parametrize("size", [1, 2, 7, 4096, 100_000])
def test_any_chunking_gives_the_same_stream(size: int) -> None:
    data = b"".join(
        [
            wrapping.docker(["a", "b" * 20_000]),
            b"plain\n",
            wrapping.journal_short(["c", "d"]),
            wrapping.cri(["e" * 17_000]),
            b"tail without newline",
        ]
    )
    whole = Unwrapper()
    expected = whole.feed(data)
    expected_end = whole.finish()
    chunked = Unwrapper()
    pieces = [chunked.feed(data[i : i + size]) for i in range(0, len(data), size)]
    pieces.append(chunked.finish())
    assert b"".join(p.data for p in pieces) == expected.data + expected_end.data
    assert [m for p in pieces for m in p.meta] == list(expected.meta + expected_end.meta)
    assert [chunked.source_line(n) for n in range(1, 8)] == [1, 2, 4, 5, 6, 7, 9]


def test_line_map_runs_and_forget() -> None:
    lines = LineMap()
    lines.add(1, 1, 10)  # plain lines 1..10
    lines.add(11, 11)
    lines.add(12, 11)  # a multi-line record on wrapped line 11
    lines.add(13, 11)
    lines.add(14, 15)  # a record split over wrapped lines 12..14 ends at 15
    assert [lines.source_line(n) for n in (1, 10, 11, 12, 13, 14)] == [1, 10, 11, 11, 11, 15]
    lines.forget(12)
    assert lines.source_line(13) == 11 and lines.source_line(14) == 15


def test_endless_line_is_cut_not_held() -> None:
    unwrapper = Unwrapper(MAX_LINE)  # scan's: a whole-input reader keeps lines whole
    out = [unwrapper.feed(b"\x00" * 1_000_000) for _ in range(12)]
    out.append(unwrapper.feed(b"\nafter\n"))
    out.append(unwrapper.finish())
    data = b"".join(o.data for o in out)
    assert data.endswith(b"\nafter\n") and len(data) < 5_000_000
    assert unwrapper.cut_lines == 1
    assert unwrapper.source_line(2) == 2
