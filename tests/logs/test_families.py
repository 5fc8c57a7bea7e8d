"""families.py: another model family's tool-call markup, told from Harmony's."""

from __future__ import annotations

import pytest

from harmony_doctor.logs.families import shows_another_family


@pytest.mark.parametrize(
    "text",
    [
        "Failed to parse input at pos 12: </tool_call>",
        'Failed to parse input at pos 0: [TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}',
        "unparsed peg-native output: <tool_call>\n<function=read_file>",
        '"content": "\\u003cfunction=bash\\u003e"',
    ],
)
def test_another_familys_markup(text: str) -> None:
    assert shows_another_family(text)


@pytest.mark.parametrize(
    "text",
    [
        "Failed to parse input at pos 0: <|channel|>analysis<|message|><tool_call>",
        "gpt-oss-20b: <function=f>",  # the model's name is a sign of Harmony
        "Failed to parse input at pos 3: to=functions.f",
        "no markup at all",
    ],
)
def test_harmony_or_no_markup_is_not_another_family(text: str) -> None:
    assert not shows_another_family(text)
