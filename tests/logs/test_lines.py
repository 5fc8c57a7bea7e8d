"""lines.py: record prefixes of every shape, paste damage, terminal wraps."""

from __future__ import annotations

import random

import pytest

from harmony_doctor.logs import extract_text
from harmony_doctor.logs.lines import (
    _ANY_PREFIX,
    _PREFIXES,
    _anatomize_python,
    anatomize,
    anatomize_reference,
)
from tests.logs.helpers import LEFTOVER_SOME, only, prefixed, traceback_lines

PREFIXES = {
    "vllm-new": "(APIServer pid=4242) ERROR 03-14 08:09:10 [serving.py:830] ",
    "vllm-old": "(APIServer pid=4242) ERROR 03-14 08:09:10 [serving_chat.py:1001] ",
    "vllm-no-time": "(APIServer pid=4242) ERROR [serving.py:830] ",
    "vllm-no-bracket": "ERROR 03-14 08:09:10 serving_chat.py:1001] ",
    "vllm-no-pid": "ERROR 03-14 08:09:10 [serving_chat.py:1001] ",
    "vllm-source-only": "[serving_chat.py:1001] ",
    "docker": "gptoss-vllm-1  | (APIServer pid=4242) ERROR 03-14 08:09:10 [serving.py:830] ",
    "stripped": "",
    "indented": "      ",
    "blockquote": "> ",
}


@pytest.mark.parametrize("name", sorted(PREFIXES))
def test_traceback_under_any_prefix(name: str) -> None:
    error = only(prefixed(traceback_lines(LEFTOVER_SOME), PREFIXES[name]))
    assert (error.line, error.span) == (7, (2, 7))
    assert (error.kind, error.code) == ("header_leftover", "HD102")
    assert error.message == LEFTOVER_SOME
    assert error.header_words == ("to=functions.get_time",)
    assert error.harmony_version == ">=0.0.5"
    assert error.server == "vllm"
    if "pid" in PREFIXES[name]:
        assert error.pid == 4242
    if "08:09:10" in PREFIXES[name]:
        assert error.timestamp == "03-14 08:09:10"


def test_markdown_curly_quotes_and_init_py() -> None:
    text = "\n".join(
        [
            "```",
            "Traceback (most recent call last):",
            '  File "/x/site-packages/openai_harmony/init.py", line 612, in process',
            "    self._inner.process(token)",
            "openai_harmony.HarmonyError: unexpected tokens remaining in message header: "
            "[\u201canalysis\u201d, \u201cthen\u201d]",
            "```",
            "and later `HarmonyError: Unknown role: assistantassistant` in the UI",
        ]
    )
    first, second = extract_text(text)
    assert first.header_words == ("analysis", "then")
    assert first.harmony_version == "0.0.1-0.0.2"
    assert (second.line, second.code) == (7, "HD121")


def test_error_line_wrapped_by_the_terminal() -> None:
    line = 'openai_harmony.HarmonyError: unexpected tokens remaining in message header: ["We", "must", "refuse.", "The", "user", "asks"]'
    wrapped = [line[i : i + 80] for i in range(0, len(line), 80)]
    error = only("\n".join([*traceback_lines("x")[:-1], *wrapped]))
    assert error.line == 7
    assert error.header_words == ("We", "must", "refuse.", "The", "user", "asks")
    assert not error.remainder_truncated
    assert error.code == "HD101"


# llama-server's lines (tools/server: `srv  %12.*s: `, `slot %12.*s: id %2d | task %d | `,
# `que  `, `res  `: the function's name right-aligned in 12 columns, cut at 12), bare or after
# the uptime and level letter of `--log-prefix --log-timestamps`: (line, prefix, text)
LLAMA_SERVER = [
    (
        "slot launch_slot_: id  0 | task 8 | processing task",
        "slot launch_slot_: id  0 | task 8 | ",
        "processing task",
    ),
    (
        "srv  log_server_r: request: POST /v1/chat/completions 127.0.0.1 200",
        "srv  log_server_r: ",
        "request: POST /v1/chat/completions 127.0.0.1 200",
    ),
    (
        'srv    operator(): got exception: {"code":500,"message":"x","type":"server_error"}',
        "srv    operator(): ",
        'got exception: {"code":500,"message":"x","type":"server_error"}',
    ),
    ("que    start_loop: processing new tasks", "que    start_loop: ", "processing new tasks"),
    (
        "srv    send_error: task id = 8, error: Failed to parse input",
        "srv    send_error: ",
        "task id = 8, error: Failed to parse input",
    ),
    (
        "srv  params_from_: Chat format: GPT-OSS",
        "srv  params_from_: ",
        "Chat format: GPT-OSS",
    ),
    (
        "0.01.234.567 I srv  update_slots: all slots are idle",
        "0.01.234.567 I srv  update_slots: ",
        "all slots are idle",
    ),
    (
        "991.07.423.281 I slot  operator (): id  1 | task 30996 | new prompt, n_keep = 0",
        "991.07.423.281 I slot  operator (): id  1 | task 30996 | ",
        "new prompt, n_keep = 0",
    ),
    (
        "12.00.000.001 E slot print_timing: id -1 | task -1 |",
        "12.00.000.001 E slot print_timing: id -1 | task -1 |",
        "",
    ),
    # not its tags: no 12 columns, a name of its own, a record's rest on a line of its own
    ("srv log_server_r: spaces collapsed", "", "srv log_server_r: spaces collapsed"),
    ("srv  log_server_request: x", "", "srv  log_server_request: x"),
    ("main: server is listening on http://127.0.0.1:8080", "", None),
    ("prompt eval time =      48.12 ms /   812 tokens", "", None),
    ("       eval time =     913.55 ms /   120 tokens", "", None),
]


