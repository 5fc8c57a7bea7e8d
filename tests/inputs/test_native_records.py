"""Docker JSON and CRI records unwrapped in Rust (native.unwrap_records) against the Python
reader line by line (`Unwrapper._lines_into`): the same text, lines, line map and wrappers, and
the same time and pid for every line the scan reads them for."""

from __future__ import annotations

import io
import itertools
import json
from datetime import datetime
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harmony_doctor import native
from harmony_doctor.inputs import wrappers
from harmony_doctor.inputs.timestamps import HEAD, own_stamp
from harmony_doctor.inputs.wrappers import CLOCK_LINES, Unwrapper
from harmony_doctor.native import use_native
from harmony_doctor.scan import source
from harmony_doctor.scan.core import own_pid
from harmony_doctor.scan.source import scan_source
from tests.scan.scoped_logs import vllm_log

pytestmark = pytest.mark.skipif(
    not use_native(), reason="the Rust extension is not built (or HARMONY_DOCTOR_NATIVE=0)"
)

STAMP = "2026-11-01T00:00:01Z"
STAMPED = "(APIServer pid=7) INFO 11-01 00:00:0{} [logger.py:43] Received request r{}"
_TEXT = st.text(
    alphabet=st.sampled_from(["a", " ", '"', "\\", "/", "\t", "\r", "\x00", "\x1f", "é", "😀"]),
    max_size=12,
)
_TIME = st.sampled_from(
    [
        "2026-11-01T00:00:01Z",
        "2026-11-01T00:00:01.123456789Z",
        "2026-11-01T05:30:01+05:30",
        "2026-11-01T00:00:01-0800",
        "2026-11-01T00:00:01.Z",
        "1795773601",
    ]
)


@st.composite
def _inner(draw: st.DrawFn) -> str:
    """An inner line: stamped as vLLM stamps it (with its pid), or an access line that names
    no pid, Ollama's request line, or any text."""
    shape = draw(st.sampled_from(["stamped", "access", "gin", "text"]))
    if shape == "stamped":
        return STAMPED.format(draw(st.integers(0, 9)), draw(_TEXT))
    if shape == "gin":  # Ollama's request line: its own full date, no pid
        return f'[GIN] 2026/11/01 - 00:00:0{draw(st.integers(0, 9))} | 200 | POST "/api/chat"'

    if shape == "access":
        return 'INFO:     10.0.0.1:5 - "POST /v1/chat/completions HTTP/1.1" 200 OK' + draw(_TEXT)
    return draw(_TEXT)


RECORDS = ["docker", "docker", "cri", "cri", "journal", "journal", "json", "json", "other"]
ANY = [*RECORDS, "piece", "plain", "indented"]
# values a JSON record's fields may hold, the awkward ones too
_ANY_VALUE = st.sampled_from(
    ["4242", "٤٢", "", "x", 4242, -1, 10**18, 1.5, True, None, [1, 2], {"a": [1]}, float("nan")]
)


_JSON_KEYS = [
    "__REALTIME_TIMESTAMP",
    "_PID",
    "__CURSOR",
    "pid",
    "host",
    "ts",
    "timestamp",
    "labels",
    "stream",
    "_HOSTNAME",
]


@st.composite
def _log(draw: st.DrawFn) -> list[str]:
    """Lines of a wrapped log; half of the logs hold whole records only (the Rust path's), and
    the first line sets the log's own clock where its wrapper's time can be read."""
    kinds = RECORDS if draw(st.booleans()) else ANY
    first = draw(_line(["docker", "cri", "journal"], stamped=True))  # sets the own clock
    return [first, *draw(st.lists(_line(kinds), max_size=30))]


