"""numbered_lines and stripped_bounds read a text as str.splitlines() and str.strip() do, at any
block size, without a second copy of the text."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from harmony_doctor.inputs.text_lines import LINE_BREAKS, numbered_lines, stripped_bounds

_TEXT = st.lists(st.sampled_from([*LINE_BREAKS, "\r\n", " ", "\t", "a", "b", "é"])).map("".join)


@given(_TEXT, st.integers(1, 8))
def test_numbered_lines_are_splitlines_at_any_block(text: str, block: int) -> None:
    assert list(numbered_lines(text, block)) == list(enumerate(text.splitlines(), start=1))


@given(_TEXT, st.integers(1, 8))
def test_stripped_bounds_are_strip_at_any_block(text: str, block: int) -> None:
    start, end = stripped_bounds(text, block)
    assert text[start:end] == text.strip()


def test_a_crlf_across_a_block_is_one_line_end() -> None:
    text = "ab\r\ncd\r\n\r\nef"
    for block in range(1, len(text) + 2):
        assert [line for _, line in numbered_lines(text, block)] == ["ab", "cd", "", "ef"]
