"""explain on what people paste: requests, error bodies, code, stripped tool calls, counts."""

from __future__ import annotations

import json
import re

import pytest

from harmony_doctor.logs.extract import extract_text
from tests.helpers import SAMPLES, run

MARKUP = "Reply as <|channel|>final<|message|>ok please."


@pytest.mark.parametrize("name", ["seed-chat.json", "tool-chat.json"])
def test_a_chat_request_says_what_it_is_and_points_to_render(name: str) -> None:
    result = run(["explain", str(SAMPLES / name)])
    assert result.exit_code == 2 and result.stdout == ""
    assert "chat request" in result.stderr and "harmony-doctor render" in result.stderr
    assert result.stderr.count("\n") == 1


def _request(role: str, pretty: bool) -> str:
    messages = [
        {"role": "system", "content": "You are helpful."},
        {"role": role, "content": MARKUP},
        {"role": "user", "content": "Thanks."},
    ]
    body = {"model": "gpt-oss-20b", "messages": messages}
    if pretty:
        return json.dumps(body, indent=2)
    lines = ",\n  ".join(json.dumps(m) for m in messages)
    return '{"model": "gpt-oss-20b", "messages": [\n  ' + lines + "\n]}\n"


@pytest.mark.parametrize("pretty", [False, True], ids=["one-line", "pretty"])
@pytest.mark.parametrize("role", ["system", "developer", "user", "tool"])
def test_markup_a_person_wrote_in_a_request_is_no_leak(role: str, pretty: bool) -> None:
    text = _request(role, pretty)
    result = run(["explain", "-"], text)
    assert result.exit_code == 2 and "chat request" in result.stderr
    if not pretty:  # scan's line reader: the message's line names who wrote it
        assert not [e for e in extract_text(text) if e.kind == "markup_leak"]


def test_markup_in_an_assistant_turn_sent_back_is_still_reported() -> None:
    result = run(["explain", "-"], _request("assistant", pretty=False))
    assert result.exit_code == 1 and "HD205" in result.stdout


def test_an_error_body_with_nothing_harmony_is_explained_not_refused() -> None:
    body = '{"error": {"message": "rate limit exceeded", "type": "rate_limit", "code": 429}}'
    result = run(["explain", "-"], body)
    assert result.exit_code == 0 and result.stderr == ""
    assert "NOTHING HARMONY-RELATED" in result.stdout
    assert "JSON document without token ids" in result.stdout


def test_a_json_with_broken_ids_is_still_an_input_error() -> None:
    result = run(["explain", "-"], '{"output_token_ids": [200005, 99999999999]}')
    assert result.exit_code == 2 and "outside the range" in result.stderr


def test_header_footer_and_json_count_the_same_failures() -> None:
    path = str(SAMPLES / "vllm-requests.log")
    text = run(["explain", path]).stdout
    header = int(re.search(r"(\d+) failure\(s\)", text).group(1))  # type: ignore[union-attr]
    tail = re.search(r"(\d+) error\(s\), (\d+) warning\(s\)", text)
    assert tail is not None
    record = json.loads(run(["explain", "-f", "json", path]).stdout)
    in_json = len(record["findings"]) + sum(len(c["findings"]) for c in record["completions"])
    assert header == int(tail.group(1)) + int(tail.group(2)) == in_json == 2


def test_ids_a_python_snippet_holds_are_replayed() -> None:
    snippet = (
        "Repro (vLLM, gpt-oss-20b):\n\n```python\n"
        "generated_tokens = [200005, 17196, 200008, 12194, 0, 200007, 200002]\n```\n"
    )
    result = run(["explain", "-f", "json", "-"], snippet)
    assert result.exit_code == 1
    (finding,) = json.loads(result.stdout)["findings"]
    assert finding["code"] == "HD111" and finding["raise_index"] == 6


def test_constrain_where_start_belongs_has_its_own_cause() -> None:
    line = "openai_harmony.HarmonyError: Unexpected token 200003 while expecting start token 200006"
    logged = json.loads(run(["explain", "-f", "json", "-"], line).stdout)["findings"][0]
    stream = "<|channel|>final<|message|>Hi<|end|><|constrain|>json"
    replayed = json.loads(run(["explain", "-f", "json", "-"], stream).stdout)["findings"][0]
    assert logged["code"] == replayed["code"] == "HD116"
    assert "ordinary text" not in logged["cause"] and "<|constrain|>" in logged["cause"]


