"""evidence/prose.py: what a description names."""

from __future__ import annotations

import pytest

from harmony_doctor.evidence.prose import described


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("With tools on, the reasoning ends up in the content field.", "HD205"),
        ("the analysis text shows up in the final answer every time", "HD205"),
        ("reasoning_content is always null for gpt-oss", "HD205"),
        ("I see <|channel|> tokens in the tool call name", "HD205"),
        ("the tool call arguments are not valid JSON half the time", "HD180"),
        ("when streaming, the server fails to parse the model's tool calls", "HD180"),
        ("the reasoning output appears inline in the chat as raw channel markup", "HD205"),
        ("the final answer is displayed as raw harmony tags in Open WebUI", "HD205"),
    ],
)
def test_a_description_names_its_rule(text: str, code: str) -> None:
    found = described(text)
    assert found is not None and found.code == code and found.paste


@pytest.mark.parametrize(
    "text",
    [
        "The server starts fine and answers quickly.",
        "How do I set max_tokens for gpt-oss?",
        # a parser's position and another family's markup: no sentence about a tool call
        'got exception: {"message":"Failed to parse input at pos 12: </tool_call>"}',
        "the reply appears as plain text",
    ],
)
def test_other_prose_names_nothing(text: str) -> None:
    assert described(text) is None


def test_a_sentence_quoting_the_markup_the_reply_held_is_evidence() -> None:
    from harmony_doctor.evidence.prose import said_with_markup

    text = "Setup notes.\nThe model's response may include things such as <|channel|>, always."
    said = said_with_markup(text)
    assert said is not None and said[0] == 2 and said[2].code == "HD205"
    assert said_with_markup("The reasoning ends up in the content field.") is None
    assert said_with_markup('{"content": "the response includes <|channel|>"}') is None
