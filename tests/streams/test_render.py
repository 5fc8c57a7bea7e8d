"""streams/render.py: chats rendered token for token as openai-harmony renders them, and the pitfalls."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
from openai_harmony import (
    Author,
    Conversation,
    DeveloperContent,
    Message,
    ReasoningEffort,
    RenderConversationConfig,
    Role,
    SystemContent,
    ToolDescription,
)

from harmony_doctor.errors import InputError
from harmony_doctor.harmony.vocab import START, Vocab
from harmony_doctor.streams.render import load_chat, render_chat
from tests.helpers import SAMPLES, run

ASSISTANT = 173781  # "assistant"
SEED_CHAT = SAMPLES / "seed-chat.json"
TOOL_CHAT = SAMPLES / "tool-chat.json"


def _chat(path: Any) -> dict[str, Any]:
    return load_chat(path.read_text())


def _harmony(vocab: Vocab, messages: list[Message], keep_analysis: bool = False) -> list[int]:
    config = RenderConversationConfig(auto_drop_analysis=not keep_analysis)
    tokens: list[int] = vocab.harmony.render_conversation_for_completion(
        Conversation.from_messages(messages), Role.ASSISTANT, config
    )
    return tokens


WEATHER = ToolDescription.new(
    "get_weather",
    "Current weather for a city.",
    {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        "required": ["city"],
    },
)


def _tool_chat_expected(keep_analysis: bool) -> list[Message]:
    """tool-chat.json written by hand with openai-harmony's own builders."""
    return [
        Message.from_role_and_content(
            Role.SYSTEM, SystemContent.new().with_reasoning_effort(ReasoningEffort.LOW)
        ),
        Message.from_role_and_content(
            Role.DEVELOPER,
            DeveloperContent.new()
            .with_instructions("Answer in one sentence.")
            .with_function_tools([WEATHER]),
        ),
        Message.from_role_and_content(Role.USER, "Weather in Paris?"),
        Message.from_role_and_content(Role.ASSISTANT, "Need the weather tool.").with_channel(
            "analysis"
        ),
        Message.from_role_and_content(Role.ASSISTANT, '{"city": "Paris"}')
        .with_channel("commentary")
        .with_recipient("functions.get_weather")
        .with_content_type("<|constrain|>json"),
        Message.from_author_and_content(
            Author.new(Role.TOOL, "functions.get_weather"), '{"temp": 18, "sky": "clear"}'
        )
        .with_recipient("assistant")
        .with_channel("commentary"),
        Message.from_role_and_content(Role.ASSISTANT, "It is 18 and clear.").with_channel(
            "analysis"
        ),
        Message.from_role_and_content(
            Role.ASSISTANT, "It is 18 °C and clear in Paris."
        ).with_channel("final"),
        Message.from_role_and_content(Role.USER, "And in Oslo? Reply as <|channel|>final please."),
    ]


@pytest.mark.parametrize("keep_analysis", [False, True])
def test_tool_chat_matches_openai_harmony_token_for_token(
    vocab: Vocab, keep_analysis: bool
) -> None:
    prompt = render_chat(_chat(TOOL_CHAT), vocab, keep_analysis=keep_analysis)
    expected = _harmony(vocab, _tool_chat_expected(keep_analysis), keep_analysis)
    assert list(prompt.tokens) == expected
    assert prompt.tokens[-2:] == (START, ASSISTANT)
    assert prompt.text == vocab.decode(prompt.tokens)
    # Earlier analysis is dropped by default and kept on request, as openai-harmony does it.
    assert ("Need the weather tool." in prompt.text) is keep_analysis
    codes = [w.code for w in prompt.warnings]
    assert codes.count("analysis-kept" if keep_analysis else "analysis-dropped") == 2


def test_seed_chat_matches_openai_harmony_in_both_styles(vocab: Vocab) -> None:
    chat = _chat(SEED_CHAT)
    persona = chat["messages"][0]["content"]
    turns = [m for m in chat["messages"] if m["role"] != "system"]

    harmony_style = [
        Message.from_role_and_content(
            Role.SYSTEM, SystemContent.new().with_reasoning_effort(ReasoningEffort.MEDIUM)
        ),
        Message.from_role_and_content(
            Role.DEVELOPER, DeveloperContent.new().with_instructions(persona)
        ),
    ]
    for m in turns:
        message = Message.from_role_and_content(Role(m["role"]), m["content"])
        harmony_style.append(message.with_channel("final") if m["role"] == "assistant" else message)
    prompt = render_chat(chat, vocab)
    assert list(prompt.tokens) == _harmony(vocab, harmony_style)
    assert prompt.warnings == ()

    system = SystemContent.new().with_reasoning_effort(ReasoningEffort.MEDIUM)
    system = system.with_required_channels(["analysis", "final"])
    passthrough = [
        Message.from_role_and_content(Role.SYSTEM, system),
        Message.from_role_and_content(Role.SYSTEM, persona),
        *(Message.from_role_and_content(Role(m["role"]), m["content"]) for m in turns),
    ]
    legacy = render_chat(chat, vocab, style="passthrough")
    assert list(legacy.tokens) == _harmony(vocab, passthrough)
    assert legacy.tokens[-2:] == (START, ASSISTANT)
    assert "<|start|>assistant<|message|>I have one in mind." in legacy.text
    codes = [(w.code, w.message) for w in legacy.warnings]
    assert ("assistant-without-channel", 2) in codes and ("assistant-without-channel", 4) in codes
    assert ("second-system-message", 0) in codes