@pytest.mark.parametrize(("raw", "prefix", "text"), LLAMA_SERVER)
def test_llama_server_module_tags_are_a_record_prefix(
    raw: str, prefix: str, text: str | None
) -> None:
    for read in (anatomize, _anatomize_python, anatomize_reference):
        line = read(1, raw)
        assert (line.key, line.prefix, line.timestamp) == ("", prefix, None), read
        assert line.rest == raw[len(prefix) :]
        assert line.text == (raw.strip() if text is None else text)


def test_a_llama_server_message_ends_at_the_next_record() -> None:
    """An error message left open (a JSON body cut off) does not take the access line after
    it, a record of another function, as the rest a terminal wrap broke off."""
    error = only(
        "\n".join(
            [
                'srv    operator(): got exception: {"code":500,"message":"Failed to parse '
                "input at pos 37: <|start|>assistant<|channel|>final <|constrain|>json"
                "<|message|>",
                "srv  log_server_r: done request: POST /v1/chat/completions 127.0.0.1 500",
            ]
        )
    )
    assert (error.code, error.server, error.span) == ("HD183", "llama.cpp", (1, 1))
    assert error.message == (
        "Failed to parse input at pos 37: <|start|>assistant<|channel|>final "
        "<|constrain|>json<|message|>"
    )


def test_wrap_padding_inside_a_line() -> None:
    text = prefixed(
        traceback_lines("Unexpected token 12606 while expecting start token 200006"), ""
    )
    padded = text.replace('__init__.py", line 637,', '__init__.py",                  line 637,')
    padded = padded.replace("Unexpected token", "Unexpected                 token")
    error = only(padded)
    assert (error.code, error.token, error.harmony_version) == ("HD112", 12606, ">=0.0.5")


def test_colours_html_entities_and_container_timestamps() -> None:
    text = "\n".join(
        [
            "2026-03-14T08:09:10.123456789Z stderr F (APIServer pid=9) \x1b[31mERROR\x1b[0m "
            "03-14 08:09:10 [serving.py:830] openai_harmony.HarmonyError: Unknown role: "
            "&lt;|start|&gt;assistant",
        ]
    )
    error = only(text)
    assert (error.code, error.pid, error.server) == ("HD121", 9, "vllm")
    assert error.message == "Unknown role: <|start|>assistant"


@pytest.mark.parametrize(
    ("raw", "timestamp"),
    [
        # journald's time has no year: Ollama's own full date after it is the line's
        (
            "Dec 11 09:59:30 quorra ollama[812]: time=2024-12-11T09:59:30.123Z level=ERROR "
            'source=routes.go:1 msg="error parsing tool call"',
            "2024-12-11T09:59:30.123Z",
        ),
        # journald without its host (`journalctl --no-hostname`)
        (
            "Aug 20 09:40:01 ollama[1914]: time=2025-08-20T09:40:01.186Z level=ERROR msg=x",
            "2025-08-20T09:40:01.186Z",
        ),
        # neither has a year (or the later one is no date): the first is kept
        (
            "Dec 11 09:59:30 quorra vllm[812]: ERROR 12-11 09:59:31 [serving.py:830] x",
            "Dec 11 09:59:30",
        ),
        (
            "Dec 11 09:59:30 quorra ollama[812]: time=2024-13-11T09:59:30Z level=ERROR msg=x",
            "Dec 11 09:59:30",
        ),
        # a full date first stays first
        (
            "2026-03-14T08:09:10Z stderr F ERROR 2026-03-14 09:09:10 [serving.py:830] x",
            "2026-03-14T08:09:10Z",
        ),
    ],
)
def test_a_full_date_beats_an_earlier_time_without_a_year(raw: str, timestamp: str) -> None:
    assert anatomize(1, raw).timestamp == timestamp
    assert anatomize_reference(1, raw).timestamp == timestamp
    assert _anatomize_python(1, raw).timestamp == timestamp


