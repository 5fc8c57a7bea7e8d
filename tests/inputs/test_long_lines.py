"""Long lines: read whole by the whole-input readers, cut and counted by scan's unwrapper."""

from __future__ import annotations

import pytest

from harmony_doctor.inputs.files import MAX_LINE
from harmony_doctor.inputs.wrappers import Unwrapper
from tests.inputs import wrapping


def _unwrap(unwrapper: Unwrapper, data: bytes, chunk: int = 1 << 20) -> bytes:
    out = [unwrapper.feed(data[i : i + chunk]).data for i in range(0, len(data), chunk)]
    return b"".join([*out, unwrapper.finish().data])


@pytest.mark.parametrize("size", [MAX_LINE + 1, 2 * MAX_LINE + 5000, 3 * MAX_LINE])
def test_without_a_cap_a_plain_line_is_kept_whole(size: int) -> None:
    data = b"a" * size + b" end\nnext\n"
    unwrapper = Unwrapper()
    assert _unwrap(unwrapper, data) == data
    assert unwrapper.cut_lines == 0


def test_without_a_cap_a_split_docker_record_is_kept_whole() -> None:
    line = "x" * (MAX_LINE + (1 << 20)) + " HarmonyError: end"
    unwrapper = Unwrapper()
    assert _unwrap(unwrapper, wrapping.docker([line, "after"])) == f"{line}\nafter\n".encode()
    assert unwrapper.cut_lines == 0


@pytest.mark.parametrize("size", [3 * MAX_LINE, 5 * MAX_LINE])
def test_with_a_cap_a_long_plain_line_is_cut_and_counted(size: int) -> None:
    data = b"a" * size + b"\nnext\n" + b"b" * size + b"\n"
    unwrapper = Unwrapper(MAX_LINE)
    out = _unwrap(unwrapper, data)
    assert out.split(b"\n") == [b"a" * MAX_LINE, b"next", b"b" * MAX_LINE, b""]
    assert unwrapper.cut_lines == 2


def test_with_a_cap_a_long_split_record_is_cut_and_counted_once() -> None:
    line = "x" * (MAX_LINE + 3 * (1 << 20))
    unwrapper = Unwrapper(MAX_LINE)
    assert _unwrap(unwrapper, wrapping.docker([line, "after"])) == b"x" * MAX_LINE + b"\nafter\n"
    assert unwrapper.cut_lines == 1
