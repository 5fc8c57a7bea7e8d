"""wrappers.py in chunks: any chunking of any log gives the stream of one whole feed, byte for
byte, and a plain chunk is handed on as the very object fed (no copy). With a line cap, a line
far over it may be cut by the Unwrapper in one chunking and whole in another (cut by the scan
core then): there the lines as the core keeps them (cut to the cap, each cut counted once) are
the same.

The logs are random runs of lines, each run plain (LF or CRLF) or wrapped by one of the
wrappers production uses (tests/inputs/wrapping.py: Docker JSON with its 16 KiB pieces, CRI
with P/F pieces, journald JSON and short, Vector/Promtail/logcli JSON, logcli), so that the
pass-through stops and starts; lines start with what a wrapped line starts with (`{`, an ISO
date with its T, a syslog stamp, `-- `), or nearly, and some are long enough to be split by the
wrapper or cut by the line cap.
"""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from harmony_doctor.inputs.files import MAX_LINE
from harmony_doctor.inputs.wrappers import DECIDED, FIRST_BYTES, Unwrapped, Unwrapper
from harmony_doctor.native import starts_like_wrapped
from tests.inputs import wrapping

# Line starts: the wrapped shapes' own, their near misses, and the server's
_STARTS = [
    "",
    "{",
    '{"log":"x"}',
    "2026-11-27T",
    "2026-11-27T10:00:01Z stdout F ",
    "2026-11-27 10:00:01 ",
    "2026-11-2",
    "Nov 27 10:",
    "Nov 27 10:00:01 gpu-1 vllm[7]: ",
    "Nov 2",
    "-- ",
    "-- Boot 1 --",
    "--",
    "    ",
    "(APIServer pid=4121) INFO 11-27 10:00:02 [logger.py:39] ",
    "ERROR 11-27 10:00:03 [engine.py:1] HarmonyError: unexpected token",
]
_LINE_WRAPPERS = [
    "docker",
    "cri",
    "journal-json",
    "journal-short",
    "journal-short-iso",
    "vector",
    "promtail",
    "fluent-log",
    "logcli-jsonl",
    "logcli",
]
SMALL_CAP = 8000  # a line cap that long plain lines pass (cut when read in chunks, or whole)
_text = st.text(alphabet="ab {}-:T0123456789\t\r", max_size=60)


def _line(longest: list[int], starts: list[str] = _STARTS) -> st.SearchStrategy[str]:
    return st.builds(
        lambda start, body, long: start + body + "x" * long,
        st.sampled_from(starts),
        _text,
        st.sampled_from([0, 0, 0, 0, *longest]),
    )


# Lines far over the cap: plain ones (a record that long is taken for a plain line: real
# records are 16 KiB pieces, under any cap the scan uses)
_OVER_CAP = _line([30_000], [s for s in _STARTS if s[:1] in ("", "(", "E", " ")])


@st.composite
def _logs(draw: st.DrawFn, cap: int | None = None) -> bytes:
    """A log of random runs. With a small cap, wrapped lines stay short enough that their
    records (journald's byte arrays: 5 bytes a byte) are not taken for a plain line over the
    cap, as the scan's cap (MAX_LINE, 4 MiB) keeps 16 KiB Docker and CRI pieces."""
    runs = []
    for _ in range(draw(st.integers(1, 5))):
        shape = draw(st.sampled_from(["plain", "crlf", *_LINE_WRAPPERS]))
        if shape in ("plain", "crlf"):
            line = st.one_of(_line([3000, 17_000]), _OVER_CAP)
        else:
            line = _line([3000, 17_000] if cap is None or cap > SMALL_CAP else [1000, 3000])
        lines = draw(st.lists(line, min_size=1, max_size=8))
        lines = [line.replace("\r", "") for line in lines]
        if shape == "plain":
            runs.append("".join(line + "\n" for line in lines).encode())
        elif shape == "crlf":
            runs.append("".join(line + "\r\n" for line in lines).encode())
        else:
            runs.append(wrapping.WRAPPERS[shape](lines))
    log = b"".join(runs)
    return log[:-1] if draw(st.booleans()) else log  # the last line unended, or not


def _cuts(data: bytes, points: list[int]) -> list[bytes]:
    at = sorted({p % (len(data) + 1) for p in points} | {0, len(data)})
    return [data[a:b] for a, b in pairwise(at)]


def _feed(chunks: list[bytes], max_line: int | None) -> tuple[list[Unwrapped], Unwrapper]:
    unwrapper = Unwrapper(max_line)
    pieces = [unwrapper.feed(chunk) for chunk in chunks]
    pieces.append(unwrapper.finish())
    for piece in pieces:
        assert piece.lines == piece.data.count(b"\n"), "a piece's count is its own newlines"
    return pieces, unwrapper


def _stream(pieces: list[Unwrapped]) -> tuple[bytes, list[object], int]:
    return (
        b"".join(p.data for p in pieces),
        [m for p in pieces for m in p.meta],
        sum(p.lines for p in pieces),
    )


