"""messages.py: error messages read whole out of wrappers, bodies, escapes and cut lines."""

from __future__ import annotations

import pytest

from harmony_doctor.logs import extract_text
from tests.logs.helpers import only


def test_remainder_cut_by_the_log() -> None:
    error = only(
        'HarmonyError: unexpected tokens remaining in message header: ["We", "need", "to", "Actu'
    )
    assert error.remainder_truncated
    assert error.header_words == ("We", "need", "to", "Actu")
    assert error.reconstructed is not None and "cut by the log" in error.reconstructed


def test_some_form_cut_and_reescaped() -> None:
    cut = only('RuntimeError: unexpected tokens remaining in message header: Some("The user wants')
    assert cut.remainder_truncated and cut.header_words == ("The", "user", "wants")
    again = only(
        r"openai.APIError: unexpected tokens remaining in message header: Some(\"say \\\"hi\\\" "
        r"to=functions.x\")"
    )
    assert again.header_words == ("say", '"hi"', "to=functions.x")
    assert not again.remainder_truncated


def test_rust_debug_escapes_in_words() -> None:
    error = only(
        r'HarmonyError: unexpected tokens remaining in message header: ["caf\u{e9}", "a\"b", "c\\d"]'
    )
    assert error.header_words == ("café", 'a"b', "c\\d")


@pytest.mark.parametrize(
    ("line", "code"),
    [
        ("HarmonyError('Unexpected token 200002 while expecting start token 200006')", "HD111"),
        ("RuntimeError: OpenAI response failed: Unknown role: <|start|>assistant", "HD121"),
        (
            "openai.InternalServerError: Error code: 500 - {'error': {'message': 'Unexpected "
            "token 200012 while expecting start token 200006', 'type': 'InternalServerError', "
            "'param': None, 'code': 500}}",
            "HD113",
        ),
        (
            "ValueError('Streaming response returned an error: unexpected tokens remaining in "
            'message header: Some("to=functions.a <|channel|>commentary")\')',
            "HD103",
        ),
        (
            '{"error":{"message":"channel marker present but no channel value found in header",'
            '"type":"BadRequestError","param":null,"code":400}}',
            "HD131",
        ),
        (
            'data: {"error": {"message": "Unexpected EOS while waiting for message header to '
            'complete", "code": 500}}',
            "HD141",
        ),
        ("E   openai_harmony.HarmonyError: message header did not contain a role", "HD151"),
        ("HarmonyError: could not decode header: invalid utf-8 sequence", "HD161"),
        ("`openai_harmony.HarmonyError: Unknown role: criticcritic`", "HD122"),
    ],
)
def test_wrappers_and_bodies(line: str, code: str) -> None:
    error = only(line)
    assert error.code == code
    assert "Error" not in error.message.split(":")[0] or error.kind == "unknown_role"
    assert not error.message.endswith(("'", '"', "}", ")'"))


def test_unexpected_token_line_cut_short() -> None:
    error = only(
        "(APIServer pid=3) ERROR 03-14 08:09:10 [serving.py:830] HarmonyError: Unexpected token 200012 while expe"
    )
    assert (error.code, error.token) == ("HD113", 200012)


def test_go_escaped_markup_in_an_ollama_body() -> None:
    body = (
        '{"error":"error parsing tool call: raw=\'{\\"a\\": 1}\\u003c|call|\\u003e\', '
        "err=invalid character '\\u003c' after top-level value\"}"
    )
    error = only(body)
    assert error.code == "HD181"
    assert error.context == '{"a": 1}<|call|>'
    assert "<|call|>" in error.message


def test_markup_leaked_into_content() -> None:
    text = '{\n  "content": "<|channel|>final<|message|>Hello",\n  "finish_reason": "stop"\n}\n'
    error = only(text)
    assert (error.code, error.kind, error.severity, error.line) == (
        "HD205",
        "markup_leak",
        "warning",
        2,
    )
    assert extract_text('{"content": "plain answer", "text": "a <b> c"}') == ()


@pytest.mark.parametrize(
    "header",
    [
        'Some("to=f {words}")',  # Rust Debug Some(...)
        "[{listed}]",  # Rust Debug list
        "to=f {words}",  # plain text
    ],
)
def test_a_long_remainder_is_read_as_its_head_and_tail_the_middle_counted(header: str) -> None:
    """A remainder was split into all its words before it was cut to a head and a tail (ten
    lines of a mebibyte: a million words held at once); now only the window is kept."""
    from harmony_doctor.logs.messages import find_hit
    from harmony_doctor.logs.words import HEAD_WORDS, TAIL_WORDS

    count = 5_000
    names = [f"w{n}" for n in range(count)]
    text = header.format(words=" ".join(names), listed=", ".join(f'"{n}"' for n in names))
    line = "openai_harmony.HarmonyError: unexpected tokens remaining in message header: " + text
    hit = find_hit(line)
    assert hit is not None and hit.remainder is not None
    words = hit.remainder.words
    extra = 1 if "to=f" in header else 0
    assert len(words) == HEAD_WORDS + TAIL_WORDS
    assert words[-1] == names[-1] and words[HEAD_WORDS] == names[-TAIL_WORDS]
    assert words[:2] == (("to=f", "w0") if extra else ("w0", "w1"))
    assert hit.remainder.unread == count + extra - HEAD_WORDS - TAIL_WORDS


def test_a_message_in_inline_code_ends_where_the_code_does() -> None:
    """The words after inline code are the writer's (`(a handful of failed requests)`), never
    header words: the message quoted without its remainder names the error."""
    from harmony_doctor.logs import extract_text

    line = (
        "We saw -> `HarmonyError: unexpected tokens remaining in message header` "
        "(a handful of failed requests) on the bench box."
    )
    (error,) = extract_text(line)
    assert error.header_words == () and "handful" not in error.message


def test_a_tally_of_errors_on_one_line_gives_each() -> None:
    """A flattened tally (`3x Unknown role: final 24x unexpected tokens ... 1x could not decode
    header`): an unknown role's message ends with its word, and the next error is read."""
    from harmony_doctor.logs import extract_text

    line = (
        '3x Unknown role: final 24x unexpected tokens remaining in message header: Some("to=x") '
        "1x could not decode header"
    )
    assert [e.code for e in extract_text(line)] == ["HD122", "HD102", "HD161"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "I bet it is the same as above (harmony parser: no reverse mapping found).",
            "harmony parser: no reverse mapping found",
        ),
    ],
)
def test_a_sentence_s_stop_after_the_bracket_that_quoted_a_message_is_not_its_text(
    line: str, message: str
) -> None:
    """pastes3/07: prose quoting the error in brackets ended the message with `).`; HD207's
    own wording (a tool the request did not declare), not a tool call's arguments."""
    error = only(line)
    assert (error.code, error.message) == ("HD207", message)
    assert error.expected == "a call to one of the request's tools"


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("found).", "found"),
        ("x).", "x"),
        ("'<|start|>'.", "'<|start|>'."),  # a quote's balance is not known from a line's rest
        ("found),", "found"),
        ("a (b).", "a (b)."),  # balanced: the sentence's own
        ("e.g.", "e.g."),
        ("version 1.2.", "version 1.2."),
    ],
)
def test_strip_unbalanced_takes_a_stop_only_after_an_unbalanced_closer(
    text: str, kept: str
) -> None:
    from harmony_doctor.logs.remainder import strip_unbalanced

    assert strip_unbalanced(text) == kept