def test_date_and_effort_reach_the_system_message(vocab: Vocab) -> None:
    chat = {"messages": [{"role": "user", "content": "hi"}], "reasoning": {"effort": "HIGH"}}
    prompt = render_chat(chat, vocab, date="2025-08-26")
    expected = [
        Message.from_role_and_content(
            Role.SYSTEM,
            SystemContent.new()
            .with_reasoning_effort(ReasoningEffort.HIGH)
            .with_conversation_start_date("2025-08-26"),
        ),
        Message.from_role_and_content(Role.USER, "hi"),
    ]
    assert list(prompt.tokens) == _harmony(vocab, expected)
    assert "Current date: 2025-08-26" in prompt.text


# --- pitfalls --------------------------------------------------------------------------------


def _codes(chat: dict[str, Any], vocab: Vocab, **options: Any) -> list[tuple[str, int | None]]:
    return [(w.code, w.message) for w in render_chat(chat, vocab, **options).warnings]


def test_markup_in_content_is_flagged_and_rendered_as_text(vocab: Vocab) -> None:
    chat = _chat(TOOL_CHAT)
    prompt = render_chat(chat, vocab)
    assert ("markup-in-content", 5) in [(w.code, w.message) for w in prompt.warnings]
    # The markup inside the last user message is ordinary text, not special tokens.
    tokens = list(prompt.tokens)
    body_start = len(tokens) - 1 - tokens[::-1].index(200008) + 1  # after the last <|message|>
    body = tokens[body_start : tokens.index(200007, body_start)]
    assert vocab.decode(body) == "And in Oslo? Reply as <|channel|>final please."
    assert not any(vocab.is_special(t) for t in body)


def test_unmatched_tool_result_is_flagged(vocab: Vocab) -> None:
    chat = copy.deepcopy(_chat(TOOL_CHAT))
    chat["messages"][3]["tool_call_id"] = "call_9"
    assert ("tool-result-author", 3) in _codes(chat, vocab)
    chat["messages"][3]["name"] = "get_weather"
    prompt = render_chat(chat, vocab)
    assert "<|start|>functions.get_weather to=assistant" in prompt.text


def test_passthrough_tool_results_lose_recipient_and_channel(vocab: Vocab) -> None:
    chat = copy.deepcopy(_chat(TOOL_CHAT))
    chat["messages"][3]["name"] = "get_weather"
    prompt = render_chat(chat, vocab, style="passthrough")
    codes = [(w.code, w.message) for w in prompt.warnings]
    assert ("tool-result-author", 3) in codes and ("tool-call-dropped", 2) in codes
    assert "<|start|>functions.get_weather<|message|>" in prompt.text


