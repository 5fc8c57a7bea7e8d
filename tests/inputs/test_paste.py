"""inputs/paste.py: a paste's furniture undone line by line, each line's place kept."""

from __future__ import annotations

import pytest

from harmony_doctor.inputs.paste import opens_as_log, read_paste

ERROR = "openai_harmony.HarmonyError: Unknown role: assistantassistant"


def test_a_bare_text_is_read_as_given() -> None:
    for text in (ERROR, "<|channel|>final<|message|>Hi<|return|>", '{"a": 1}', "[1, 2]"):
        paste = read_paste(text)
        assert not paste.furnished and paste.text == text


def test_a_quote_is_unquoted_on_the_same_lines() -> None:
    paste = read_paste(f"Seen today:\n> {ERROR}\n> > nested\n")
    assert "quote" in paste.shapes
    assert paste.text.split("\n")[1] == ERROR
    assert paste.text.split("\n")[2] == "nested"
    assert paste.source_line(2) == 2


def test_a_fence_is_a_block_and_its_lines_keep_their_place() -> None:
    paste = read_paste(f"The error:\n\n```text\n{ERROR}\n```\nthanks\n")
    assert paste.shapes >= {"fence"}
    (block,) = paste.pieces
    assert block.kind == "block" and block.text == ERROR and block.line == 4
    assert paste.text.split("\n")[3] == ERROR and paste.source_line(4) == 4


def test_a_table_row_is_one_line_per_cell_and_escaped_pipes_are_pipes() -> None:
    paste = read_paste(
        "| engine | error |\n|---|---|\n"
        "| vLLM | `Unknown recipient: <\\|constrain\\|>functions.get_weather` |\n"
    )
    assert {"table", "escapes"} <= paste.shapes
    lines = paste.text.split("\n")
    assert "`Unknown recipient: <|constrain|>functions.get_weather`" in lines
    assert "engine" not in lines  # the header row is furniture
    index = lines.index("vLLM")
    assert paste.source_line(index + 1) == 3


@pytest.mark.parametrize(
    ("prefix", "shape"),
    [
        ("2025-09-16T22:18:58.1234567Z ", "ci"),
        ("2025-09-16T22:18:58.1234567Z ##[error]", "ci"),
        ("[2025-09-16T22:18:58Z] ", "ci"),
        ("E       ", "pytest"),
        ("[2025-09-16T22:18:58Z] E               ", "pytest"),
    ],
)
def test_ci_and_pytest_prefixes_are_undone(prefix: str, shape: str) -> None:
    paste = read_paste(f"{prefix}{ERROR}\n")
    assert shape in paste.shapes and paste.text.split("\n")[0] == ERROR


def test_a_traceback_with_a_blank_line_after_every_line_is_closed_up() -> None:
    lines = ["Traceback (most recent call last):", '  File "x.py", line 1, in f', ERROR]
    paste = read_paste("\n\n".join(lines))
    assert "blank-lines" in paste.shapes
    assert paste.text.split("\n") == lines
    assert [paste.source_line(n) for n in (1, 2, 3)] == [1, 3, 5]


def test_prose_in_paragraphs_is_not_closed_up() -> None:
    text = "I saw this.\n\nIt happens daily.\n\nPlease help me out."
    assert "blank-lines" not in read_paste(text).shapes


def test_a_flattened_traceback_is_split_back_into_lines() -> None:
    flat = 'Traceback (most recent call last):\\n  File "x.py", line 1, in f\\n' + ERROR
    paste = read_paste(flat)
    assert "flattened" in paste.shapes
    assert paste.text.split("\n")[-1] == ERROR
    assert paste.source == (1, 1, 1)


def test_escaped_newlines_inside_a_json_string_are_not_a_flattened_traceback() -> None:
    body = '{"error": "a\\nTraceback (most recent call last):\\nValueError: x"}'
    assert "flattened" not in read_paste(body).shapes