@pytest.mark.parametrize(
    "text",
    [
        'commentary to=functions.get_weather json{"city": "Paris"}',
        'analysisNeed the weather.assistantcommentary to=functions.get_weather json{"city": "Oslo"}',
        'assistantcode{"code": "print(1)"}',
        '"content": "analysisUser greets.assistantfinalHello!"',
    ],
)
def test_stripped_markup_of_every_header_shape_is_found(text: str) -> None:
    result = run(["explain", "-f", "json", "-"], text + "\n")
    assert [f["code"] for f in json.loads(result.stdout)["findings"]] == ["HD206"]


def test_words_about_channels_are_not_stripped_markup() -> None:
    result = run(["explain", "-"], 'I will use the commentary channel to send json {"a": 1}\n')
    assert result.exit_code == 0


SHOWN = (
    "<|channel|>analysis<|message|>The user asks why.<|end|>"
    "<|start|>assistant<|channel|>final<|message|>Because."
)


def _codes(text: str) -> list[str]:
    result = run(["explain", "-", "--format", "json"], stdin=text)
    assert result.exit_code in (0, 1), result.stderr
    return [f["code"] for f in json.loads(result.stdout)["findings"]]


@pytest.mark.parametrize(
    "above",
    [
        "The app shows this in the bubble.",
        "gpt-oss answer looks like this",
        "**Observed (in WebUI chat bubble):**",
        "I get this response:",
    ],
)
def test_markup_the_words_above_call_what_an_app_showed_is_a_leak(above: str) -> None:
    assert _codes(f"{above}\n\n```\n{SHOWN}\n```\n") == ["HD205"]


@pytest.mark.parametrize(
    "above",
    [
        "The correct format looks like this:",
        "The model emits the following, which the server should parse:",
        "A typical example of the format:",
    ],
)
def test_markup_the_words_above_call_the_format_is_no_leak(above: str) -> None:
    assert _codes(f"{above}\n\n```\n{SHOWN}\n```\n") == []


def test_a_block_of_another_familys_markup_is_no_leak() -> None:
    text = "The live issue log shows the final unparsed fragment as:\n\n```text\n<|channel> \n```\n"
    assert _codes(text) == []


@pytest.mark.parametrize(
    "glossary",
    [
        "<|channel|> - means the model switched channel. Usually this is:",
        "Some words first.\n\n<|channel|> \u2014 marks a switch of channel, and then:\n\n"
        "The thought channel is where the model reasons before it answers.",
        "- `<|end|>`: ends a message\n- `<|return|>`: ends the reply\n",
    ],
)
def test_a_glossary_of_special_tokens_is_no_completion(glossary: str) -> None:
    assert _codes(glossary) == []


def test_an_eos_in_a_header_from_parsing_the_rendered_prompt_is_a_prompt_fed() -> None:
    """openai/harmony#33: the example renders a conversation for completion and parses those
    very tokens; the parser's `Unexpected EOS while waiting for message header` is the
    prompt's trailing `<|start|>assistant`, not a max_tokens cut (HD141)."""
    error = "HarmonyError: Unexpected EOS while waiting for message header to complete\n"
    code = (
        "tokens = enc.render_conversation_for_completion(convo, Role.ASSISTANT)\n"
        "parsed = enc.parse_messages_from_completion_tokens(tokens, role=Role.ASSISTANT)\n"
    )
    assert _codes(error + "\n```\n" + code + "```\n") == ["HD143"]
    assert _codes(error) == ["HD141"]
    ids = "[200006, 17360, 200008, 3575, 553, 200007, 200006, 173781]"  # <|start|>system...
    assert _codes(error + f"\ntokens = {ids}\n") == ["HD143"]
    completion = "[200005, 35644, 200008, 3575, 553, 200007, 200006, 173781]"
    assert "HD143" not in _codes(error + f"\ntokens = {completion}\n")
