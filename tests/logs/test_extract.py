"""extract.py: each failure once, streaming in bounded state; `explain` on log text."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from harmony_doctor.logs import extract_errors, extract_text
from harmony_doctor.logs.extract import MAX_KEYS, _Extractor
from tests.helpers import SAMPLES, run, shared_files
from tests.logs.helpers import LEFTOVER_LIST, LEFTOVER_SOME, only, traceback_lines


def test_keyword_broken_across_a_wrap() -> None:
    text = (
        "ERROR 03-14 08:09:10 [serving.py:830] openai_harmony.HarmonyError: unexpected tokens "
        'remaining in mes\nsage header: Some("json to=functions.a")\n'
    )
    error = only(text)
    assert (error.line, error.span) == (1, (1, 2))
    assert error.header_words == ("json", "to=functions.a")


def test_some_form_spanning_lines_of_one_record() -> None:
    prefix = "(APIServer pid=5) ERROR 03-14 08:09:10 [serving.py:830] "
    text = (
        f"{prefix}openai_harmony.HarmonyError: unexpected tokens remaining in message header: "
        f'Some("First line of prose\n{prefix}second line of prose")\n'
        f"{prefix.replace('ERROR', 'INFO')}next record\n"
    )
    error = only(text)
    assert error.header_words == ("First", "line", "of", "prose", "second", "line", "of", "prose")
    assert error.span == (1, 2)


def test_template_error_reported_once() -> None:
    message = (
        "You have passed a message containing <|channel|> tags in the content field. Instead "
        "of doing this, you should pass analysis messages in the 'thinking' field."
    )
    text = "\n".join(
        [
            f"{message} at row 12, column 3:",
            '{%- if "<|channel|>analysis<|message|>" in message.content %}',
            f'{{{{- raise_exception("{message}") }}}}',
            "   ^",
        ]
    )
    error = only(text)
    # minja (llama.cpp's Jinja engine) places its errors `at row N, column M:`: evidence
    assert (error.code, error.line, error.server) == ("HD184", 1, "llama.cpp")
    assert error.message == message
    # gpt-oss's own template raises it in any engine that runs it: the words alone name none
    assert only(message).server is None
    assert only("srv operator(): " + message).server == "llama.cpp"


def test_wrapper_of_a_traceback_is_the_same_failure() -> None:
    lines = traceback_lines(LEFTOVER_SOME)
    text = "\n".join(
        [
            *lines,
            "",
            "The above exception was the direct cause of the following exception:",
            "",
            "Traceback (most recent call last):",
            '  File "/app/agent.py", line 88, in step',
            "    raise RuntimeError(f'OpenAI response failed: {exc}') from exc",
            f"RuntimeError: OpenAI response failed: {LEFTOVER_SOME}",
            f'{{"error": {{"message": "{LEFTOVER_SOME.replace(chr(34), chr(92) + chr(34))}"}}}}',
        ]
    )
    error = only(text)
    assert (error.line, error.harmony_version) == (7, ">=0.0.5")


def test_same_error_in_two_tracebacks_is_two_failures() -> None:
    lines = traceback_lines("Unexpected token 200002 while expecting start token 200006")
    found = extract_text("\n".join([*lines, *lines]))
    assert [e.line for e in found] == [7, 14]


def test_a_bare_mention_joins_the_full_error() -> None:
    text = "\n".join(
        [
            "Title: openai_harmony.HarmonyError: unexpected tokens remaining in message header",
            "It happens in multi-turn chats.",
            *traceback_lines(LEFTOVER_LIST),
        ]
    )
    error = only(text)
    assert error.line == 9
    assert error.header_words == ("I", "will", "not", "do", "that.")


def test_several_errors_in_one_paste() -> None:
    text = "\n".join(
        [
            "openai_harmony.HarmonyError: Unexpected token 200002 while expecting start token 200006",
            "HarmonyError('Unknown role: userassistant')",
            f"HarmonyError: {LEFTOVER_LIST}",
            "INFO: all good",
        ]
    )
    assert [(e.line, e.kind) for e in extract_text(text)] == [
        (1, "unexpected_token"),
        (2, "unknown_role"),
        (3, "header_leftover"),
    ]


def test_several_errors_on_one_line() -> None:
    # Three exception objects (the results of three requests): three failures, two of them
    # alike, not two.
    line = (
        "results: [HarmonyError('Unknown role: toolassistant'), HarmonyError('Unexpected token "
        "200002 while expecting start token 200006'), HarmonyError('Unknown role: toolassistant')]"
    )
    assert [e.code for e in extract_text(line)] == ["HD122", "HD111", "HD122"]


@pytest.mark.parametrize(
    "text",
    [
        "",
        'INFO:     127.0.0.1:1 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n',
        "[2026-03-14 08:09:10] ERROR:    Exception in ASGI application\n"
        "  + Exception Group Traceback (most recent call last):\n"
        '  |   File "/x/anyio/_backends/_asyncio.py", line 772, in __aexit__\n'
        "  |     raise BaseExceptionGroup(\n",
        "Traceback (most recent call last):\n"
        '  File "/x/vllm/entrypoints/openai/api_server.py", line 1, in run\n'
        "ValueError: max_tokens must be at least 1, got 0\n",
        "The parser expects a role after <|start|> and a channel after <|channel|>.\n",
    ],
)
def test_nothing_to_report(text: str) -> None:
    assert extract_text(text) == ()


def test_streaming_yields_line_numbers_from_an_offset() -> None:
    def lines() -> Iterator[str]:
        yield "noise\n"
        yield "HarmonyError: Unknown role: toolassistant\n"
        yield "noise\n"

    found = list(extract_errors(lines(), first_line=101))
    assert [(e.line, e.code) for e in found] == [(102, "HD122")]


def test_findings_stream_out_before_the_input_ends() -> None:
    error = "HarmonyError: Unexpected token 13 while expecting start token 200006\n"

    def endless() -> Iterator[str]:
        yield error
        while True:
            yield "INFO nothing to see\n"

    first = next(extract_errors(endless()))
    assert first.line == 1


def test_state_stays_bounded_over_many_processes() -> None:
    extractor = _Extractor()
    for number in range(1, 20_001):
        pid = number % 500
        list(extractor.feed(number, f"(APIServer pid={pid}) INFO 03-14 08:09:10 [a.py:1] tick"))
        if number % 97 == 0:
            list(
                extractor.feed(
                    number,
                    f"(APIServer pid={pid}) ERROR x.py:1] HarmonyError: Unknown role: r{number}",
                )
            )
    assert len(extractor.keys) <= MAX_KEYS
    assert len(extractor.pending) <= 64
    assert extractor.open is None


SAMPLE_EXPECTATIONS: dict[str, list[tuple[int, str, str | None, str | None]]] = {
    "vllm-traceback.log": [
        (10, "HD102", "vllm", ">=0.0.5"),
        (19, "HD111", "vllm", ">=0.0.5"),
        (29, "HD141", "vllm", ">=0.0.5"),
    ],
    "sglang-exception-group.log": [(20, "HD121", "sglang", ">=0.0.5")],
    "lmdeploy.log": [(4, "HD101", "lmdeploy", ">=0.0.5"), (7, "HD113", "lmdeploy", None)],
    "error-bodies.txt": [
        (2, "HD102", None, ">=0.0.5"),
        (10, "HD111", None, None),
        (12, "HD121", None, None),
        (18, "HD131", None, None),
        (22, "HD101", None, "0.0.1-0.0.4"),
        (24, "HD205", None, None),
    ],
    "other-engines.log": [
        (2, "HD181", "ollama", None),
        (7, "HD182", "lmstudio", None),
        (11, "HD183", "llama.cpp", None),
        (14, "HD184", "llama.cpp", None),
    ],
    "issue-paste.md": [(11, "HD107", "vllm", ">=0.0.5"), (17, "HD121", None, None)],
}


@pytest.mark.parametrize("name", sorted(SAMPLE_EXPECTATIONS))
def test_samples(name: str) -> None:
    found = extract_text((SAMPLES / name).read_text())
    got = [(e.line, e.code, e.server, e.harmony_version) for e in found]
    assert got == SAMPLE_EXPECTATIONS[name]


CORPUS = shared_files("corpus", pattern="*.log")


@pytest.mark.skipif(not CORPUS, reason="../shared/corpus is not beside the repository")
@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name[:3])
def test_shared_corpus(path: Path) -> None:
    found = extract_text(path.read_text())
    if "sglang" in path.name and "PARTIAL" in path.name:
        assert found == ()  # the error line never arrives
        return
    assert found, "a failure should be found"
    lines = path.read_text().split("\n")
    for error in found:
        assert error.code.startswith("HD")
        assert 1 <= error.span[0] <= error.line <= error.span[1] <= len(lines)
        assert error.message
        assert error.raw == lines[error.line - 1]


def test_explain_json_on_a_log() -> None:
    result = run(["explain", "-f", "json", str(SAMPLES / "vllm-traceback.log")])
    assert result.exit_code == 1, result.stderr
    record = json.loads(result.stdout)
    assert record["input"]["detected"] == "log"
    first, second, third = record["findings"]
    assert first["line"] == 10
    assert first["header"]["remainder"] == "to=functions.lookup_order"
    assert first["header"]["truncated"] is False
    assert [t["text"] for t in first["header"]["tokens"]][:2] == ["to", "="]
    assert second["token"] == {"id": 200002, "text": "<|return|>", "special": True}
    assert third["kind"] == "header_eos"
    assert result.stderr == ""


def test_explain_text_with_no_failure_exits_zero() -> None:
    result = run(["explain", "-"], "INFO: server started\nINFO: ready\n")
    assert (result.exit_code, result.stderr) == (0, "")
    assert "no Harmony failure found" in result.stdout


def test_explain_json_error_body_is_a_log() -> None:
    body = '{"error":{"message":"Unexpected token 12606 while expecting start token 200006"}}'
    result = run(["explain", "-f", "json", "-"], body)
    record = json.loads(result.stdout)
    assert result.exit_code == 1
    assert record["findings"][0]["token"]["text"] == "comment"
    assert record["findings"][0]["code"] == "HD112"


def test_explain_exit_zero_on_a_log() -> None:
    result = run(["explain", "--exit-zero", "-"], "HarmonyError: Unknown role: xx\n")
    assert result.exit_code == 0
    assert "HD122" in result.stdout


def test_explain_shows_untrusted_text_escaped() -> None:
    result = run(["explain", "-"], "\x1b[31mHarmonyError: Unknown role: a\x07b:warning:\x1b[0m\n")
    assert result.exit_code == 1
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "a\\x07b:warning:" in result.stdout


def test_explain_request_lines_without_output_ids_are_a_log() -> None:
    text = (
        "(APIServer pid=7) INFO 03-14 08:09:09 [logger.py:43] Received request chatcmpl-1: "
        "params: SamplingParams(n=1), prompt_token_ids: None, lora_request: None.\n"
        "(APIServer pid=7) ERROR 03-14 08:09:10 [serving.py:830] openai_harmony.HarmonyError: "
        "Unknown role: assistantassistant\n"
    )
    result = run(["explain", "-f", "json", "-"], text)
    assert result.exit_code == 1, result.stderr
    assert json.loads(result.stdout)["findings"][0]["line"] == 2


@pytest.mark.parametrize(
    "text",
    [
        # Node before 8.3 reading an object spread; a client's JSON.parse of a body
        "/app/server.js:12\n  const b = { ...a };\nSyntaxError: Unexpected token ...",
        "Uncaught SyntaxError: Unexpected token ... in JSON at position 0\n"
        "    at JSON.parse (<anonymous>)",
        "[openai] request failed: SyntaxError: Unexpected token ... \n    at JSON.parse",
    ],
)
def test_a_javascript_syntax_error_is_no_harmony_failure(text: str) -> None:
    """JavaScript's `SyntaxError: Unexpected token ...` names a character, no Harmony token;
    the same words without its class (an engine's id cut short), or with Harmony on the line,
    stay a Harmony failure."""
    assert extract_text(text) == ()
    assert [e.code for e in extract_text(text.replace("SyntaxError: ", ""))] == ["HD114"]
    shown = extract_text(text.replace("token ...", "token ... (gpt-oss-20b)"))
    assert [e.kind for e in shown] == ["unexpected_token"]
    assert run(["explain", "-"], stdin=text).exit_code == 0
    assert run(["scan", "-"], stdin=text).exit_code == 0


def test_a_forms_guessed_server_gives_way_to_any_sighting_that_names_one() -> None:
    # SGLang carries vLLM's check with its words: the summary line names no server, the
    # traceback after it does; one failure, named by the traceback
    text = (
        "Error in request: Expected 2 output messages (reasoning and final), but got 3.\n"
        'File "/x/site-packages/sglang/srt/entrypoints/openai/serving_chat.py", line 785, in f\n'
        "ValueError: Expected 2 output messages (reasoning and final), but got 3.\n"
    )
    assert [(e.code, e.server) for e in extract_text(text)] == [("HD187", "sglang")]
    alone = text.split("\n")[0] + "\n"
    assert [(e.code, e.server) for e in extract_text(alone)] == [("HD187", "vllm")]
