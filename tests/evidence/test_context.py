"""evidence/context.py: the server every piece of a paste names together."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from harmony_doctor.evidence.context import attribute, one_per_failure, servers_named
from harmony_doctor.logs.extract import extract_text

if TYPE_CHECKING:
    from harmony_doctor.models import LogError

SGLANG = """\
[2025-09-01 10:00:00] ERROR [serving_chat.py:560] Error: unknown role: assistantassistant
Traceback (most recent call last):
  File "/usr/lib/python3.12/site-packages/sglang/srt/entrypoints/openai/serving_chat.py", line 540, in gen
    parser.process(token)
  File "/usr/lib/python3.12/site-packages/openai_harmony/__init__.py", line 637, in process
    self._inner.process(token)
openai_harmony.HarmonyError: Unknown role: assistantassistant
"""


def test_package_paths_and_own_names_are_counted() -> None:
    named = servers_named(SGLANG)
    assert named["sglang"] >= 1 and named["vllm"] == 0


def test_a_line_shape_another_server_shares_gives_way_to_the_paths() -> None:
    found = extract_text(SGLANG)
    assert {e.server for e in found} == {"vllm"}  # `[serving_chat.py:N]` alone says vLLM
    assert {e.server for e in attribute(found, SGLANG)} == {"sglang"}


def test_a_server_the_paste_names_itself_is_kept() -> None:
    vllm = SGLANG.replace("sglang/srt", "vllm")
    found = extract_text(vllm)
    assert {e.server for e in attribute(found, vllm)} == {"vllm"}
    both = SGLANG + '  File "/x/site-packages/vllm/entrypoints/a.py", line 1, in f\n'
    assert attribute(found, both) == found  # two servers named: each line keeps its own
    many = SGLANG + SGLANG.replace("unknown role", "x") + "ollama[12]: level=INFO msg=ok\n"
    assert attribute(found, many) == found


CLIENT_AND_SERVER = """\
openai.InternalServerError: Error code: 500 - {'error': {'message': 'unexpected tokens \
remaining in message header: Some("to=functions.get_weather")', 'code': 500}}

(APIServer pid=1) ERROR 09-01 10:00:00 [serving_chat.py:1001] Error in chat completion.
(APIServer pid=1) ERROR 09-01 10:00:00 [serving_chat.py:1001] Traceback (most recent call last):
(APIServer pid=1) ERROR 09-01 10:00:00 [serving_chat.py:1001]   File "/x/vllm/serving_chat.py", \
line 642, in gen
(APIServer pid=1) ERROR 09-01 10:00:00 [serving_chat.py:1001]     harmony_parser.process(token_id)
(APIServer pid=1) ERROR 09-01 10:00:00 [serving_chat.py:1001] openai_harmony.HarmonyError: \
unexpected tokens remaining in message header: Some("to=functions.get_weather")
"""


def test_the_clients_echo_and_the_servers_raise_far_apart_are_one_failure() -> None:
    found = extract_text(CLIENT_AND_SERVER)
    assert len(found) == 2  # the extractor alone: too far apart to be one
    (one,) = one_per_failure(found)
    # at the first sighting's line, as scan counts it; the server's facts taken from its raise
    assert one.server == "vllm" and one.pid == 1 and one.line == 1 and one.span == (1, 7)


def test_two_processes_or_two_times_are_two_failures() -> None:
    other = CLIENT_AND_SERVER + CLIENT_AND_SERVER.split("\n\n", 1)[1].replace(
        "pid=1", "pid=2"
    ).replace("10:00:00", "10:05:00")
    found = extract_text(other)
    assert len(one_per_failure(found)) == 2


def test_an_error_quoted_in_a_sentence_and_again_with_its_remainder_is_one_failure() -> None:
    text = (
        "Every other call ends in `HarmonyError: unexpected tokens remaining in message header`"
        ". The reply comes back empty.\n\nFrom the server log:\n\n```\n"
        "HarmonyError: unexpected tokens remaining in message header: "
        'Some("I will look that up for you now")\n```\n'
    )
    found = extract_text(text)
    # the sentence's quote, in inline code with nothing after the words, names the failure: a
    # mention, folded into the log's line nearby
    assert len(found) == 1
    (one,) = one_per_failure(found)
    assert "look that up" in one.message
    other = text.replace("look that up for you now", "x").replace(
        "message header`", 'message header: Some("y")`'
    )
    assert len(one_per_failure(extract_text(other))) == 2  # two remainders: two failures


def _distinct_failures(count: int) -> str:
    """A vLLM log of `count` failures, each its own (another recipient), a second apart; one in
    ten a traceback under its summary line."""
    head = "(APIServer pid=7) ERROR 11-12 {:02d}:{:02d}:{:02d} [serving.py:1184] "
    lines = []
    for n in range(count):
        stamp = head.format(n // 3600 % 24, n // 60 % 60, n % 60)
        message = f'unexpected tokens remaining in message header: Some("to=functions.f{n}")'
        if n % 10 == 0:
            lines += [
                stamp + "Error in chat completion.",
                stamp + "Traceback (most recent call last):",
            ]
            lines += [stamp + '  File "/x/vllm/serving.py", line 1, in gen', stamp + "    parse(t)"]
            lines.append(stamp + "openai_harmony.HarmonyError: " + message)
        else:
            lines.append(stamp + "openai_harmony.HarmonyError: " + message)
    return "\n".join(lines) + "\n"


def _calls(errors: tuple[LogError, ...]) -> int:
    """The Python calls `one_per_failure(errors)` makes."""
    calls = 0

    def count(frame: object, event: str, arg: object) -> None:
        nonlocal calls
        calls += event == "call"

    sys.setprofile(count)
    try:
        one_per_failure(errors)
    finally:
        sys.setprofile(None)
    return calls


def test_the_work_of_one_finding_per_failure_grows_with_the_failures_not_their_square() -> None:
    """Red team H5: each error was compared with every one kept (8,000 distinct failures: 32
    million comparisons, 5 s; 32,000: 67 s; 182,000 did not end in 10 minutes)."""
    found = extract_text(_distinct_failures(1200))
    assert len(found) == 1200
    made = [_calls(found[:n]) for n in (400, 800, 1200)]
    # what 400 more failures add stays the same, to the bisections' logarithm: linear
    assert made[2] - made[1] <= 1.15 * (made[1] - made[0]), made
    assert len(one_per_failure(found)) == 1200


def test_a_log_shown_twice_is_every_failure_twice() -> None:
    """Red team H9: `cat log log` was 3 failures in explain, 6 in scan: the same code and
    message were one failure at any distance where pid or time did not differ."""
    once = one_per_failure(extract_text(CLIENT_AND_SERVER.split("\n\n", 1)[1]))
    twice = one_per_failure(extract_text(CLIENT_AND_SERVER.split("\n\n", 1)[1] * 2))
    assert len(once) == 1 and len(twice) == 2


def test_requests_failing_alike_without_stamps_are_one_failure_each() -> None:
    """Red team H9: five failing requests with access lines between were one finding."""
    text = (
        'INFO:     10.0.0.1:5000 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
        "openai_harmony.HarmonyError: Unexpected token 200002 while expecting start token 200006\n"
        'INFO:     10.0.0.1:5000 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error\n'
    ) * 5
    found = one_per_failure(extract_text(text))
    assert [e.line for e in found] == [2, 5, 8, 11, 14]
