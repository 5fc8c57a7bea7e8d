"""The failure forms current servers write: vLLM's recovered-failure warning, bare remainders."""

from __future__ import annotations

import pytest

from harmony_doctor.faults.rules import RULES
from harmony_doctor.logs import extract_text

RECOVERED = "Harmony parser ended in a non-terminal state; returning the recovered raw output."


@pytest.mark.parametrize(
    ("line", "server", "pid"),
    [
        (f"(APIServer pid=12) WARNING 07-02 10:00:00 [harmony.py:161] {RECOVERED}", "vllm", 12),
        (f"WARNING 07-02 10:00:00 [harmony.py:161] {RECOVERED}", "vllm", None),
        (f"2026-07-02 10:00:00,123 - vllm.parser.harmony - WARNING - {RECOVERED}", "vllm", None),
        (f"[2026-07-02 10:00:00] WARNING: {RECOVERED}", None, None),
        (RECOVERED, None, None),
    ],
)
def test_recovered_raw_output_warning_is_a_failure(line: str, server: str, pid: int | None) -> None:
    (error,) = extract_text(line)
    assert (error.code, error.kind, error.severity) == ("HD176", "recovered_raw_output", "error")
    assert (error.server, error.pid, error.line) == (server, pid, 1)


def test_recovered_raw_output_counted_once_per_occurrence() -> None:
    line = f"(APIServer pid=7) WARNING 07-02 10:00:00 [harmony.py:161] {RECOVERED}"
    errors = extract_text("\n".join([line, line, "INFO ok", line]))
    assert [e.line for e in errors] == [1, 2, 4]


def test_recovered_raw_output_wrapped_by_a_terminal_is_one_failure() -> None:
    errors = extract_text(
        "Harmony parser ended in a\nnon-terminal state; returning the recovered raw output."
    )
    assert [(e.line, e.code) for e in errors] == [(1, "HD176")]


@pytest.mark.parametrize(
    ("text", "remainder"),
    [
        (
            'The header was Some("<|constrain|>json to=functions.x")',
            "<|constrain|>json to=functions.x",
        ),
        ('`["<|start|>assistant", "to=functions.x"]`', "<|start|>assistant to=functions.x"),
        ('> Some(\\"<|channel|>final json\\")', "<|channel|>final json"),
    ],
)
def test_header_remainder_quoted_alone_is_recognised(text: str, remainder: str) -> None:
    (error,) = extract_text(text)
    assert error.kind == "header_leftover"
    assert error.header_remainder == remainder


@pytest.mark.parametrize(
    "text",
    [
        '"stop": ["<|call|>", "<|return|>"]',
        'tokens = ["<|start|>", "<|end|>"]',
        'ids ["a", "b"] and Some("plain words")',
        '["assistant", "to=functions.x"]',
    ],
)
def test_ordinary_lists_are_not_failures(text: str) -> None:
    assert extract_text(text) == ()


def test_quoted_remainder_after_its_error_is_one_failure() -> None:
    error = (
        "openai_harmony.HarmonyError: unexpected tokens remaining in message header: "
        'Some("<|constrain|>json to=functions.x")'
    )
    errors = extract_text(
        f'{error}\nthe header left over: Some("<|constrain|>json to=functions.x")'
    )
    assert len(errors) == 1


@pytest.mark.parametrize(
    "text",
    [
        "analysisGreet back.assistantfinalHi there!",
        "(APIServer pid=1) INFO 07-01 10:00:00 [logger.py:71] Generated response chatcmpl-1: "
        "output: 'analysisThe user greets.assistantfinalHello!', finish_reason: stop",
        "analysisNeed the weather.assistantcommentary to=functions.get_weather json{}",
    ],
)
def test_text_with_special_tokens_stripped_is_recognised(text: str) -> None:
    from harmony_doctor.explain import LogExplanation, explain_text

    found = explain_text(text)
    assert isinstance(found, LogExplanation)
    (error,) = found.errors
    assert (error.code, error.kind) == ("HD206", "stripped_markup")
    assert "cannot be replayed" in error.found
    assert "token ids" in RULES[error.code].fix


@pytest.mark.parametrize(
    "text", ["hello world", "The final answer is an analysis of data", "analysis: fine"]
)
def test_ordinary_text_is_not_stripped_harmony(text: str) -> None:
    from harmony_doctor.explain import LogExplanation, explain_text

    found = explain_text(text)
    assert isinstance(found, LogExplanation) and found.errors == ()


# vLLM's Responses API refusing a recipient (vllm-project/vllm#24170, #25003, #28470): as a
# traceback's last line behind a CI prefix and an exception-group gutter, and as the body of the
# 400 a client raised.
@pytest.mark.parametrize(
    ("text", "recipient"),
    [
        (
            '[2025-11-11T09:29:33Z] (APIServer pid=10560)     \\|   File "/usr/local/lib/'
            'python3.12/dist-packages/vllm/entrypoints/harmony_utils.py", line 435, in '
            "parse_output_message\n"
            '[2025-11-11T09:29:33Z] (APIServer pid=10560)     \\|     raise ValueError(f"Unknown '
            'recipient: {recipient}")\n'
            "[2025-11-11T09:29:33Z] (APIServer pid=10560)     \\| ValueError: Unknown recipient: "
            "<\\|constrain\\|>functions.get_horoscope",
            "<|constrain|>functions.get_horoscope",
        ),
        (
            "E               openai.BadRequestError: Error code: 400 - {'error': {'message': "
            "'Unknown recipient: None', 'type': 'BadRequestError', 'param': None, 'code': 400}}",
            "None",
        ),
    ],
)
def test_vllm_unknown_recipient_is_the_servers_refusal(text: str, recipient: str) -> None:
    errors = [e for e in extract_text(text.replace("\\|", "|")) if e.code == "HD185"]
    assert len(errors) == 1
    (error,) = errors
    assert (error.kind, error.severity) == ("server_rejected", "error")
    assert error.message == f"Unknown recipient: {recipient}"
    assert recipient in error.found


def test_an_unknown_recipient_of_another_program_is_not_harmony() -> None:
    assert extract_text("WARN mail: Unknown recipient: bob@example.com, message dropped") == ()