def test_indented_code_block_keeps_prefixes() -> None:
    prefix = "    (APIServer pid=3) ERROR 09-09 10:10:10 [serving_chat.py:1145] "
    error = only(
        prefixed(
            traceback_lines('unexpected tokens remaining in message header: ["a", "b c"]', 612),
            prefix,
        )
    )
    assert (error.pid, error.timestamp, error.harmony_version) == (
        3,
        "09-09 10:10:10",
        "0.0.1-0.0.2",
    )
    assert error.span == (2, 7)


# -- the prefix shapes, tried in one regex ----------------------------------------------------


def _first_shape_in_order(rest: str) -> int | None:
    """The reference: the index of the first shape that matches `rest` with some text."""
    for index, shape in enumerate(_PREFIXES):
        found = shape.match(rest)
        if found is not None and found.end() > 0:
            return index
    return None


def test_one_group_per_shape_and_no_shape_matches_empty_text() -> None:
    assert _ANY_PREFIX.groups == len(_PREFIXES)
    assert all(shape.match("") is None for shape in _PREFIXES)


_PREFIX_PIECES = [
    "(APIServer pid=12) ",
    "INFO 11-01 00:00:01 [logger.py:43] ",
    "ERROR 2025-08-07 21:37:03 [serving_chat.py:1145] ",
    "vllm-1  | ",
    "Aug 10 12:00:01 host ollama[812]: ",
    "Aug 10 12:00:01 ollama[812]: ",
    "2025-09-15 11:29:27,572 - lmdeploy - ERROR - async_engine.py:657 - ",
    "2025-01-01 12:00:00.123 | ERROR    | module:function:12 - ",
    "[ ERROR | logging:handle:1681 ] ",
    "time=2025-01-01T00:00:00Z level=ERROR source=server.go:1 msg=",
    "[2025-08-07 21:37:03 TP0] ",
    "2025-08-07T21:37:03Z [ERROR] ",
    "[serving_chat.py:1001] ",
    "ERROR:root:",
    "2025-08-07T21:37:03.1Z stdout F ",
    "INFO:     ",
    "srv  log_server_r: ",
    "0.01.234.567 I slot update_slots: id  0 | task 8 | ",
    "Traceback (most recent call last):",
    "openai_harmony.HarmonyError: unexpected tokens remaining in message header",
    '  File "x.py", line 1',
    "",
]


@pytest.mark.parametrize("seed", range(3))
def test_the_matching_group_names_the_first_shape_that_matches(seed: int) -> None:
    """Any mix of prefix pieces, cut anywhere: the one-regex choice is the in-order choice."""
    chooser = random.Random(seed)
    for _ in range(3000):
        text = "".join(chooser.choices(_PREFIX_PIECES, k=chooser.randint(1, 4)))
        text = text[chooser.randint(0, len(text)) :] if chooser.random() < 0.3 else text
        found = _ANY_PREFIX.match(text)
        chosen = None if found is None or found.lastindex is None else found.lastindex - 1
        assert chosen == _first_shape_in_order(text), text


# Every terminal string sequence (OSC, DCS, SOS, PM, APC), ended by BEL or by ST (`ESC \`),
# and CSI with intermediate bytes: the writer's text is what is left once they are taken out.
TERMINAL_SEQUENCES = [
    "\x1b]52;c;ZXZpbA==\x07",
    "\x1b]52;c;ZXZpbA==\x1b\\",
    "\x1b]8;;https://evil.example\x1b\\",
    "\x1bPq#0;2;0;0;0\x1b\\",
    "\x1bP1$r\x07",
    "\x1bXsos\x1b\\",
    "\x1b^pm\x07",
    "\x1b_Ga=T\x1b\\",
    "\x1b[1 q",
    "\x1b[38;5;196m",
]


@pytest.mark.parametrize("sequence", TERMINAL_SEQUENCES)
def test_every_terminal_sequence_is_stripped_whatever_ends_it(sequence: str) -> None:
    text = (
        f"(APIServer pid=9) ERROR 03-14 08:09:10 [serving.py:830] {sequence}"
        f"openai_harmony.HarmonyError: Unknown role: ro{sequence}le"
    )
    error = only(text)
    assert (error.code, error.message) == ("HD122", "Unknown role: role")
