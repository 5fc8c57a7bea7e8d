"""extract.py: each failure once, and every failure: sightings merge by place, never by text.

Two sightings are one failure only when their places say so (a chained re-raise, a summary
line before its traceback, an echo just after the error it copies, a mention of the failure
nearby); two failures with the same text stay two, however close and whatever their stamps.
Properties: the failures of `text + text` are twice those of `text`, and splitting a log at a
line outside a failure's lines keeps them.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harmony_doctor.logs import extract_text
from tests.helpers import SAMPLES, shared_files
from tests.logs.helpers import HARMONY_INIT, LEFTOVER_SOME, traceback_lines

UNEXPECTED = "Unexpected token 200002 while expecting start token 200006"
ROLE = "Unknown role: assistantassistant"


def codes(text: str) -> Counter[str]:
    return Counter(e.code for e in extract_text(text))


def count(text: str) -> int:
    return len(extract_text(text))


# --- the same text, different failures --------------------------------------------------------


def test_llamacpp_failed_requests_without_timestamps_count_one_each() -> None:
    body = {"error": {"code": 500, "message": "Failed to parse input at pos 182: <|channel|>x"}}
    pair = (
        "srv  log_server_r: request: POST /v1/chat/completions 127.0.0.1 500\n"
        f"srv  log_server_r: response: {json.dumps(body)}\n"
    )
    assert codes(pair * 100) == {"HD183": 100}


@pytest.mark.parametrize("requests_logged", [True, False])
def test_vllm_requests_failing_in_one_second_count_one_each(requests_logged: bool) -> None:
    lines = []
    for n in range(10):
        if requests_logged:
            lines.append(
                f"(APIServer pid=7) INFO 11-28 10:15:03 [logger.py:43] Received request "
                f"chatcmpl-{n}: params: SamplingParams(n=1), prompt_token_ids: None."
            )
        lines.append(
            "(APIServer pid=7) ERROR 11-28 10:15:03 [serving_chat.py:1145] "
            f"openai_harmony.HarmonyError: {UNEXPECTED}"
        )
    assert codes("\n".join(lines)) == {"HD111": 10}


def test_same_failure_in_interleaved_tracebacks_of_two_processes_is_two() -> None:
    one = traceback_lines(UNEXPECTED)
    mixed = [
        f"(APIServer pid={pid}) ERROR 11-28 10:15:03 [serving.py:1] {line}"
        for line in one
        for pid in (1, 2)
    ]
    assert [(e.line, e.pid) for e in extract_text("\n".join(mixed))] == [(13, 1), (14, 2)]


VLLM_RECORD = "(APIServer pid=1) ERROR 11-28 10:00:00 [serving.py:1] "


@pytest.mark.parametrize(
    ("summary", "prefix"),
    [
        ("ERROR:root:{message}", ""),  # logger.exception(e)
        (VLLM_RECORD + "Error in chat completion stream generator: {message}", VLLM_RECORD),
        (
            "2025-11-03 16:20:14,877 - lmdeploy - ERROR - async_engine.py:659 - [safe_run] "
            "exception caught: HarmonyError {message}",
            "",
        ),
    ],
)
def test_summary_line_right_above_its_traceback_is_the_same_failure(
    summary: str, prefix: str
) -> None:
    tail = [prefix + line for line in traceback_lines(ROLE)[1:]]
    found = extract_text("\n".join([summary.format(message=ROLE), *tail]))
    assert [(e.line, e.code) for e in found] == [(1, "HD121")]
    # A traceback stamped seconds after the line above it was not written by the same call.
    stamped = [line.replace("10:00:00", "10:00:07") for line in tail]
    assert count("\n".join([summary.format(message=ROLE), *stamped])) == 1 + bool(prefix)


# An excerpt taken with `grep -A/-B` puts `--` between its groups of lines (SGLang paste 114:
# the summary line, `--`, then its traceback); a person marks a cut with `...` or `[snip]`.
SGLANG_SUMMARY = "[2025-08-08 16:52:59] Error in request: {message}"


@pytest.mark.parametrize("cut", ["--", "...", "[snip]"])
def test_a_cut_between_a_summary_and_its_traceback_does_not_split_them(cut: str) -> None:
    tail = traceback_lines(ROLE)[1:]
    found = extract_text("\n".join([SGLANG_SUMMARY.format(message=ROLE), cut, *tail]))
    assert [(e.line, e.code) for e in found] == [(1, "HD121")]
    # a line of the log's own there is another record: the summary of another failure
    other = "[2025-08-08 16:52:59] Received request: x"
    assert count("\n".join([SGLANG_SUMMARY.format(message=ROLE), other, *tail])) == 2


def test_a_cut_between_an_error_and_its_echo_does_not_split_them() -> None:
    error = f"openai_harmony.HarmonyError: {UNEXPECTED}"
    body = json.dumps({"error": {"message": UNEXPECTED}})
    filler = ["DEBUG a", "DEBUG b", "DEBUG c"]
    assert count("\n".join([error, *filler, "--", body])) == 1
    assert count("\n".join([error, *filler, "DEBUG d", body])) == 2  # five lines: too far


def test_failures_alike_on_either_side_of_a_cut_stay_two_and_keep_their_words() -> None:
    error = f"openai_harmony.HarmonyError: {UNEXPECTED}"
    found = extract_text("\n".join([error, "--", error]))
    assert [e.line for e in found] == [1, 3]
    # `--` under a message is a cut, not the message's next words
    assert [e.message for e in found] == [UNEXPECTED, UNEXPECTED]


def test_a_line_before_a_record_and_a_traceback_is_not_its_summary() -> None:
    # The record line `Error in chat completion stream generator.` belongs to the traceback
    # under it: the error line above both is another failure's.
    text = "\n".join([f"openai_harmony.HarmonyError: {ROLE}", *traceback_lines(ROLE)])
    assert [e.line for e in extract_text(text)] == [1, 8]


def test_a_body_is_never_a_summary() -> None:
    text = "\n".join([json.dumps({"error": {"message": ROLE}}), *traceback_lines(ROLE)[1:]])
    assert count(text) == 2


def test_two_sub_exceptions_of_one_group_are_two_failures() -> None:
    def branch(number: int) -> list[str]:
        return [
            f"    +---------------- {number} ----------------",
            "    | Traceback (most recent call last):",
            f'    |   File "{HARMONY_INIT}", line 637, in process',
            "    |     self._inner.process(token)",
            f"    | openai_harmony.HarmonyError: {ROLE}",
        ]

    text = "\n".join(
        [
            "[2026-03-14 08:09:10] ERROR:    Exception in ASGI application",
            "  + Exception Group Traceback (most recent call last):",
            '  |   File "/x/dist-packages/anyio/_backends/_asyncio.py", line 772, in __aexit__',
            "  | ExceptionGroup: unhandled errors in a TaskGroup (2 sub-exceptions)",
            *branch(1),
            *branch(2),
            "    +------------------------------------",
            "",
            "During handling of the above exception, another exception occurred:",
            "",
            "Traceback (most recent call last):",
            '  File "/x/dist-packages/starlette/_utils.py", line 83, in collapse_excgroups',
            "    raise exc",
            f"openai_harmony.HarmonyError: {ROLE}",
        ]
    )
    # The re-raise is the exception handled last: the second sub-exception.
    assert [e.line for e in extract_text(text)] == [9, 14]


def test_a_body_before_a_request_line_is_not_the_next_requests_echo() -> None:
    text = "\n".join(
        [
            f'{{"error": {{"message": "{UNEXPECTED}"}}}}',
            "(APIServer pid=1) INFO 11-28 10:00:00 [logger.py:43] Received request chatcmpl-2: x",
            f"(APIServer pid=1) ERROR 11-28 10:00:01 [serving.py:1] HarmonyError: {UNEXPECTED}",
        ]
    )
    assert count(text) == 2


def test_an_echo_moves_outwards_only() -> None:
    # An ollama error, its access line, the body the client got; then the same again for a
    # second request: the second log line is not a copy of the first body.
    raw = "error parsing tool call: raw='{\\\"a\\\": 1<|call|>', err=invalid character '<'"
    once = [
        f"Nov 12 10:41:19 box ollama[1893]: time=2025-11-12T10:41:19.207+01:00 level=WARN "
        f'source=routes.go:1593 msg="{raw}"',
        "Nov 12 10:41:19 box ollama[1893]: [GIN] 2025/11/12 - 10:41:19 | 500 | 11.84s | "
        '127.0.0.1 | POST "/api/chat"',
        json.dumps({"error": raw.replace("\\", "")}),
    ]
    assert [e.code for e in extract_text("\n".join(once))] == ["HD181"]
    assert [e.line for e in extract_text("\n".join(once * 2))] == [1, 4]


def test_request_ids_tell_copies_apart() -> None:
    def lines(other: str) -> str:
        return "\n".join(
            [
                f"WARNING:root:request chatcmpl-a1 failed: {UNEXPECTED}",
                json.dumps({"id": other, "error": {"message": UNEXPECTED}}),
            ]
        )

    assert count(lines("chatcmpl-a1")) == 1
    assert count(lines("chatcmpl-b2")) == 2


def test_mentions_fold_into_the_failure_they_name_and_count_alone() -> None:
    mention = "Title: openai_harmony.HarmonyError: unexpected tokens remaining in message header"
    text = "\n".join(
        [mention, "It happens after a few turns.", mention, *traceback_lines(LEFTOVER_SOME)]
    )
    assert [e.line for e in extract_text(text)] == [10]
    assert count(f"{mention}\n{mention}\n") == 2  # nothing says two mentions are one failure


def _pytest_session(tests: list[str], message: str) -> str:
    sections = "".join(
        f"____ {name} ____\n\n    def {name}():\n>       enc.parse(toks)\n"
        f"E       openai_harmony.HarmonyError: {message}\n\ntest_t.py:12: HarmonyError\n"
        for name in tests
    )
    summary = "".join(
        f"FAILED test_t.py::{name} - openai_harmony.HarmonyError: {message}\n" for name in tests
    )
    return (
        "collected 3 items\n\n=== FAILURES ===\n"
        + sections
        + "=== short test summary info ===\n"
        + summary
        + "=== 2 failed, 1 passed ===\n"
    )


@pytest.mark.parametrize("tests", [["test_a"], ["test_a", "test_b[x-1]"]])
def test_pytest_summary_lines_fold_into_the_failures_they_quote(tests: list[str]) -> None:
    assert codes(_pytest_session(tests, LEFTOVER_SOME)) == {"HD102": len(tests)}


def test_pytest_summary_lines_alone_count_one_each() -> None:
    summary = f"FAILED test_t.py::test_a - openai_harmony.HarmonyError: {UNEXPECTED}\n"
    assert count(summary + summary.replace("test_a", "test_b")) == 2


def test_markup_leaks_one_per_body() -> None:
    pretty = "\n".join(
        [
            "{",
            '  "reasoning_content": "<|channel|>analysis<|message|>Think.",',
            '  "content": "<|channel|>final<|message|>Hi",',
            '  "finish_reason": "stop"',
            "}",
        ]
    )
    assert codes(pretty) == {"HD205": 1}
    line = json.dumps({"choices": [{"message": {"content": "<|channel|>final<|message|>Hi"}}]})
    assert codes(f"{line}\n{line}\n") == {"HD205": 2}


# --- properties on the samples, the corpus and the seed thread ---------------------------------

# Each failure of a sample by the lines it spans (first, last, code), read off the files: the
# traceback or record it is logged in and the copies the log shows of it.
SAMPLE_FAILURES: dict[str, list[tuple[int, int, str]]] = {
    "vllm-traceback.log": [(3, 10, "HD102"), (13, 19, "HD111"), (21, 29, "HD141")],
    "vllm-requests.log": [(6, 6, "HD112")],
    "sglang-exception-group.log": [(3, 33, "HD121")],
    "lmdeploy.log": [(4, 4, "HD101"), (7, 7, "HD113")],
    "error-bodies.txt": [
        (2, 2, "HD102"),
        (5, 10, "HD111"),
        (12, 12, "HD121"),
        (18, 18, "HD131"),
        (22, 22, "HD101"),
        (24, 24, "HD205"),
    ],
    # ollama's error, its access line and the body; LM Studio's stamp, message, model output
    "other-engines.log": [(2, 4, "HD181"), (6, 8, "HD182"), (11, 11, "HD183"), (14, 14, "HD184")],
    # the server's traceback, then the client's copy of it outside the code block
    "issue-paste.md": [(6, 15, "HD107"), (17, 17, "HD121")],
    # tool-chat.json: line 29 is a user's message in a request, markup it wrote, not a leak
}
TEXTS = [p for p in sorted(SAMPLES.iterdir()) if p.is_file()]
SHARED_TEXTS = [*shared_files("corpus", pattern="*.log"), *shared_files("seed")]


def test_every_sample_with_failures_is_listed() -> None:
    found = {p.name for p in TEXTS if extract_text(p.read_text())}
    assert found == set(SAMPLE_FAILURES)


@pytest.mark.parametrize("name", sorted(SAMPLE_FAILURES))
def test_samples_each_failure_once(name: str) -> None:
    found = extract_text((SAMPLES / name).read_text())
    expected = SAMPLE_FAILURES[name]
    assert [e.code for e in found] == [code for _, _, code in expected]
    for error, (first, last, _) in zip(found, expected, strict=True):
        assert first <= error.span[0] <= error.line <= last


@pytest.mark.parametrize("name", sorted(SAMPLE_FAILURES))
def test_samples_split_outside_a_failure_keep_every_failure(name: str) -> None:
    lines = (SAMPLES / name).read_text().split("\n")
    whole = codes("\n".join(lines))
    inside = {k for first, last, _ in SAMPLE_FAILURES[name] for k in range(first, last)}
    for k in range(1, len(lines)):
        if k not in inside:  # between line k and line k + 1
            head, tail = "\n".join(lines[:k]) + "\n", "\n".join(lines[k:])
            assert codes(head) + codes(tail) == whole, k


@pytest.mark.parametrize("path", [*TEXTS, *SHARED_TEXTS], ids=lambda p: p.name[:24])
def test_text_twice_is_every_failure_twice(path: Path) -> None:
    text = path.read_text(errors="replace")
    text += "" if text.endswith("\n") else "\n"
    once = codes(text)
    assert codes(text + text) == once + once


# --- properties on generated logs -------------------------------------------------------------

# Each unit is one request of a server or client as it shows in a log, failing once with the
# message it is given (or, for `filler`, not at all). Messages repeat across units on purpose.
MESSAGES = (
    UNEXPECTED,
    ROLE,
    LEFTOVER_SOME,
    "Unexpected EOS while waiting for message header to complete",
)
ADDRESS = "10.0.0.2:5555"


def _vllm(pid: int, stamp: str, n: int, lines: list[str]) -> list[str]:
    prefix = f"(APIServer pid={pid}) "
    return [
        f"{prefix}INFO {stamp} [logger.py:43] Received request chatcmpl-{n}: params: x.",
        *(f"{prefix}ERROR {stamp} [serving_chat.py:1145] {line}" for line in lines),
        f'{prefix}INFO:     {ADDRESS} - "POST /v1/chat/completions HTTP/1.1" 500 Internal Error',
    ]


def unit(kind: str, message: str, pid: int, stamp: str, n: int) -> list[str]:
    error = f"openai_harmony.HarmonyError: {message}"
    body = json.dumps({"error": {"message": message, "code": 500}})
    match kind:
        case "vllm-traceback":
            return _vllm(pid, stamp, n, traceback_lines(message))
        case "vllm-line":
            return _vllm(pid, stamp, n, [error])
        case "vllm-summary":  # logger.exception("...: %s", e): the message, then the traceback
            summary = f"Error in chat completion stream generator: {message}"
            return _vllm(pid, stamp, n, [summary, *traceback_lines(message)[1:]])
        case "sglang-group":
            group = (SAMPLES / "sglang-exception-group.log").read_text().splitlines()[1:33]
            return [line.replace(ROLE, message) for line in group]
        case "llamacpp":
            return [
                "srv  log_server_r: request: POST /v1/chat/completions 127.0.0.1 500",
                f"srv  log_server_r: response: {body}",
            ]
        case "lmdeploy":
            return [
                f"2025-11-03 16:20:11,403 - lmdeploy - INFO - turbomind.py:699 - "
                f"[async_stream_infer] session {n} start",
                f"2025-11-03 16:20:14,877 - lmdeploy - ERROR - async_engine.py:659 - "
                f"[safe_run] exception caught: HarmonyError {message}",
            ]
        case "client":  # a client's traceback, its wrapper's re-raise, the body it printed
            return [
                f"$ python client.py --case {n}",
                *traceback_lines(message)[1:],
                "",
                "The above exception was the direct cause of the following exception:",
                "",
                "Traceback (most recent call last):",
                '  File "/app/agent.py", line 88, in step',
                "    raise RuntimeError(f'OpenAI response failed: {exc}') from exc",
                f"RuntimeError: OpenAI response failed: {message}",
                body,
            ]
        case _:
            return [f"(APIServer pid={pid}) INFO {stamp} [loggers.py:123] Engine 000: idle"]


KINDS: tuple[str, ...] = ("vllm-traceback", "vllm-line", "vllm-summary", "sglang-group")
KINDS += ("llamacpp", "lmdeploy", "client", "filler")
units_st = st.lists(
    st.tuples(
        st.sampled_from(KINDS),
        st.sampled_from(MESSAGES),
        st.sampled_from((1, 2)),
        st.sampled_from(("11-28 10:15:03", "11-28 10:15:04")),
    ),
    min_size=1,
    max_size=8,
)


def _build(spec: list[tuple[str, str, int, str]]) -> list[list[str]]:
    return [
        unit(kind, message, pid, stamp, n) for n, (kind, message, pid, stamp) in enumerate(spec)
    ]


@settings(max_examples=150, deadline=None)
@given(units_st)
def test_generated_logs_each_failure_once_and_every_failure(
    spec: list[tuple[str, str, int, str]],
) -> None:
    pieces = _build(spec)
    alone = [codes("\n".join(piece) + "\n") for piece in pieces]
    assert all(
        sum(c.values()) == (kind != "filler") for c, (kind, *_) in zip(alone, spec, strict=True)
    )
    text = "".join("\n".join(piece) + "\n" for piece in pieces)
    whole = codes(text)
    assert whole == sum(alone, Counter())
    assert codes(text + text) == whole + whole


@settings(max_examples=100, deadline=None)
@given(units_st, st.data())
def test_generated_logs_split_between_requests_keep_every_failure(
    spec: list[tuple[str, str, int, str]], data: st.DataObject
) -> None:
    pieces = ["\n".join(piece) + "\n" for piece in _build(spec)]
    cut = data.draw(st.integers(0, len(pieces)))
    head, tail = "".join(pieces[:cut]), "".join(pieces[cut:])
    assert codes(head) + codes(tail) == codes(head + tail)