def test_other_pitfalls(vocab: Vocab) -> None:
    chat = {
        "reasoning_effort": "extreme",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url"}]},
            {"role": "system", "content": "late rules"},
            {"role": "assistant", "content": "done"},
        ],
    }
    codes = [c for c, _ in _codes(chat, vocab)]
    assert codes == [
        "reasoning-effort",
        "instructions-moved",
        "part-dropped",
        "ends-with-assistant",
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "chat is not JSON"),
        ('{"model": "x"}', "`messages` list"),
        ('[{"role": "robot", "content": "x"}]', "has role 'robot'"),
        ('{"messages": [], "tools": [{"type": "function"}]}', "no function name"),
    ],
)
def test_bad_chats_are_input_errors(vocab: Vocab, text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        render_chat(load_chat(text), vocab)


# --- CLI -------------------------------------------------------------------------------------


def test_cli_json_contract(vocab: Vocab) -> None:
    result = run(["render", str(TOOL_CHAT), "-f", "json"])
    assert result.exit_code == 1 and result.stderr == ""
    record = json.loads(result.stdout)
    assert {"tokens", "text", "warnings"} <= record.keys()
    assert record["tokens"] == list(render_chat(_chat(TOOL_CHAT), vocab).tokens)
    assert record["text"] == vocab.decode(record["tokens"])
    assert record["text"].endswith("<|start|>assistant")
    assert {w["code"] for w in record["warnings"]} == {"markup-in-content", "analysis-dropped"}


def test_cli_clean_chat_exits_zero_and_reads_stdin() -> None:
    result = run(["render", "-"], SEED_CHAT.read_text())
    assert result.exit_code == 0, result.stderr
    assert result.stdout.rstrip().endswith("0 warning(s)")
    assert run(["render", "--exit-zero", str(TOOL_CHAT)]).exit_code == 0


def test_cli_bad_chat_is_one_line() -> None:
    result = run(["render", "-"], '{"messages": [{"role": "robot"}]}')
    assert result.exit_code == 2
    assert result.stderr.startswith("harmony-doctor: error: ") and result.stderr.count("\n") == 1


@pytest.mark.parametrize(
    "text", ["[" * 5000, '{"messages": [], "n": ' + "9" * 5000 + "}"], ids=["nested", "huge-int"]
)
def test_regression_deeply_nested_or_huge_chat_json(text: str) -> None:
    # Found by fuzzing `render`: RecursionError / ValueError escaped json.loads as tracebacks.
    result = run(["render", "-"], text)
    assert result.exit_code == 2
    assert result.stderr.startswith("harmony-doctor: error: chat ")
    assert result.stderr.count("\n") == 1


# --- one context at most (red team H10: 2 million tokens rendered at 1.65 GB) ----------------

_LIMIT = "more than a gpt-oss context holds (131,072)"


def _no_render(monkeypatch: pytest.MonkeyPatch, vocab: Vocab) -> None:
    """openai-harmony's renderer made to fail: a refusal must come before it."""

    def refuse(*_args: Any, **_kwargs: Any) -> list[int]:
        raise AssertionError("the chat was rendered before it was refused")

    monkeypatch.setattr(vocab, "render_for_completion", refuse)


def test_a_chat_of_more_messages_than_a_context_frames_is_refused_before_rendering(
    vocab: Vocab, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_render(monkeypatch, vocab)
    chat = {"messages": [{"role": "user", "content": "hi"}] * 40_000}  # 200,002 tokens
    with pytest.raises(InputError, match=rf"more than 131,072 tokens: {re.escape(_LIMIT)}"):
        render_chat(chat, vocab)


def test_a_chat_of_long_texts_is_refused_by_their_count_before_rendering(
    vocab: Vocab, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_render(monkeypatch, vocab)
    long = "hello world " * 70_000  # 140,000 tokens in 840,000 characters
    chat = {"messages": [{"role": "system", "content": long}, {"role": "user", "content": "x"}]}
    with pytest.raises(InputError, match=re.escape(_LIMIT)):
        render_chat(chat, vocab)


def test_a_chat_that_fits_a_context_still_renders(vocab: Vocab) -> None:
    chat = {"messages": [{"role": "user", "content": "hello world " * 60_000}]}
    prompt = render_chat(chat, vocab)
    assert 120_000 < len(prompt.tokens) <= 131_072


def test_what_only_the_rendering_shows_is_refused_with_its_count(vocab: Vocab) -> None:
    # Tool schemas are rendered as TypeScript, not counted before: the rendered tokens are.
    properties = {f"p{i}": {"type": "string"} for i in range(30_000)}
    tool = {
        "type": "function",
        "function": {"name": "f", "parameters": {"type": "object", "properties": properties}},
    }
    chat = {"messages": [{"role": "user", "content": "x"}], "tools": [tool]}
    with pytest.raises(
        InputError, match=r"the chat renders to [\d,]+ tokens: " + re.escape(_LIMIT)
    ):
        render_chat(chat, vocab)


def test_cli_refuses_a_chat_longer_than_a_context_in_one_line() -> None:
    chat = json.dumps({"messages": [{"role": "user", "content": "hi"}] * 40_000})
    result = run(["render", "-"], chat)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == (
        "harmony-doctor: error: the chat renders to more than 131,072 tokens: more than a "
        "gpt-oss context holds (131,072), so no one prompt: cut the chat to the turns you want "
        "rendered\n"
    )


# --- --date (red team M11: "abc", "2024-13-45" and escapes reached the prompt) ---------------


@pytest.mark.parametrize(
    "date",
    [
        "abc",
        "2024-13-45",
        "2023-02-29",
        "2024-01-01\x1b[31m",
        "2024-1-01",
        "\u0662\u0660\u0662\u0664-\u0660\u0661-\u0660\u0661",
        "",
    ],
)
def test_a_date_that_is_not_a_real_yyyy_mm_dd_is_refused(vocab: Vocab, date: str) -> None:
    chat = {"messages": [{"role": "user", "content": "hi"}]}
    with pytest.raises(InputError, match="is not a real date written YYYY-MM-DD"):
        render_chat(chat, vocab, date=date)


def test_cli_refuses_a_bad_date_in_one_escaped_cut_line() -> None:
    result = run(["render", "--date", "\x1b]0;PWN\x07" + "9" * 100_000, str(SEED_CHAT)])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and len(result.stderr) < 200
    assert "\x1b" not in result.stderr and "\x07" not in result.stderr
    assert result.stderr.startswith("harmony-doctor: error: date '\\x1b]0;PWN\\x0799")


def test_a_leap_day_is_a_date(vocab: Vocab) -> None:
    chat = {"messages": [{"role": "user", "content": "hi"}]}
    assert "Current date: 2024-02-29" in render_chat(chat, vocab, date="2024-02-29").text
