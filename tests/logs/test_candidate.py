"""candidate.py: what a line says around an error message: a caller's words quoting it (a
request's user, system, developer or tool message) are someone asking about the error, never a
failure; the same words a server raised, or an assistant's output it quotes, are one."""

from __future__ import annotations

import json

import pytest

from harmony_doctor.logs import extract_text
from tests.logs.helpers import LEFTOVER_SOME

ERROR = f"openai_harmony.HarmonyError: {LEFTOVER_SOME}"
RAISED = "Unexpected token 200002 while expecting start token 200006"


def codes(text: str) -> list[str]:
    return [e.code for e in extract_text(text)]


@pytest.mark.parametrize("role", ["user", "system", "developer", "tool"])
def test_an_error_in_a_chat_messages_content_is_a_question(role: str) -> None:
    body = {"messages": [{"role": role, "content": f"My server says {ERROR}, why?"}]}
    assert codes(json.dumps(body)) == []


def test_an_error_in_a_content_part_or_a_python_repr_is_a_question() -> None:
    parts = {"role": "user", "content": [{"type": "text", "text": f"I get {ERROR}"}]}
    assert codes(json.dumps({"messages": [parts]})) == []
    logged = f"litellm request: messages=[{{'role': 'user', 'content': 'I get {ERROR}'}}]"
    assert codes(logged) == []


def test_an_error_in_a_request_logged_inside_a_json_string_is_a_question() -> None:
    inner = json.dumps({"messages": [{"role": "user", "content": f"why {ERROR}"}]})
    assert codes(json.dumps({"log": f"request body: {inner}\n"})) == []


@pytest.mark.parametrize("header", ["user", "system", "developer", "functions.lookup to=assistant"])
def test_an_error_in_a_rendered_prompts_callers_message_is_a_question(header: str) -> None:
    prompt = f"<|start|>{header}<|message|>I see {ERROR} in my logs<|end|><|start|>assistant"
    line = f"INFO 11-28 10:15:03 [logger.py:43] Received request chatcmpl-1: prompt: '{prompt}'"
    assert codes(line) == []


def test_the_error_a_server_raised_stays_a_failure_beside_a_request() -> None:
    prompt = "<|start|>user<|message|>What is the weather?<|end|><|start|>assistant"
    log = (
        f"INFO Received request chatcmpl-1: prompt: '{prompt}'\n"
        f"ERROR [serving_chat.py:1145] {ERROR}\n"
    )
    assert codes(log) == ["HD102"]


def test_an_assistants_output_quoted_with_the_error_stays_a_failure() -> None:
    output = "<|start|>assistant<|channel|>final<|message|>Hello"
    line = f'ERROR parse failed for "{output}": {RAISED}'
    assert codes(line) == ["HD111"]
    body = {"role": "assistant", "content": f"raw: {ERROR}"}
    assert codes(json.dumps(body)) == ["HD102"]


def test_an_error_body_is_no_callers_message() -> None:
    body = {"error": {"message": ERROR, "type": "BadRequestError", "code": 400}}
    assert codes(json.dumps(body)) == ["HD102"]


def test_an_error_in_inline_code_in_a_chat_messages_content_is_a_question() -> None:
    body = {"messages": [{"role": "user", "content": f"My server logs `{ERROR}` - why?"}]}
    assert codes(json.dumps(body)) == []