@st.composite
def _line(draw: st.DrawFn, kinds: list[str], stamped: bool = False) -> str:
    text, time = draw(_inner()), draw(_TIME)
    if stamped:
        text, time = STAMPED.format(1, "first"), STAMP
    kind = draw(st.sampled_from(kinds))
    if kind == "docker":
        ascii_only = draw(st.booleans())
        log = text + (draw(st.sampled_from(["\n", "\n", "", "\nmore\n"])) if not stamped else "\n")
        record: dict[str, Any] = {
            "log": log,
            "stream": draw(st.sampled_from(["stdout", "stderr"])),
            "time": time,
        }
        return json.dumps(record, separators=(",", ":"), ensure_ascii=ascii_only)
    if kind == "cri":
        return f"{time} {draw(st.sampled_from(['stdout', 'stderr']))} F {text}".rstrip("\n")
    if kind == "journal":
        time = draw(
            st.sampled_from(["Nov  2 10:41:19", "Nov 12 10:41:19.25", STAMP[:19] + "+0000"])
        )
        pid = draw(st.sampled_from(["[4242]", "", "[x]", "[0123456789012345678]"]))
        host = draw(st.sampled_from(["gpu-1 ", "", "gpu:1 ", "gpu[1] ", "vllm[7]: "]))
        return f"{time} {host}vllm{pid}: {text}".replace("\n", " ")
    if kind == "indented":  # a journal message's continuation (or a plain indented line)
        return "                                     " + text.replace("\n", " ")
    if kind == "piece":
        return f"{time} stderr P {text}"
    if kind == "other":  # Docker's record as other tools write it: spaces, more keys
        record = {"log": text + "\n", "stream": "stdout", "time": time}
        if draw(st.booleans()):
            record["attrs"] = {"tag": draw(_ANY_VALUE)}
        return json.dumps(record)
    if kind == "json":  # journald -o json, Vector, Promtail, Fluent Bit: keys in any order
        message = draw(st.sampled_from(["MESSAGE", "message", "line", "log"]))
        record = {message: text + draw(st.sampled_from(["", "\n", "\nmore"]))}
        if message == "MESSAGE" and draw(st.booleans()):
            record[message] = draw(st.sampled_from([list(text.encode()), None, [300], [True]]))
        for key in draw(st.lists(st.sampled_from(_JSON_KEYS), max_size=4)):
            record[key] = draw(_ANY_VALUE)
        keys = list(record)
        ordered = {k: record[k] for k in draw(st.permutations(keys))}
        return json.dumps(ordered, ensure_ascii=draw(st.booleans()))
    return text.replace("\n", " ")


def _read(data: bytes, cuts: list[int], fast: bool) -> tuple[Any, ...]:
    """Everything the scan takes from an Unwrapper, fed `data` cut at `cuts`; the fast one
    hands the rest of any chunk to Rust after its first two lines (a scan: after 64 lines of
    a chunk over 16 KiB), once they started the log's own clock."""
    unwrapper = Unwrapper(max_line=None, own_stamps_first=fast)
    text, facts = b"", {}
    starts = [0, *sorted(c for c in cuts if 0 < c < len(data)), len(data)]
    with mock.patch.multiple(wrappers, CLOCK_LINES=2, CLOCK_BYTES=0):
        pieces = [unwrapper.feed(data[a:b]) for a, b in itertools.pairwise(starts)]
        pieces.append(unwrapper.finish())
    for piece in pieces:
        text += piece.data
        facts.update({m.line: (m.stamp, m.pid) for m in piece.meta})
    lines = text.split(b"\n")
    # what the scan reads of each line: its own stamp and pid first, else the wrapper's
    read = [
        (
            own_stamp(line[:HEAD]) or facts.get(n, (None, None))[0],
            own_pid(line[:HEAD]) or facts.get(n, (None, None))[1],
        )
        for n, line in enumerate(lines, start=1)
    ]
    mapped = [unwrapper.source_line(n) for n in range(1, len(lines) + 1)]
    return text, read, mapped, dict(unwrapper.wrappers), unwrapper.newlines, unwrapper.cut_lines


@settings(max_examples=300, deadline=None)
@given(
    lines=_log(),
    cuts=st.lists(st.integers(0, 3000), max_size=6),
    crlf=st.booleans(),
)
def test_records_read_in_rust_as_python_reads_them(
    lines: list[str], cuts: list[int], crlf: bool
) -> None:
    data = "".join(line + ("\r\n" if crlf else "\n") for line in lines).encode()
    assert _read(data, cuts, fast=True) == _read(data, cuts, fast=False)