def _as_the_core_keeps(text: bytes, unwrapper: Unwrapper) -> tuple[list[bytes], int]:
    """The lines cut to the cap, and the lines cut (by the Unwrapper, or else by the core); an
    unended last line is a line as one cut, and so ended, is."""
    cap = unwrapper.max_line
    lines = text.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    if cap is None:
        return lines, unwrapper.cut_lines
    return [line[:cap] for line in lines], unwrapper.cut_lines + sum(len(x) > cap for x in lines)


@settings(max_examples=300, deadline=None)
@given(
    max_line_and_data=st.sampled_from([None, MAX_LINE, SMALL_CAP]).flatmap(
        lambda cap: st.tuples(st.just(cap), _logs(cap))
    ),
    points=st.lists(st.integers(min_value=0), max_size=40),
)
def test_any_chunking_gives_the_stream_of_one_whole_feed(
    max_line_and_data: tuple[int | None, bytes], points: list[int]
) -> None:
    max_line, data = max_line_and_data
    whole_pieces, whole = _feed([data], max_line)
    pieces, chunked = _feed(_cuts(data, points), max_line)
    text, meta, lines = _stream(pieces)
    whole_text, whole_meta, whole_lines = _stream(whole_pieces)
    assert meta == whole_meta
    if max_line is None:
        assert (text, lines) == (whole_text, whole_lines) and chunked.cut_lines == 0
    assert _as_the_core_keeps(text, chunked) == _as_the_core_keeps(whole_text, whole)
    assert (chunked.newlines, chunked.wrappers) == (whole.newlines, whole.wrappers)
    assert chunked.newlines == data.count(b"\n")
    assert [chunked.source_line(n) for n in range(1, whole_lines + 3)] == [
        whole.source_line(n) for n in range(1, whole_lines + 3)
    ]


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(_line([3000, 17_000]), min_size=1, max_size=30),
    crlf=st.booleans(),
    ended=st.booleans(),
    points=st.lists(st.integers(min_value=0), max_size=40),
)
def test_a_plain_log_passes_through_byte_for_byte_in_any_chunking(
    lines: list[str], crlf: bool, ended: bool, points: list[int]
) -> None:
    """Lines that are plain (none starts like a wrapped one) come out as they went in."""
    plain = [line for line in lines if not line.startswith(("{", "2026-11-27T", "Nov 27 1", "--"))]
    end = "\r\n" if crlf else "\n"
    data = "".join(line + end for line in plain).encode()
    data = data if ended else data[:-1]
    pieces, unwrapper = _feed(_cuts(data, points), MAX_LINE)
    assert _stream(pieces)[0] == data
    assert not unwrapper.wrappers and unwrapper.cut_lines == 0
    count = data.count(b"\n") + (0 if ended or not data else 1)
    assert [unwrapper.source_line(n) for n in range(1, count + 1)] == list(range(1, count + 1))


def test_a_plain_chunk_is_handed_on_without_a_copy() -> None:
    """The chunk, its last line with it: the object fed is the object handed on, and the next
    chunk (that line's rest first) too."""
    line = b"(APIServer pid=4121) INFO 11-27 10:00:02 [logger.py:39] Received request\n"
    unwrapper = Unwrapper(MAX_LINE)
    first = line * 1000 + line[:DECIDED]  # the last line's start shows it is plain
    second = line[DECIDED:] + line * 1000 + line[:40]
    out = [unwrapper.feed(first), unwrapper.feed(second)]
    assert out[0].data is first and out[0].lines == 1000
    assert out[1].data is second and out[1].lines == 1001
    assert unwrapper.finish().data == b""
    assert unwrapper.source_line(2001) == 2001


def test_a_last_line_that_may_be_wrapped_waits_for_its_end() -> None:
    """Too short to tell, or starting like a wrapped line: kept back until it is whole; a
    start no wrapped line has goes on at once."""
    for start, whole in (
        (b"2026-1", b"2026-1\n"),  # too short to tell yet (a plain line after all)
        (b"Nov 2", b"Nov 2\n"),
        (b'{"log":"x', b'{"log":"x\n'),  # a plain line after all (no JSON record)
        (b"2026-11-27T10:00:01.5Z stdout P abc", b""),  # a CRI piece: more of it follows
    ):
        unwrapper = Unwrapper(MAX_LINE)
        assert unwrapper.feed(b"plain\n" + start).data == b"plain\n"
        assert unwrapper.feed(b"\n").data == whole
    unwrapper = Unwrapper(MAX_LINE)
    assert unwrapper.feed(b"plain\n(APISe").data == b"plain\n(APISe"
    assert unwrapper.feed(b"rver pid=1)\n").data == b"rver pid=1)\n"


@settings(max_examples=300, deadline=None)
@given(start=st.sampled_from(_STARTS), rest=_text)
def test_decided_bytes_tell_a_wrapped_start(start: str, rest: str) -> None:
    """A line's first DECIDED bytes answer starts_like_wrapped as the whole line does, and a
    line that starts like a wrapped one starts with one of FIRST_BYTES (a plain start is handed
    on before the line ends only then)."""
    line = (start + rest).encode()
    assert starts_like_wrapped(line[:DECIDED]) == starts_like_wrapped(line + b"\n")
    if starts_like_wrapped(line):
        assert line[0] in FIRST_BYTES