def test_prose_around_markup_never_makes_the_whole_a_completion() -> None:
    text = (
        "According to the spec, this is an example of a tool call message: "
        "`<|channel|>commentary to=functions.f <|constrain|>json<|message|>{}<|call|>`\n"
    )
    paste = read_paste(text)
    assert "prose" in paste.shapes
    (inline,) = paste.pieces
    assert inline.kind == "inline" and inline.text.startswith("<|channel|>")


def test_a_completion_that_opens_with_text_is_not_prose() -> None:
    text = "I'm sorry, but I can't help with that.<|end|>"
    assert not read_paste(text).furnished


def test_id_lists_in_code_and_repro_blocks_are_pieces_prompts_are_not() -> None:
    text = (
        "prompt_token_ids = [200006, 17360, 200008, 1, 2]\n"
        "generated_tokens = [200005, 35644, 200008, 976, 200007]\n"
        "  output_ids: [200005, 17196, 200008, 12194, 200002]\n"
        "counts = [1, 2, 3]\n"
    )
    paste = read_paste(text)
    assert "code" in paste.shapes
    assert [p.text for p in paste.pieces if p.kind == "ids"] == [
        "[200005, 35644, 200008, 976, 200007]",
        "[200005, 17196, 200008, 12194, 200002]",
    ]


def test_a_listing_of_special_ids_is_no_piece() -> None:
    text = (
        "```\n>>> cfg.eos_token_id\neos ids: [200002, 200012, 199999]\n"
        "stops = [200012, 200002, 200007]\n"
        "decoded = [200005, 17196, 200008]\n```\n"
    )
    # a line about special tokens, and a list of special tokens alone, are no stream
    assert [p.text for p in read_paste(text).pieces if p.kind == "ids"] == [
        "[200005, 17196, 200008]"
    ]


def test_elided_and_spread_out_markup_is_marked() -> None:
    paste = read_paste(
        "Observed:\n```\n<|channel|>analysis<|message|>The user asks...\n```\n"
        "Example:\n```\n<|channel|>commentary to=functions.f\n<|constrain|>json\n"
        "<|message|>{}\n<|call|>\n```\n"
    )
    first, second = paste.pieces
    assert first.elided and not first.spread
    assert second.spread


def test_a_log_opens_with_a_record_a_completion_does_not() -> None:
    assert opens_as_log("2025-09-04 13:55:05,681  {{- raise_exception('x') }}")
    assert opens_as_log("(APIServer pid=1) ERROR 08-06 23:25:57 [serving_chat.py:1001] x")
    assert not opens_as_log("<|channel|>final<|message|>2025-09-04 13:55<|return|>")
    assert not opens_as_log("The user asks for the time.<|end|>")


@pytest.mark.parametrize(
    "record",
    [
        "srv  update_chat_: Parsing chat message: <|channel|>analysis<|message|>We need",
        "slot launch_slot_: id  1 | task 1 | processing task",
        "srv    operator(): got exception: <|channel|>final",
        "INFO:     Parsing chat message: <|channel|>analysis<|message|>Msg 1",
        "DEBUG:root:output <|start|>assistant<|channel|>final<|message|>x",
        "[INFO] raw output: <|channel|>final<|message|>x",
        "[serving_chat.py:1001] <|channel|>final<|message|>x",
        "vllm-1  | <|channel|>final<|message|>x",
    ],
)
def test_a_log_records_level_module_or_service_tag_opens_a_log(record: str) -> None:
    assert opens_as_log(record + "\n<|end|>")


@pytest.mark.parametrize(
    "completion",
    [
        "INFO is what the user wants.<|end|>",  # the model's own words, no record's colon
        "srv is short for server.<|end|>",
        "<|channel|>analysis<|message|>INFO: the log said<|end|>",
    ],
)
def test_a_completion_opening_with_a_levels_word_is_no_log(completion: str) -> None:
    assert not opens_as_log(completion)
