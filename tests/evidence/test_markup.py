"""evidence/markup.py: markup by where it sits."""

from __future__ import annotations

import json

import pytest

from harmony_doctor.evidence.markup import lists_tokens, quoted_in_prose, stripped_in_json

LOADER = """\
llama_model_loader: - kv  22: tokenizer.ggml.eos_token_ids arr[i32,3] = [199999, 200002, 200012]
load: control token: 200012 '<|call|>' is not marked as EOG
load: control token: 200006 '<|start|>' is not marked as EOG
load: control token: 200008 '<|message|>' is not marked as EOG
print_info: EOG token        = 200002 '<|return|>'
"""


def test_a_loaders_listing_of_special_tokens_is_no_stream() -> None:
    assert lists_tokens(LOADER)
    assert lists_tokens('{"<|start|>": 200006, "<|end|>": 200007, "<|message|>": 200008}')


def test_harmony_output_is_not_a_listing() -> None:
    assert not lists_tokens("<|channel|>final<|message|>Hi<|end|>")
    assert not lists_tokens("no markup at all")


def _body(content: object, reasoning: object = None) -> str:
    message = {"role": "assistant", "content": content, "reasoning_content": reasoning}
    return json.dumps({"choices": [{"index": 0, "message": message}]}, indent=2)


def test_stripped_harmony_in_returned_content_is_a_leak_on_its_line() -> None:
    body = _body("analysisThe user asks.assistantfinalIt is sunny.")
    found = stripped_in_json(body)
    assert found is not None and found.code == "HD206"
    assert found.line == next(
        n for n, line in enumerate(body.split("\n"), start=1) if "analysisThe" in line
    )


def test_clean_content_and_a_request_stay_quiet() -> None:
    assert stripped_in_json(_body("It is sunny.", "The user asks.")) is None
    request = {"messages": [{"role": "assistant", "content": "analysisX.assistantfinalY"}]}
    assert stripped_in_json(json.dumps(request)) is None
    assert stripped_in_json("not json") is None


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ('Its assistant tag in the template is "<|end|><|start|>assistant" and more.', True),
        (
            "Before 1.98 the model would generate\n"
            '"<|channel|>analysis<|message|>" first, then think, then answer.',
            True,
        ),
        ("Use `<|constrain|>json` after the recipient for tool arguments.", True),
        # output: it opens with markup, or holds some outside any quote
        ('<|channel|>final<|message|>He said "hi" to me<|return|>', False),
        ('The model wrote "<|channel|>final" and then <|message|>Hello there friend', False),
        # too few words around the quote to be a sentence
        ('output: "<|channel|>final<|message|>hi"', False),
    ],
)
def test_markup_only_inside_a_sentences_quotes_is_no_output(text: str, quoted: bool) -> None:
    assert quoted_in_prose(text) is quoted
