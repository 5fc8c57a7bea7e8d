"""explain on the evidence a paste holds, whatever its wording (issue 33): each shape below was
missed, misnamed or a false alarm before the evidence layer."""

from __future__ import annotations

import json

import harmony_doctor as hd
from harmony_doctor.inputs.reader import TextInput
from tests.helpers import run
from tests.pastes.findings import findings, vocab

SGLANG = """\
[2025-09-01 10:00:00] ERROR [serving_chat.py:560] Error in chat completion: unexpected tokens \
remaining in message header: Some("to=functions.get_weather")
Traceback (most recent call last):
  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/entrypoints/openai/serving_chat.py", \
line 540, in _generate_chat_stream
    parser.process(token)
  File "/usr/local/lib/python3.12/dist-packages/openai_harmony/__init__.py", line 637, in process
    self._inner.process(token)
openai_harmony.HarmonyError: unexpected tokens remaining in message header: \
Some("to=functions.get_weather")
"""

LOADER = """\
llama_model_loader: - kv  22:  tokenizer.ggml.eos_token_ids arr[i32,3] = [199999, 200002, 200012]
load: control token: 200012 '<|call|>' is not marked as EOG
load: control token: 200002 '<|return|>' is not marked as EOG
load: control token: 200006 '<|start|>' is not marked as EOG
load: control token: 200008 '<|message|>' is not marked as EOG
load: control token: 200005 '<|channel|>' is not marked as EOG
print_info: EOG token        = 200012 '<|call|>'
"""


def test_an_sglang_traceback_is_one_failure_named_sglang() -> None:
    seen = findings(SGLANG)
    assert [(s.code, s.server) for s in seen] == [("HD102", "sglang")]


def test_a_loaders_listing_of_special_tokens_is_no_failure() -> None:
    assert findings(LOADER) == ()


def test_a_grammar_fault_in_another_writers_words_inside_prose_is_found() -> None:
    text = (
        "After the upgrade every second request fails with a 500, and the log says "
        '"expected special token <|message|> but out of tokens" just before the stream ends.'
    )
    assert [s.code for s in findings(text)] == ["HD141"]


def test_ids_an_engine_prints_under_its_own_key_are_replayed() -> None:
    text = (
        "[2025-09-01 10:00:00 TP0] Prefill batch. #new-seq: 1\n"
        "[2025-09-01 10:00:02 TP0] DEBUG rid=abc output_ids=[200005, 35644, 200008, 976, 1825, "
        "200007, 12606, 815, 200005, 17196] finished\n"
    )
    assert [s.code for s in findings(text)] == ["HD114"]


def test_ids_in_a_paste_under_a_key_no_reader_knows_are_replayed() -> None:
    text = (
        "I dumped what the engine generated:\n\n"
        "    sampled tokens: 200005 35644 200008 976 200002 200005 17196 200008 13225\n\n"
        "and the server raised right after it.\n"
    )
    assert [s.code for s in findings(text)] == ["HD116"]  # <|channel|> after <|return|>


def test_stripped_harmony_in_content_with_reasoning_null_is_a_leak() -> None:
    body = {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": "analysisThe user asks.assistantfinalIt is sunny.",
                    "reasoning_content": None,
                }
            }
        ]
    }
    assert [s.code for s in findings(json.dumps(body))] == ["HD206"]


def test_a_description_names_its_rule_and_what_to_paste() -> None:
    text = "With gpt-oss and tools on, the reasoning ends up in the content field. Any flag?\n"
    explained = hd.explain_input(TextInput(text, "<paste>"), vocab())
    assert isinstance(explained, hd.ExplainedLog)
    assert explained.explanation.described is not None
    assert explained.explanation.described.code == "HD205"
    result = run(["explain", "-"], stdin=text)
    assert result.exit_code == 0
    assert "reasoning returned in content" in result.stdout
    assert "harmony-doctor rules HD205" in result.stdout


def test_a_json_list_with_an_id_of_thousands_of_digits_is_refused_clearly() -> None:
    result = run(["explain", "-"], stdin="[200005, " + "9" * 4301 + ", 200008]")
    assert result.exit_code == 2
    assert "an id of 4,301 digits is outside the range" in result.stderr
    assert "int" not in result.stderr.split("outside", 1)[0].lower().replace("digits", "")


def test_a_rendered_prompt_a_paste_calls_a_prompt_is_no_failure() -> None:
    text = (
        "Here is how the prompt renders for gpt-oss:\n\n```\n"
        "<|start|>system<|message|>You are ChatGPT.\nReasoning: high<|end|>"
        "<|start|>user<|message|>What is 2 + 2?<|end|><|start|>assistant\n```\n\n"
        "Is the `Reasoning: high` line what sets the effort?\n"
    )
    assert findings(text) == ()
    # the same ids given as a completion are still the mistake HD143 names
    bare = text.split("```\n")[1].rsplit("\n", 1)[0]
    assert "HD143" in [s.code for s in findings(bare)]


def test_another_familys_reasoning_in_a_json_body_is_not_described_as_harmony() -> None:
    body = (
        '{"choices":[{"message":{"content":"<think>Hi.</think>Hello!","reasoning_content":null}}]}'
    )
    explained = hd.explain_input(TextInput(body, "<paste>"), vocab())
    assert isinstance(explained, hd.ExplainedLog)
    assert explained.explanation.errors == () and explained.explanation.described is None
