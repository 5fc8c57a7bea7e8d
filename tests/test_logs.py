"""logs.py: every log shape and message form, each failure once; `explain` on log text."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from harmony_doctor.logs.extract import (
    MAX_KEYS,
    _Extractor,
    extract_errors,
    extract_text,
    version_label,
)
from harmony_doctor.models import LogError
from tests.helpers import SAMPLES, run

SHARED_CORPUS = Path(__file__).parents[2] / "shared" / "corpus"

HARMONY_INIT = "/srv/venv/lib/python3.12/site-packages/openai_harmony/__init__.py"
VLLM_SERVING = "/srv/venv/lib/python3.12/site-packages/vllm/entrypoints/openai/serving_chat.py"


def traceback_lines(error: str, init_line: int = 637) -> list[str]:
    """A vLLM streaming traceback without prefixes, ending in `error`."""
    return [
        "Error in chat completion stream generator.",
        "Traceback (most recent call last):",
        f'  File "{VLLM_SERVING}", line 702, in chat_completion_stream_generator',
        "    harmony_parser.process(token_id)",
        f'  File "{HARMONY_INIT}", line {init_line}, in process',
        "    self._inner.process(token)",
        f"openai_harmony.HarmonyError: {error}",
    ]


def prefixed(lines: list[str], prefix: str) -> str:
    return "\n".join(prefix + line for line in lines) + "\n"


def only(text: str) -> LogError:
    found = extract_text(text)
    assert len(found) == 1, [(e.line, e.code, e.message) for e in found]
    return found[0]


LEFTOVER_SOME = 'unexpected tokens remaining in message header: Some("to=functions.get_time")'
LEFTOVER_LIST = 'unexpected tokens remaining in message header: ["I", "will", "not", "do", "that."]'


# --- prefixes --------------------------------------------------------------------------------

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


def test_interleaved_processes_keep_their_own_traceback() -> None:
    api = "(APIServer pid=11) ERROR 03-14 08:09:10 [serving.py:830] "
    engine = "(EngineCore_DP0 pid=12) INFO 03-14 08:09:10 [core.py:61] "
    lines = traceback_lines("Unexpected token 200002 while expecting start token 200006", 627)
    mixed: list[str] = []
    for index, line in enumerate(lines):
        mixed.append(api + line)
        if index % 2:
            mixed.append(engine + f"Finished request chatcmpl-{index}.")
    error = only("\n".join(mixed))
    assert (error.code, error.token, error.pid) == ("HD111", 200002, 11)
    assert error.harmony_version == "0.0.3-0.0.4"
    assert error.line == len(mixed)


# --- paste damage ----------------------------------------------------------------------------


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


def test_keyword_broken_across_a_wrap() -> None:
    text = (
        "ERROR 03-14 08:09:10 [serving.py:830] openai_harmony.HarmonyError: unexpected tokens "
        'remaining in mes\nsage header: Some("json to=functions.a")\n'
    )
    error = only(text)
    assert (error.line, error.span) == (1, (1, 2))
    assert error.header_words == ("json", "to=functions.a")


def test_wrap_padding_inside_a_line() -> None:
    text = prefixed(
        traceback_lines("Unexpected token 12606 while expecting start token 200006"), ""
    )
    padded = text.replace('__init__.py", line 637,', '__init__.py",                  line 637,')
    padded = padded.replace("Unexpected token", "Unexpected                 token")
    error = only(padded)
    assert (error.code, error.token, error.harmony_version) == ("HD112", 12606, ">=0.0.5")


def test_elision_between_frames_keeps_the_traceback() -> None:
    lines = traceback_lines(LEFTOVER_LIST, 627)
    text = "\n".join([*lines[:3], ".....", *lines[4:]])
    error = only(text)
    assert error.harmony_version == "0.0.3-0.0.4"
    assert error.code == "HD101"


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


def test_rust_debug_escapes_in_words() -> None:
    error = only(
        r'HarmonyError: unexpected tokens remaining in message header: ["caf\u{e9}", "a\"b", "c\\d"]'
    )
    assert error.header_words == ("café", 'a"b', "c\\d")


# --- wrappers and bodies ---------------------------------------------------------------------


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


def test_message_forms_across_versions() -> None:
    old = only(
        "HarmonyError: Could not parse header: too many tokens remaining after extracting "
        "content-type and recipient"
    )
    assert (old.kind, old.harmony_version, old.header_words) == ("header_leftover", "0.0.1", ())
    listed = only(f"HarmonyError: {LEFTOVER_LIST}")
    assert listed.harmony_version == "0.0.1-0.0.4"
    some = only(f"HarmonyError: {LEFTOVER_SOME}")
    assert some.harmony_version == ">=0.0.5"
    literal = only("HarmonyError('Unexpected token N while expecting start token 200006')")
    assert (literal.token, literal.code) == (None, "HD114")


def test_load_and_render_failures() -> None:
    text = "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "/app/server.py", line 9, in <module>',
            "    enc = load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)",
            f'  File "{HARMONY_INIT}", line 674, in load_harmony_encoding',
            "    inner: _PyHarmonyEncoding = _load_harmony_encoding(name)",
            "                                ~~~~~~~~~~~~~~~~~~~~~~^^^^^^",
            "openai_harmony.HarmonyError: error downloading or loading vocab file: "
            "request timed out",
            "",
            "ERROR:root:render failed: invalid conversation JSON: missing field `role` at line 1",
        ]
    )
    vocab, render = extract_text(text)
    assert (vocab.code, vocab.harmony_version, vocab.span) == ("HD171", "0.0.2", (1, 7))
    assert vocab.message.endswith("request timed out")
    assert (render.code, render.kind, render.line) == ("HD175", "render_error", 9)


def test_other_engines() -> None:
    text = "\n".join(
        [
            "Mar 14 08:09:10 box ollama[77]: time=2026-03-14T08:09:10Z level=ERROR "
            'source=routes.go:1 msg="error parsing tool call: raw=\'{\\"q\\": 1\', '
            'err=unexpected end of JSON input"',
            "2026-03-14 08:09:11 [ERROR]",
            "Failed to parse tool call: Unexpected end of content",
            "Model Output: <|channel|>commentary to=functions.f<|message|>{",
            'srv  send_error: {"code":500,"message":"Failed to parse input at pos 7: '
            '<|channel|>final?"}',
        ]
    )
    ollama, lmstudio, llamacpp = extract_text(text)
    assert (ollama.code, ollama.server, ollama.pid, ollama.context) == (
        "HD181",
        "ollama",
        77,
        '{"q": 1',
    )
    assert (lmstudio.code, lmstudio.line, lmstudio.server) == ("HD182", 3, "lmstudio")
    assert lmstudio.timestamp == "2026-03-14 08:09:11"
    assert lmstudio.context == "<|channel|>commentary to=functions.f<|message|>{"
    assert (llamacpp.code, llamacpp.kind, llamacpp.server) == ("HD183", "input_parse", "llama.cpp")


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
    assert (error.code, error.line, error.server) == ("HD184", 1, "llama.cpp")
    assert error.message == message


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


# --- once per failure ------------------------------------------------------------------------


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


def test_exception_group_reports_the_inner_error_once() -> None:
    text = "\n".join(
        [
            "[2026-03-14 08:09:10] ERROR:    Exception in ASGI application",
            "  + Exception Group Traceback (most recent call last):",
            '  |   File "/x/dist-packages/starlette/_utils.py", line 77, in collapse_excgroups',
            "  | ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)",
            "  +-+---------------- 1 ----------------",
            "    | Traceback (most recent call last):",
            f'    |   File "{HARMONY_INIT}", line 637, in process',
            "    |     self._inner.process(token)",
            "    | openai_harmony.HarmonyError: Unknown role: <|start|>assistant",
            "    +------------------------------------",
            "",
            "During handling of the above exception, another exception occurred:",
            "",
            "Traceback (most recent call last):",
            '  File "/x/dist-packages/uvicorn/protocols/http/h11_impl.py", line 403, in run_asgi',
            "openai_harmony.HarmonyError: Unknown role: <|start|>assistant",
        ]
    )
    error = only(text)
    assert (error.line, error.span, error.code) == (9, (2, 9), "HD121")
    assert error.timestamp == "2026-03-14 08:09:10"
    assert error.harmony_version == ">=0.0.5"


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


# --- nothing to report -----------------------------------------------------------------------


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


# --- streaming -------------------------------------------------------------------------------


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


def test_version_labels() -> None:
    assert version_label(frozenset({1})) == "0.0.1"
    assert version_label(frozenset({1, 2})) == "0.0.1-0.0.2"
    assert version_label(frozenset({3, 4})) == "0.0.3-0.0.4"
    assert version_label(frozenset({5})) == ">=0.0.5"
    assert version_label(frozenset({1, 2, 3, 4, 5})) is None
    assert version_label(None) is None


# --- samples and the shared corpus -----------------------------------------------------------

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


CORPUS = sorted(SHARED_CORPUS.glob("*.log")) if SHARED_CORPUS.is_dir() else []


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


# --- the CLI ---------------------------------------------------------------------------------


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


# --- more damage ----------------------------------------------------------------------------


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


def test_several_errors_on_one_line() -> None:
    line = (
        "results: [HarmonyError('Unknown role: toolassistant'), HarmonyError('Unexpected token "
        "200002 while expecting start token 200006'), HarmonyError('Unknown role: toolassistant')]"
    )
    assert [e.code for e in extract_text(line)] == ["HD122", "HD111"]


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


def test_ipython_traceback() -> None:
    text = "\n".join(
        [
            "-" * 75,
            "HarmonyError                              Traceback (most recent call last)",
            "Cell In[7], line 3",
            "----> 3 enc.parse_messages_from_completion_tokens(tokens, Role.ASSISTANT)",
            "",
            "File ~/venv/lib/python3.11/site-packages/openai_harmony/__init__.py:525, in "
            "HarmonyEncoding.parse_messages_from_completion_tokens(self, tokens, role)",
            "--> 525     raw_json: str = self._inner.parse_messages_from_completion_tokens(",
            "    526         list(tokens), role_str",
            "",
            "HarmonyError: Unexpected EOS while waiting for message header to complete",
        ]
    )
    error = only(text)
    assert (error.code, error.line, error.span) == ("HD141", 10, (2, 10))
    assert error.harmony_version == "0.0.3-0.0.4"


def test_rich_traceback_box() -> None:
    text = "\n".join(
        [
            "╭──────────── Traceback (most recent call last) ────────────╮",
            "│ /app/site-packages/openai_harmony/__init__.py:637 in       │",
            "│ process                                                    │",
            "│ ❱ 637 │   │   self._inner.process(token)                   │",
            "╰────────────────────────────────────────────────────────────╯",
            "HarmonyError: Unknown role: assistantassistant",
        ]
    )
    error = only(text)
    assert (error.code, error.span, error.harmony_version) == ("HD121", (1, 6), ">=0.0.5")


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
