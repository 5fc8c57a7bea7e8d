"""explain on the evidence a paste holds, whatever its wording (issue 33): each shape below was
missed, misnamed or a false alarm before the evidence layer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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


# --- issue 33, the finish: shapes of the families the blind set showed ----------------------

_TOOL_CALL = (
    '<|channel|>commentary to=functions.lookup <|constrain|>json<|message|>{"q": 1}<|call|>'
)


def test_special_tokens_named_in_inline_code_inside_a_long_list_item_are_no_stream() -> None:
    text = (
        "- Reworks the sampler's masks: `<|constrain|>` is now allowed after a recipient in "
        "tool turns, and the `<|channel|>` separator is no longer masked by the logit "
        "processor, which had produced broken headers and endless loops.\n"
    )
    assert findings(text) == ()


def test_a_block_under_a_paragraph_that_documents_it_is_no_leak() -> None:
    documented = (
        "Tool calls travel in the header and the arguments are a JSON object; every control "
        "token below is a single special token in the tokenizer, so the grammar refers to "
        f"them by name instead of spelling out their bytes:\n\n```\n{_TOOL_CALL}\n```\n"
    )
    assert findings(documented) == ()
    # the same block under a short caption saying it came back is still markup returned
    shown = f"The server returned this:\n\n```\n{_TOOL_CALL}\n```\n"
    assert [s.code for s in findings(shown)] == ["HD205"]


def test_ids_under_vllm_key_names_outside_its_request_log_are_read_by_the_ids_reader() -> None:
    llama = (
        "RequestOutput(request_id=7, prompt='Hi', prompt_token_ids=[128000, 13347, 11, 1268], "
        "outputs=[CompletionOutput(index=0, text=' there', token_ids=[1070, 128009])])\n"
    )
    result = run(["explain", "-"], stdin=llama)
    assert result.exit_code == 0, result.stderr
    harmony = llama.replace("[1070, 128009]", "[200005, 35644, 200008, 976, 200002, 200005, 17196]")
    assert [s.code for s in findings(harmony)] == ["HD116"]  # <|channel|> after <|return|>


def test_the_stream_running_out_where_the_next_start_belongs_is_a_cut_reply() -> None:
    text = '{"detail": "harmony decode failed: expected token \'<|start|>\' but reached end of output"}'
    assert [s.code for s in findings(text)] == ["HD141"]


def test_an_unexpected_token_with_its_id_cut_or_past_the_text_ids_is_found() -> None:
    elided = "worker 3 crashed: RuntimeError: unexpected token ... while decoding the reply\n"
    assert [(s.code, s.token) for s in findings(elided)] == [("HD114", None)]
    named = "the reply stops and the log says: unexpected token 200012 in completion\n"
    assert [(s.code, s.token) for s in findings(named)] == [("HD113", 200012)]


def test_an_unexpected_token_a_json_parser_names_is_no_harmony_failure() -> None:
    for text in (
        "SyntaxError: Unexpected token } in JSON at position 0\n",
        "Unexpected token 7 in JSON at position 12\n",
    ):
        assert findings(text) == (), text


def test_the_server_every_path_names_wins_over_the_wording_of_anothers_form() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.12/site-packages/tensorrt_llm/serve/openai_server.py", '
        "line 410, in chat\n"
        "    out = parse_output(res)\n"
        '  File "/opt/venv/lib/python3.12/site-packages/tensorrt_llm/serve/harmony_adapter.py", '
        "line 88, in parse_output\n"
        "    raise ValueError(msg)\n"
        "ValueError: Expected 2 output messages (reasoning and final), but got 3.\n"
    )
    assert [(s.code, s.server) for s in findings(text)] == [("HD187", "tensorrt-llm")]


def test_a_failure_no_line_names_a_server_for_takes_the_one_the_paste_runs() -> None:
    text = (
        "$ lmdeploy serve api_server openai/gpt-oss-120b --tp 2\n"
        "the reply stops and the log says: unexpected token 200012 in completion\n"
    )
    assert [(s.code, s.server) for s in findings(text)] == [("HD113", "lmdeploy")]


def test_a_vllm_traceback_cut_inside_the_prompt_renderer_is_a_render_failure() -> None:
    frames = (
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.12/site-packages/vllm/entrypoints/openai/serving_'
        'responses.py", line 300, in create_responses\n'
        "    prompt = render_for_completion(messages)\n"
        '  File "/usr/local/lib/python3.12/site-packages/vllm/entrypoints/harmony_utils.py", '
        "line 210, in render_for_completion\n"
    )
    assert [(s.code, s.server) for s in findings(frames)] == [("HD175", "vllm")]


def test_the_json_report_carries_what_a_description_was_read_as() -> None:
    text = "Since the upgrade the analysis shows up in the final answer of gpt-oss-20b.\n"
    result = run(["explain", "--format", "json", "-"], stdin=text)
    assert result.exit_code == 0
    described = json.loads(result.stdout)["described"]
    assert described["code"] == "HD205"
    assert described["what"] == "reasoning returned in content"
    clean = run(["explain", "--format", "json", "-"], stdin="INFO 10:00 server started\n")
    assert "described" not in json.loads(clean.stdout)


_FINAL = "<|channel|>final<|message|>The build is green.<|return|>"


def test_clean_markup_the_words_above_call_what_came_back_is_markup_returned() -> None:
    for caption in (
        "Calling it from our dashboard, this is the reply we received:",
        "## Server output\n\nThe endpoint output for the second request:",
    ):
        text = f"Since moving to gpt-oss the chat panel is broken.\n\n{caption}\n\n```\n{_FINAL}\n```\n"
        assert [s.code for s in findings(text)] == ["HD205"], caption


def test_clean_markup_shown_as_what_the_model_generates_or_should_be_is_no_leak() -> None:
    for caption in (
        "After fine-tuning, the model generates output like:",
        "The reply should look like this, per the format guide:",
    ):
        text = f"Since moving to gpt-oss the chat panel is broken.\n\n{caption}\n\n```\n{_FINAL}\n```\n"
        assert findings(text) == (), caption


def test_a_sentence_saying_raw_markup_leaked_into_content_describes_a_leak() -> None:
    text = (
        "gpt-oss writes its channels as markup:\n\n```\n<|channel|>analysis<|message|>Think."
        "<|end|><|start|>assistant<|channel|>final<|message|>Done.\n```\n\n"
        "Our proxy only knew `<think>`, so the raw markup leaked verbatim into `content`.\n"
    )
    assert [s.code for s in findings(text)] == ["HD205"]


def test_a_tool_name_with_markup_glued_inside_cjk_brackets_is_markup_returned() -> None:
    text = "接入自建端点后\uff0c工具名变成了「lookup_order<|channel|>commentary」\uff0c调用全部失败。\n"
    assert [s.code for s in findings(text)] == ["HD205"]


@pytest.mark.parametrize(
    "code",
    [
        'return Err(anyhow!("unexpected tokens remaining in message header: {:?}", rest));',
        '    raise HarmonyError(f"expected special token <|message|> but out of tokens at {i}")',
        '\treturn nil, fmt.Errorf("harmony parser: no reverse mapping found for function %q", n)',
        'throw new Error("channel marker present but no channel value found in header");',
    ],
)
def test_source_code_that_would_raise_an_error_is_no_failure(code: str, tmp_path: Path) -> None:
    text = f"The check lives here:\n\n```\nif bad {{\n{code}\n}}\n```\n"
    assert findings(text) == ()
    source = tmp_path / "parser.txt"
    source.write_text(text, encoding="utf-8")
    assert hd.scan_file(source).events == ()  # scan reads it alike
    raised = (
        "Traceback (most recent call last):\n"
        '  File "/srv/app/parse.py", line 12, in parse\n'
        f"{code}\n"
        "HarmonyError: Unexpected token 12606 while expecting start token 200006\n"
    )
    # the error a traceback ends with is still found under the code that raised it
    assert [(s.code, s.token) for s in findings(raised)] == [("HD112", 12606)]


def test_an_errors_words_named_as_a_json_key_are_no_failure() -> None:
    text = (
        "The streamed chunk carries the key 'error parsing tool call' where `error` was meant, "
        "and the message goes into its value.\n"
    )
    assert findings(text) == ()


def test_a_harmony_parser_without_a_mapping_for_the_call_is_quoted_in_prose() -> None:
    text = (
        "Since 0.12 our agent drops every python call; the server warns "
        "`harmony parser: no reverse mapping found` each time, then answers with nothing.\n"
    )
    assert [(s.code, s.server) for s in findings(text)] == [("HD207", None)]


def test_a_paste_comparing_servers_gives_a_failure_the_one_named_nearest() -> None:
    text = (
        "Both vLLM and SGLang ran the same 300 prompts.\n\n"
        "- The vLLM stream broke twice:\n"
        "  `Unexpected token 35644 while expecting start token 200006`\n"
        "  (about 1 in 150 requests)\n"
        "- SGLang finished every request.\n"
    )
    assert [(s.code, s.server) for s in findings(text)] == [("HD114", "vllm")]
    tie = text.replace("The vLLM stream", "The stream").replace("- SGLang finished", "- It did")
    assert [s.server for s in findings(tie)] == [None]  # named alike near it: neither


def test_a_provider_named_only_in_words_is_the_server() -> None:
    text = (
        "Groq request failed. Error code: 400 - {'error': {'message': 'unexpected tokens "
        'remaining in message header: Some("to=functions.lookup")\'}}\n'
    )
    assert [s.server for s in findings(text)] == ["groq"]


def test_ids_whose_replay_warns_are_a_finding() -> None:
    text = (
        "On 3 of 10 runs the first generated tokens were [220, 200003, 17196, 200008, 976, ...]\n"
    )
    assert {s.code for s in findings(text)} == {"HD202", "HD204"}  # <|constrain|> for <|channel|>


def test_the_decoding_a_person_writes_beside_ids_is_not_replayed_the_ids_are() -> None:
    text = (
        "Token by token, our engine writes `[200005, 17196, 200008, 976]` = "
        "`<|channel|> final <|message|>` while the reference writes "
        "`[220, 200003, 17196, 200008, 976]` = `<|constrain|> final <|message|>` on most runs.\n"
    )
    # the spaced decodings would read as <|channel|> with no name (HD131), which no run shows
    assert {s.code for s in findings(text)} == {"HD202", "HD204"}


def test_markup_after_a_label_of_what_came_back_on_its_line_is_markup_returned() -> None:
    for label in ("output : ", "**Response:** ", "Reply: "):
        text = (
            "Asked the assistant for a haiku about autumn, in the desktop app.\n\n"
            f"{label}<|channel|>final<|message|>Leaves fall quietly<|return|>\n"
        )
        assert [s.code for s in findings(text)] == ["HD205"], label
    sent = "What I send to the model, for the record.\n\ninput: <|start|>user<|message|>Hi<|end|>\n"
    assert findings(sent) == ()  # what was sent is no reply


def test_what_was_expected_set_against_what_came_back_calls_the_block_returned() -> None:
    for caption in (
        "Expected a normal answer in the chat, but got replies in this format:",
        "This is the coding agent's output:",
    ):
        text = f"Since moving to gpt-oss the chat panel is broken.\n\n{caption}\n\n```\n{_FINAL}\n```\n"
        assert [s.code for s in findings(text)] == ["HD205"], caption
    own = "This is the model's output:"  # the model's own output: its raw tokens, as it should be
    text = f"Since moving to gpt-oss the chat panel is broken.\n\n{own}\n\n```\n{_FINAL}\n```\n"
    assert findings(text) == ()


def test_an_issue_title_tagged_in_brackets_is_words_not_json() -> None:
    text = (
        "[Question] Why does gpt-oss stop after <|call|> when the tool list is empty on llama?\n\n"
        "The docs say the reply should end with <|return|> unless a tool call is written.\n"
    )
    assert findings(text) == ()


def test_stop_tokens_named_inside_sentences_are_no_completion() -> None:
    text = (
        "After upgrading, the app hides everything after <|end|> in the second turn of a chat.\n"
        "I thought <|return|> was the token that ends the whole reply for the user.\n"
    )
    assert findings(text) == ()
    broken = "The answer is four.<|end|>assistantfinal The answer is four.<|return|>"
    assert findings(broken) != ()  # a completion with a header word after the stop token


def test_markup_under_labels_of_things_compared_is_no_output() -> None:
    text = (
        "Comparing the two renderers gives a mismatch on the last turn:\n\n"
        "ours:   <|start|>assistant<|channel|>final<|message|>hi<|return|>\n"
        "theirs: <|start|>assistant<|channel|>final<|message|>hi<|end|><|start|>user<|message|>x"
        "<|end|>  case-7\n"
    )
    assert findings(text) == ()


def test_one_message_a_line_or_annotated_is_a_persons_layout() -> None:
    text = (
        "Our router dropped every tool call, so we logged what the model writes at the split "
        "site before any parsing happens.\n\n```\n"
        "<|channel|>analysis<|message|>Need the weather.<|end|>\n"
        "<|start|>assistant<|channel|>commentary to=functions.weather <|constrain|>json"
        '<|message|>{"city":"Oslo"}<|call|>\n```\n'
    )
    assert findings(text) == ()  # no text where a <|start|> belongs: the break is layout
    noted = (
        "The layout of a reply, for reference:\n\n```\n"
        "<|channel|>analysis<|message|>Thinking here.<|end|>   # hidden\n"
        "<|start|>assistant<|channel|>final<|message|>Shown here.<|return|>   # visible\n```\n"
    )
    assert findings(noted) == ()


def test_an_error_labelled_an_example_is_documentation() -> None:
    text = (
        "## Reading parser errors\n\n"
        "Error example: Unexpected token 17196 while expecting start token 200006\n"
        "It means the model wrote text where a message should start.\n"
    )
    assert findings(text) == ()


def test_stripped_words_quoted_as_a_name_or_in_a_pattern_are_no_output() -> None:
    text = (
        "The parser splits on the literal `assistantfinal` today:\n\n```python\n"
        'FINAL = re.compile(r"analysis(.*?)assistantfinal(?P<answer>.*)", re.S)\n```\n'
    )
    assert findings(text) == ()


@pytest.mark.parametrize(
    ("text", "code"),
    [
        # openai-harmony's exception with its ids cut off where a title ends
        ("Crash on long chats: openai_harmony.HarmonyError: Unexpected token\n\nSee log.", "HD114"),
        # a parser's message with its position left out, quoted in a sentence
        ("Our proxy logs `Failed to parse output at position` for one reply in ten.", "HD186"),
        # the empty-channel message cut by a person
        ("the stream then dies with `channel marker present but no ...` and a 500", "HD131"),
    ],
)
def test_an_error_a_person_cut_short_is_still_the_error(text: str, code: str) -> None:
    assert [s.code for s in findings(text)] == [code]


def test_a_tagged_title_does_not_hide_a_sentence_quoting_the_markup() -> None:
    text = (
        "[Bug] Reasoning shows in chat\n\n"
        "The reasoning is embedded within the reply text as <|channel|>analysis<|message|> "
        "followed by the answer.\n"
    )
    assert [s.code for s in findings(text)] == ["HD205"]


def test_a_paragraph_closing_a_message_begun_above_is_replayed_from_its_next_message() -> None:
    text = (
        "Our server logs the rendered conversation; the system message spans two paragraphs.\n\n"
        "<|start|>system<|message|>You are terse.\n\n"
        "<|end|><|start|>user<|message|>Hi<|end|><|start|>assistant<|channel|>final"
        "<|message|>Hello.<|return|>\n"
        "Rendered for: <|start|>user<|message|>Hi<|end|>\n"
    )
    # the <|end|> closes the system message above; the label ends the paragraph before it
    assert findings(text) == ()


def test_an_article_that_goes_on_to_show_markup_is_no_completion() -> None:
    text = (
        "We moved our chat service from one server to another last week.\n\n"
        "Since then every reply our logs keep ends in <|return|>.\n"
    )
    assert findings(text) == ()


# Fourth blind set (issue 33 again): each family below on a shape of its own, besides the paste
# that showed it (tests/pastes/texts/133-...).
@pytest.mark.parametrize(
    "text",
    [
        # a header whose tokens a detokenizer dropped: role, recipient, channel, content type
        "The chat window showed:\n\n```\nassistant to=functions.lookup_order commentary json\n"
        '{"order_id": 42}\n```\n',
        "The reply ended with:\n\n```\nassistant to=python code\nprint(1)\n```\n",
        "It answered: analysis Check the docs. assistantanalysis to=browser.search code",
    ],
)
def test_a_header_stripped_of_its_tokens_is_stripped_markup(text: str) -> None:
    assert [s.code for s in findings(text)] == ["HD206"]


def test_the_word_assistant_in_prose_is_no_stripped_header() -> None:
    header = "```\nassistant to=functions.lookup_order json\n{}\n```"
    prose = "The assistant to=functions.lookup_order routing is described in the docs."
    assert [s.code for s in findings(header)] == ["HD206"]
    assert findings(prose) == ()


@pytest.mark.parametrize(
    "text",
    [
        "Llama 3.3 tool calls fail: `Failed to parse input at pos 37: <|python_start|>` again",
        'llama-server log:\nload_model: loading model "Qwen3-8B-Q4_K_M.gguf"\n'
        "srv  send_error: task id = 3, error: Failed to parse input at pos 0: hi",
        "LM Studio with Mistral-Small-3.2:\n`Model failed to generate a tool call / Failed to "
        'parse arguments for tool "search": params requires property "q"`',
    ],
)
def test_an_engines_generic_error_from_another_named_model_is_no_harmony_failure(
    text: str,
) -> None:
    assert findings(text) == ()


def test_an_engines_generic_error_is_harmonys_when_gpt_oss_is_named() -> None:
    text = (
        "gpt-oss-20b on llama-server (Qwen3 works fine):\n"
        "srv  send_error: task id = 3, error: Failed to parse input at pos 0: hi"
    )
    assert [s.code for s in findings(text)] == ["HD183"]
    assert findings(text.replace("gpt-oss-20b", "it")) == ()  # then Qwen3 is the one named


@pytest.mark.parametrize(
    "text",
    [
        "The template should render the<|channel|>name before the message.",
        "Our docs call this the <|constrain|> token; the parser drops its<|constrain|>suffix.",
    ],
)
def test_a_token_a_sentence_names_is_no_markup_glued_to_a_name(text: str) -> None:
    assert findings(text) == ()


def test_a_sentence_broken_at_the_token_it_names_is_not_replayed() -> None:
    prose = (
        "The model is trained to end a tool call's header with\n"
        "<|constrain|>jsonbefore the arguments. When the template drops it, the model "
        "stops writing it in later turns too.\n"
    )
    reply = (
        "The reply we got back:\n\n<|channel|>analysis The user asks for the weather in "
        "Paris today, so look it up now.\n"
    )
    assert findings(prose) == ()
    assert [s.code for s in findings(reply)] == ["HD141"]  # a message's opening is output


def test_a_quoted_shape_only_a_model_writes_is_a_finding_though_a_warning() -> None:
    text = (
        "Structured output breaks: the model writes "
        '`<|start|>assistant<|channel|>final <|constrain|>json<|message|>{"ok": true}` and '
        "the client gets a tool call instead of the answer."
    )
    assert [s.code for s in findings(text)] == ["HD202"]
    illustrated = text.replace("final <|constrain|>json", "final")
    assert findings(illustrated) == ()  # a well-formed message a person quotes is no finding


def _request_log(ids: list[int]) -> str:
    return (
        "INFO 05-01 09:00:00 logger.py:39] Received request cmpl-7-0: prompt: 'Ciao, come "
        f"stai?', params: SamplingParams(n=1, max_tokens=50), prompt_token_ids: {ids}, "
        "lora_request: None\n"
    )


def test_a_logged_prompts_ids_without_any_special_token_are_no_harmony_stream() -> None:
    raw = hd.explain_text(_request_log([2, 34, 1567, 983, 20, 11, 4023, 30]), vocab())
    assert isinstance(raw, hd.LogExplanation) and raw.errors == ()
    assert raw.note is not None and "no Harmony stream" in raw.note
    # a gpt-oss prompt holds its special tokens: it is replayed as before
    chat = hd.explain_text(_request_log([200006, 1428, 200008, 12194, 200007]), vocab())
    assert isinstance(chat, hd.Diagnosis)


def test_an_engines_error_quoted_with_its_head_elided_is_found() -> None:
    text = (
        "With streaming on, the last chunk is replaced by an error frame "
        '`data: {"error": {"message": "...expected peg-native format"}}` and no [DONE].'
    )
    assert [s.code for s in findings(text)] == ["HD183"]


# --- round 4, session twelve: shapes a fresh set of pastes showed ---------------------------


def test_markup_a_paste_says_came_back_as_the_markup_itself_is_the_leak() -> None:
    # the block is well-formed Harmony, and `For example` alone calls it documentation: only
    # the words before say it reached the user as the markup itself
    block = (
        "```\n<|channel|>analysis<|message|>They greet us.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>Hi there!\n```\n"
    )
    lead = "Sure. When we run gpt-oss models that emit reasoning traces in the desktop app, "
    said = lead + "the thinking comes through as raw harmony tags. For example:\n"
    assert [s.code for s in findings(said + block)] == ["HD205"]
    documented = lead + "the thinking is written as the model card says. For example:\n"
    assert findings(documented + block) == ()


def test_another_familys_tool_tag_after_a_parsers_position_is_not_described() -> None:
    # llama.cpp serving another model: its parser's position and a `</tool_call>` tag are no
    # sentence about a Harmony tool call
    log = (
        "srv  update_slots: all slots are idle\n"
        'srv    operator(): got exception: {"error":{"code":500,"message":"Failed to parse '
        'input at pos 7: </tool_call>","type":"server_error"}}\n'
    )
    explained = hd.explain_input(TextInput(log, "<paste>"), vocab())
    assert isinstance(explained, hd.ExplainedLog)
    assert explained.explanation.errors == () and explained.explanation.described is None


def test_prose_quoting_markup_is_no_stream_unless_it_says_the_reply_held_it() -> None:
    # a discussion of a template's tags: nothing was generated, nothing failed
    tags = (
        'Our assistant tag is "<|end|><|start|>assistant<|channel|>final<|message|>", which '
        'skips thinking; before, the model would generate "<|channel|>analysis<|message|>" '
        "first and think.\n"
    )
    assert findings(tags) == ()
    said = 'The response content contains "<|channel|>analysis<|message|>hi" every time.\n'
    assert [s.code for s in findings(said)] == ["HD205"]