def test_a_container_log_in_its_own_clock_is_unwrapped_in_rust(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The equality above is not idle: whole chunks of records do take the Rust path."""
    taken: list[int] = []
    real = native.unwrap_records

    def counted(body: bytes) -> Any:
        found = real(body)
        taken.append(0 if found is None else sum(found[1]))
        return found

    monkeypatch.setattr(wrappers, "unwrap_records", counted)
    log = [STAMPED.format(n % 10, n) for n in range(200)]
    docker = [
        json.dumps({"log": f"{t}\n", "stream": "stdout", "time": STAMP}, separators=(",", ":"))
        for t in log
    ]
    data = "".join(f"{line}\n" for line in docker).encode()
    unwrapper = Unwrapper(own_stamps_first=True)
    out = unwrapper.feed(data[:500]).data + unwrapper.feed(data[500:]).data
    out += unwrapper.finish().data
    assert out.decode().splitlines() == log
    assert sum(taken) > 150


def _wrap(text: str, kind: str) -> bytes:
    """A generated vLLM log as a container runtime stores it (compact JSON, as Docker's
    json-file driver writes it; CRI `F` lines), or as `journalctl -o short-iso` prints it."""
    out = []
    for n, line in enumerate(text.splitlines()):
        time = f"2026-11-01T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}.5Z"
        if kind == "docker":
            record = {"log": line + "\n", "stream": "stderr", "time": time}
            out.append(json.dumps(record, separators=(",", ":")))
        elif kind == "cri":
            out.append(f"{time} stderr F {line}")
        else:
            out.append(f"{time[:19]}+0000 gpu-1 vllm[4242]: {line}")
    return "".join(f"{line}\n" for line in out).encode()


@pytest.mark.parametrize("kind", ["docker", "cri", "journal"])
def test_a_wrapped_log_scans_the_same_with_records_read_in_rust(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _wrap(vllm_log(3, requests=400).text, kind)

    def scanned() -> Any:
        found = scan_source(io.BytesIO(data), "x.log", datetime(2026, 11, 30), replay=True)
        errors = [(e.line, e.kind, e.timestamp, e.pid) for e, _ in found.errors]
        places = [(p.line, p.timestamp, p.pid) for _, p in found.errors]
        return found.lines, dict(found.requests), dict(found.received), errors, places

    fast = scanned()
    read_in_python = scan_source(io.BytesIO(data), "x.log", datetime(2026, 11, 30), True)
    monkeypatch.setattr(source, "Unwrapper", lambda cap, **_: Unwrapper(cap))
    assert fast == scanned()
    assert fast[3] and sum(fast[1].values()) > 300
    # the scan says how many lines took the slow path: those before the log's own clock only
    everything = scan_source(io.BytesIO(data), "x.log", datetime(2026, 11, 30), True)
    assert 0 < read_in_python.python_lines <= CLOCK_LINES and everything.python_lines == fast[0]


def test_a_wrapped_log_without_stamps_of_its_own_is_read_in_python_whole() -> None:
    """No own clock starts: every line of a large chunk is read in Python, at once (not 64 at
    a time, which copied the rest again and again and recursed once per 64 lines)."""
    record = '{{"log":"x{}\\n","stream":"stdout","time":"2026-11-01T00:00:01Z"}}'
    data = "".join(record.format(n) + "\n" for n in range(60_000)).encode()
    fast, reference = Unwrapper(4 << 20, own_stamps_first=True), Unwrapper(4 << 20)
    for unwrapper in (fast, reference):
        unwrapper.feed(data)
    assert fast.python_lines == reference.python_lines == 60_000


def test_a_plain_line_cut_by_the_chunk_is_handed_on_once() -> None:
    """A chunk read before the log's own clock (its first lines one by one, the rest as any
    chunk): the start of a plain line that the chunk cuts was both kept and handed on, and
    came out twice (`((APIServer`). Found by the property above."""
    record = json.dumps(
        {
            "log": "(APIServer pid=7) INFO 11-01 00:00:01 [logger.py:43] Received request a\n",
            "stream": "stdout",
            "time": "2026-11-01T00:00:01Z",
        },
        separators=(",", ":"),
    )
    plain = "(APIServer pid=7) INFO 11-01 00:00:00 [logger.py:43] Received request r"
    data = "\n".join([record, "", plain, plain]).encode() + b"\n"
    cut = data.rindex(b"\n", 0, len(data) - 1) + 2  # one byte into the last line
    text = _read(data, [cut], fast=True)[0]
    assert text == _read(data, [cut], fast=False)[0]
    assert text.count(b"((") == 0 and text.count(plain.encode()) == 2
