"""extract.py: placing a failure asks `_same_event` only of the sightings its pure first tests
do not refuse (near enough, a message that may be compatible), and decides as the reference
that asks every recent and pending sighting in turn, newest first, with `compatible` as first
written (`sorted` by length): the same failures, in the same order, with the same process
states touched. On generated logs mixing tracebacks, chained re-raises, summary lines, echoes,
mentions, cut copies, request ids, markup leaks, LM Studio output, several processes and lines
the scan did not feed."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harmony_doctor.faults.catalogue import MESSAGE_FORMS
from harmony_doctor.logs import extract
from harmony_doctor.logs.extract import _Extractor
from harmony_doctor.logs.sightings import Pending
from harmony_doctor.models import LogError
from tests.logs.helpers import traceback_lines


def _compatible_reference(old: Pending, new: Pending) -> bool:
    """`compatible` as first written."""
    if old.error.kind != new.error.kind:
        return False
    if new.error.kind == "markup_leak":
        return True
    if old.mention or new.mention:
        return old.form == new.form and old.mention != new.mention
    if old.norm == new.norm:
        return True
    shorter, longer = sorted((old.norm, new.norm), key=len)
    return longer.startswith(shorter)


Fed = list[tuple[int, str]]


def _run(fed: Fed) -> tuple[list[LogError], list[str]]:
    """The failures in the order the extractor gives them, and its processes, least recent
    first (which `_same_event` may touch: the order proves it touched the same ones)."""
    extractor = _Extractor()
    found: list[LogError] = []
    number = 0
    for number, raw in fed:
        found.extend(extractor.feed(number, raw))
    found.extend(extractor.close(number))
    return found, list(extractor.keys)


def _both(fed: Fed) -> tuple[tuple[list[LogError], list[str]], tuple[list[LogError], list[str]]]:
    fast = _run(fed)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_Extractor, "_place", _Extractor._place_reference)
        patch.setattr(extract, "compatible", _compatible_reference)
        slow = _run(fed)
    return fast, slow


# -- generated logs ------------------------------------------------------------------------------

LEFTOVER = 'unexpected tokens remaining in message header: Some("to=functions.tool_{n}")'
MESSAGES = [
    *(LEFTOVER.format(n=n) for n in ("1", "12", "123", "2")),
    'unexpected tokens remaining in message header: ["I", "will", "not"]',
    *(example for form in MESSAGE_FORMS for example in form.examples[:1]),
]
MENTION = "Since the upgrade: HarmonyError: unexpected tokens remaining in message header"
PIDS = ["", "(APIServer pid=1) ", "(APIServer pid=2) ", "vllm-1  | "]
STAMPS = ["ERROR 11-28 10:00:00 [serving.py:1] ", "ERROR 11-28 10:00:07 [serving.py:1] ", ""]


@st.composite
def _block(draw: st.DrawFn) -> list[str]:
    """A few lines one process (or none) writes: a failure in one of its shapes, or not."""
    pid = draw(st.sampled_from(PIDS))
    stamp = draw(st.sampled_from(STAMPS))
    whole = draw(st.sampled_from(MESSAGES))

    def cut() -> str:
        """The message, or a copy of it cut short (as a wrapper clips it)."""
        if draw(st.booleans()):
            return whole
        return whole[: draw(st.integers(20, max(20, len(whole))))]

    message = cut()
    rid = draw(st.sampled_from(["", " request_id=req-1", " request_id=req-2", " chatcmpl-9"]))
    shape = draw(
        st.sampled_from(
            [
                "line",
                "traceback",
                "reraise",
                "summary",
                "echo",
                "mention",
                "request",
                "leak",
                "output",
                "noise",
            ]
        )
    )
    body: list[str]
    if shape == "line":
        body = [f"{stamp}openai_harmony.HarmonyError: {message}{rid}"]
    elif shape == "traceback":
        body = traceback_lines(message)
    elif shape == "reraise":
        body = [
            *traceback_lines(message),
            "",
            draw(
                st.sampled_from(
                    [
                        "During handling of the above exception, another exception occurred:",
                        "The above exception was the direct cause of the following exception:",
                    ]
                )
            ),
            "",
            "Traceback (most recent call last):",
            '  File "/app/agent.py", line 88, in step',
            "    raise RuntimeError(f'failed: {exc}') from exc",
            f"RuntimeError: failed: {cut()}",
        ]
    elif shape == "summary":
        body = [f"ERROR:root:{message}", *traceback_lines(cut())[1:]]
    elif shape == "echo":
        body = [
            f"{stamp}openai_harmony.HarmonyError: {message}{rid}",
            f"RuntimeError: OpenAI response failed: {cut()}",
            json.dumps({"error": {"message": cut()}}),
        ][: draw(st.integers(1, 3))]
    elif shape == "mention":
        body = [MENTION]
    elif shape == "request":
        body = [f"INFO 11-28 10:00:00 [logger.py:43] Received request chatcmpl-{len(rid)}: x"]
    elif shape == "leak":
        body = [
            json.dumps({"content": "<|channel|>analysis<|message|>hi"})[1:-1],
            json.dumps({"reasoning_content": "<|start|>assistant"})[1:-1],
        ][: draw(st.integers(1, 2))]
    elif shape == "output":
        body = [
            "Failed to parse tool call: Unexpected end of JSON input",
            'Model Output: <|channel|>commentary to=functions.f json{"a": 1',
        ]
    else:
        body = [draw(st.sampled_from(["", "INFO:     Started server process [1]", "    x = 1"]))]
    return [pid + line for line in body]


@st.composite
def _log(draw: st.DrawFn) -> Fed:
    """Blocks, some repeated (the same failure again), with gaps the scan did not feed."""
    blocks = draw(st.lists(_block(), min_size=1, max_size=30))
    repeats = draw(st.lists(st.integers(0, len(blocks) - 1), max_size=8))
    ordered = [*blocks, *(blocks[i] for i in repeats)]
    fed: Fed = []
    number = 0
    for block in draw(st.permutations(ordered)):
        number += draw(st.sampled_from([1, 1, 1, 1, 3, 30, 70]))  # a gap: lines not fed
        for line in block:
            fed.append((number, line))
            number += 1
        number -= 1
    return fed


@settings(max_examples=300, deadline=None)
@given(_log())
def test_generated_logs_are_placed_as_the_reference_places_them(fed: Fed) -> None:
    fast, slow = _both(fed)
    assert fast == slow


def _dense(count: int, distinct: bool) -> Iterator[tuple[int, str]]:
    prefix = "(APIServer pid=3817) ERROR 11-12 14:00:00 [serving.py:1184] "
    for n in range(1, count + 1):
        tool = n if distinct else n % 7
        yield n, f"{prefix}openai_harmony.HarmonyError: {LEFTOVER.format(n=tool)}"


@pytest.mark.parametrize("distinct", [True, False])
def test_a_log_of_failures_only_is_placed_as_the_reference_places_it(distinct: bool) -> None:
    # Every line a failure: more than the pending and recent bounds hold, messages one a prefix
    # of another (`tool_1`, `tool_12`) or equal.
    fast, slow = _both(list(_dense(400, distinct)))
    assert fast == slow
    assert len(fast[0]) == 400  # each line its own failure, however alike


@pytest.mark.parametrize(
    "gap", [extract.DUP_WINDOW - 1, extract.DUP_WINDOW, extract.DUP_WINDOW + 1]
)
def test_a_mention_folds_into_a_failure_up_to_the_window_and_not_beyond(gap: int) -> None:
    fed = [
        (1, f"openai_harmony.HarmonyError: {LEFTOVER.format(n=1)}"),
        *((n, "INFO:     200 OK") for n in range(2, 1 + gap)),
        (1 + gap, MENTION),
    ]
    fast, slow = _both(fed)
    assert fast == slow
    assert len(fast[0]) == (1 if gap <= extract.DUP_WINDOW else 2)
