"""The failure window's first pass in Rust (logs/firstpass.py, native/src/firstpass.rs) leaves
the extractor exactly as feeding every line through Python does: the same failures, and the same
state of every process (in the same order) wherever it is looked at.

The reference is the extractor without a first pass. Logs come from the samples, pastes and
corpus (bare and under prefixes), from generated server lines among tracebacks and messages,
fed whole and in windows with lines left out between them (as scan feeds them), and with more
processes than the extractor keeps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harmony_doctor import native as accel
from harmony_doctor.logs import firstpass
from harmony_doctor.logs.extract import MAX_KEYS, _Extractor
from harmony_doctor.logs.lines import Line
from harmony_doctor.logs.process import ProcessState
from harmony_doctor.models import LogError
from tests.logs.helpers import traceback_lines
from tests.logs.test_fast_paths import EXAMPLES, REAL_LINES, TEXTS
from tests.logs.test_native_anatomy import clean_lines, log_lines

needs_native = pytest.mark.skipif(
    not accel.native_available() or firstpass.first_pass(True) is None,
    reason="the Rust extension is not built",
)

VLLM = "(APIServer pid={pid}) INFO 11-01 00:00:{s:02d} [logger.py:43] "
WINDOW = [
    VLLM + "Received request chatcmpl-{s}: params: SamplingParams(n=1), lora_request: None.",
    VLLM + "Engine 000: Avg prompt throughput: 2119.3 tokens/s, Running: 16 reqs",
    '(APIServer pid={pid}) INFO:     10.0.5.5:30005 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
]
_LEFTOVER = 'unexpected tokens remaining in message header: Some("to=functions.x")'
ERROR = "(APIServer pid={pid}) ERROR 11-01 00:00:{s:02d} [serving_chat.py:1145] "


class _Counting:
    """A first pass that counts the lines it summed."""

    def __init__(self, inner: firstpass.FirstPass) -> None:
        self.inner = inner
        self.absorbed = 0
        self.quiet = 0

    def absorb(self, number: int, raw: str, room: int) -> int:
        fed = self.inner.absorb(number, raw, room)
        self.absorbed += fed == firstpass.ABSORBED
        self.quiet += fed == firstpass.QUIET
        return fed

    def absorb_runs(
        self, number: int, lines: list[str], start: int, room: int
    ) -> list[tuple[int, int, Line | None, list[firstpass.Absorbed] | None]]:
        runs = self.inner.absorb_runs(number, lines, start, room)
        for count, fed, _, _ in runs:
            self.absorbed += count
            self.quiet += fed == firstpass.QUIET
        return runs

    def take(self) -> list[firstpass.Absorbed]:
        return self.inner.take()


def _counting() -> tuple[_Extractor, _Counting]:
    """An extractor whose first pass counts the lines it summed."""
    extractor = _Extractor()
    assert extractor.first_pass is not None
    counting = _Counting(extractor.first_pass)
    extractor.first_pass = counting  # type: ignore[assignment]
    return extractor, counting


Run = tuple[list[LogError], list[list[tuple[str, ProcessState]]], Line | None]


def _run(
    lines: list[str],
    first: bool,
    skip: frozenset[int] = frozenset(),
    looks: int = 0,
    windows: bool = False,
) -> Run:
    """Feed `lines` (leaving out the numbers in `skip`, as scan leaves lines between windows)
    to an extractor with the first pass or without, line by line or (`windows`) each run of
    lines between two left out or looked at in one `feed_window`; the failures, the processes'
    states every `looks` lines and at the end, and the last line fed."""
    extractor = _Extractor()
    if not first:
        extractor.first_pass = None
    found: list[LogError] = []
    states: list[list[tuple[str, ProcessState]]] = []
    window: list[str] = []
    number = 0
    for number, raw in enumerate(lines, start=1):
        if number in skip:
            found.extend(extractor.feed_window(number - len(window), window))
            window = []
            continue
        if windows:
            window.append(raw)
        else:
            found.extend(extractor.feed(number, raw))
        if looks and number % looks == 0:
            found.extend(extractor.feed_window(number + 1 - len(window), window))
            window = []
            extractor.take_absorbed()
            states.append(_states(extractor))
    found.extend(extractor.feed_window(number + 1 - len(window), window))
    found.extend(extractor.close(number))
    states.append(_states(extractor))
    return found, states, extractor.previous


def _states(extractor: _Extractor) -> list[tuple[str, ProcessState]]:
    return [(key, ProcessState(**vars(state))) for key, state in extractor.keys.items()]


def _same(lines: list[str], skip: frozenset[int] = frozenset(), looks: int = 0) -> None:
    slow = _run(lines, False, skip, looks)
    for fast in (_run(lines, True, skip, looks), _run(lines, True, skip, looks, windows=True)):
        assert fast[0] == slow[0]
        assert fast[1] == slow[1]
        assert fast[2] == slow[2]


def _dense(windows: int, pids: int = 4) -> list[str]:
    """The benchmark's dense log in small: request lines, then a traceback ending in a failure."""
    out: list[str] = []
    for w in range(windows):
        out.extend(
            shape.format(pid=1000 + (w * 8 + i) % pids, s=i % 60)
            for i in range(8)
            for shape in WINDOW
        )
        pid = 1000 + w % pids
        message = f"openai_harmony.HarmonyError: Unexpected token {200000 + w} while expecting x"
        out.extend(ERROR.format(pid=pid, s=w % 60) + line for line in traceback_lines(message))
    return out


@needs_native
@pytest.mark.parametrize("path", TEXTS, ids=lambda p: Path(p).name)
def test_real_logs_equal_the_reference(path: Path) -> None:
    lines = path.read_text("utf-8", "replace").split("\n")
    _same(lines, looks=7)


@needs_native
@pytest.mark.parametrize(
    "prefix", ["(APIServer pid=12) ", "vllm-1  | ", "INFO 12-01 00:00:01 [a.py:1] "]
)
def test_real_logs_under_a_prefix_equal_the_reference(prefix: str) -> None:
    for path in TEXTS:
        lines = [prefix + line for line in path.read_text("utf-8", "replace").split("\n")]
        _same(lines, looks=11)


@needs_native
@pytest.mark.skipif(not accel.use_native(), reason="HARMONY_DOCTOR_NATIVE=0: no Rust to count")
def test_a_dense_log_is_mostly_summed_in_rust_and_equals_the_reference() -> None:
    lines = _dense(40)
    _same(lines, looks=5)
    _same(lines, skip=frozenset(range(20, len(lines), 23)))
    extractor, counting = _counting()
    found = [e for n, raw in enumerate(lines, 1) for e in extractor.feed(n, raw)]
    found.extend(extractor.close(len(lines)))
    assert len(found) == 40
    # every request line; not the tracebacks, their error lines, nor a line after a frame
    assert counting.absorbed >= 0.7 * len(lines), (counting.absorbed, len(lines))
    # a traceback's head, frames and source lines: read in Python, not searched for messages
    assert counting.quiet >= 5 * 40, counting.quiet


# llama-server's lines (benchmarks/shapes.py's): its module and function tags, and the rest of
# a slot's timings on lines of their own
LLAMA = [
    "slot launch_slot_: id  0 | task {t} | processing task",
    "slot update_slots: id  0 | task {t} | new prompt, n_ctx_slot = 131072, n_keep = 0",
    "prompt eval time =      48.12 ms /   812 tokens (    0.06 ms per token)",
    "       eval time =     913.55 ms /   120 tokens (    7.61 ms per token)",
    "srv  log_server_r: request: POST /v1/chat/completions 127.0.0.1 200",
]
LLAMA_ERROR = (
    'srv    operator(): got exception: {{"code":500,"message":"Failed to parse input at pos '
    '{t}: <|start|>assistant<|channel|>final <|constrain|>json<|message|>","type":"x"}}'
)


@needs_native
@pytest.mark.skipif(not accel.use_native(), reason="HARMONY_DOCTOR_NATIVE=0: no Rust to count")
def test_llama_server_lines_in_a_window_are_summed_in_rust() -> None:
    """llama-server's tagged lines are ordinary (summed in Rust, never read in Python), as a
    prefix shape of lines.py's: the first pass was handed it, no Rust names them."""
    lines: list[str] = []
    for w in range(20):
        lines.extend(shape.format(t=w * 8 + i) for i in range(8) for shape in LLAMA)
        lines.append(LLAMA_ERROR.format(t=w))
    _same(lines, looks=5)
    _same(lines, skip=frozenset(range(20, len(lines), 23)))
    extractor, counting = _counting()
    found = list(extractor.feed_window(1, lines))
    found.extend(extractor.close(len(lines)))
    assert [(e.code, e.server) for e in found] == [("HD183", "llama.cpp")] * 20
    tagged = sum(line.startswith(("slot ", "srv  log_server_r")) for line in lines)
    assert tagged == 20 * 8 * 3
    # every tagged line (before: none, each read in Python) but the one after each error line,
    # which comes back read (QUIET: a message the error line opened is decided on it); the
    # timing lines, which have no prefix, Python reads, without looking for a message on them
    after_error = sum(before.startswith("srv    operator()") for before in lines[:-1])
    assert after_error == 19
    assert counting.absorbed == tagged - after_error, (counting.absorbed, tagged)
    assert counting.quiet == 20 * 8 * 2 + after_error, counting.quiet


@needs_native
def test_more_processes_than_kept_equal_the_reference() -> None:
    """A process summed, pushed out of the states kept by others and summed again: Rust sums
    only as many processes as fit beside those kept."""
    lines = []
    for n in range(900):
        lines.append(WINDOW[n % 3].format(pid=n % (MAX_KEYS + 30), s=n % 60))
        if n % 300 == 299:
            lines.extend(ERROR.format(pid=n % 7, s=0) + t for t in traceback_lines(_LEFTOVER))
    _same(lines)
    _same(lines, looks=130)


LINES = st.one_of(
    clean_lines(),
    log_lines(),
    st.sampled_from(REAL_LINES),
    st.sampled_from(EXAMPLES),
    st.sampled_from([shape.format(pid=p, s=1) for shape in WINDOW for p in (1, 2, 3)]),
    st.sampled_from(
        [ERROR.format(pid=p, s=2) + t for t in traceback_lines(_LEFTOVER) for p in (1, 2)]
    ),
    st.just(""),
)


@needs_native
@settings(max_examples=300, deadline=None)
@given(
    st.lists(LINES, min_size=1, max_size=60),
    st.frozensets(st.integers(1, 60), max_size=10),
    st.integers(0, 9),
)
def test_generated_logs_equal_the_reference(
    lines: list[str], skip: frozenset[int], looks: int
) -> None:
    _same(lines, skip, looks)


@needs_native
@settings(max_examples=1000, deadline=None)
@given(st.one_of(clean_lines(), log_lines(), st.sampled_from(REAL_LINES)))
def test_a_line_summed_counts_as_observe_counts_it(raw: str) -> None:
    """One line, after a traceback's frame or not: the state it leaves, summed or read."""
    frame = ERROR.format(pid=12, s=0) + '  File "/x/vllm/a.py", line 3, in f'
    _same([raw], looks=1)
    _same([frame, raw], looks=1)
    _same([raw, raw, raw], looks=2)


@needs_native
def test_the_first_pass_takes_its_line_facts_from_python() -> None:
    """What makes a line one Python must read (LM Studio's model-output line) and what makes
    it a quiet frame line are handed over when the first pass is built, not written in Rust:
    another wording moves the line from one side to the other."""
    from harmony_doctor.logs.lines import FRAME_SOURCE, MODEL_OUTPUT, anatomy_patterns
    from harmony_doctor.logs.messages import form_patterns
    from harmony_doctor.logs.process import ordinary_shapes

    module = accel.native_module()
    assert module is not None
    traceback, request = ordinary_shapes()
    patterns = anatomy_patterns()
    assert patterns is not None

    def made(model_output: str, frame_source: str) -> Any:
        return module.FirstPass(
            **patterns,
            forms=form_patterns() or [],
            traceback=traceback.pattern,
            request=request.pattern,
            model_output=model_output,
            frame_source=frame_source,
        )

    prefix = "(APIServer pid=7) INFO 11-01 00:00:01 [a.py:1] "
    output = prefix + "Model Output: <no markup> hello"
    ours = made(MODEL_OUTPUT, FRAME_SOURCE)
    assert ours.absorb(1, output, 10) == firstpass.NOT_READ
    assert made("zebra output:", FRAME_SOURCE).absorb(1, output, 10) == firstpass.ABSORBED
    frame = prefix + "File x.rb:12, in g"
    assert ours.absorb(2, frame, 10) == firstpass.ABSORBED
    assert made(MODEL_OUTPUT, ".rb:").absorb(2, frame, 10) == firstpass.QUIET


@needs_native
def test_failures_due_within_one_run_come_out_as_line_by_line() -> None:
    """A failure re-raised (its last sighting later) and another process's failure between
    its two tracebacks fall due at different lines of one run of summed lines: `feed_window`
    emits them in the order feeding line by line does, not sorted by their first lines."""
    message = "Unexpected token 200002 while expecting start token 200006"
    one, two = ERROR.format(pid=1, s=2), ERROR.format(pid=2, s=2)
    lines = [WINDOW[0].format(pid=1, s=n) for n in range(5)]
    lines += [one + t for t in traceback_lines(message)]
    lines += [two + "openai_harmony.HarmonyError: Unknown role: assistantassistant"]
    lines += [one, one + "During handling of the above exception, another exception occurred:"]
    lines += [one, *(one + t for t in traceback_lines(message)[1:])]
    lines += [WINDOW[2].format(pid=3, s=0)] * 100
    _same(lines)
    found = _run(lines, True, windows=True)[0]
    assert [e.line for e in found] == [13, 12]  # the re-raised failure fell due last


class _Runs(_Counting):
    """A first pass that counts its calls: `absorb_runs`, and the `take`s that drop the runs a
    message still open made void."""

    def __init__(self, inner: firstpass.FirstPass) -> None:
        super().__init__(inner)
        self.calls = 0
        self.takes = 0

    def absorb_runs(
        self, number: int, lines: list[str], start: int, room: int
    ) -> list[tuple[int, int, Line | None, list[firstpass.Absorbed] | None]]:
        self.calls += 1
        return super().absorb_runs(number, lines, start, room)

    def take(self) -> list[firstpass.Absorbed]:
        self.takes += 1
        return super().take()


def _windows(lines: list[str]) -> tuple[list[LogError], _Runs]:
    """`lines` fed as one window to an extractor whose first pass counts its calls (up to the
    window's end: not the `take` of `close`)."""
    extractor = _Extractor()
    assert extractor.first_pass is not None
    runs = _Runs(extractor.first_pass)
    extractor.first_pass = runs  # type: ignore[assignment]
    found = list(extractor.feed_window(1, lines))
    calls, takes = runs.calls, runs.takes
    found.extend(extractor.close(len(lines)))  # takes the sums last left in Rust
    runs.calls, runs.takes = calls, takes
    return found, runs


@needs_native
@pytest.mark.skipif(not accel.use_native(), reason="HARMONY_DOCTOR_NATIVE=0: no Rust to count")
def test_a_window_is_one_call_when_its_message_ends_on_the_next_line() -> None:
    """The runs past the error line are summed in the same call: the message it opens ends on
    the line after it (another record), and the runs after that hold."""
    lines = [WINDOW[n % 3].format(pid=1, s=n) for n in range(6)]
    lines += [ERROR.format(pid=1, s=7) + t for t in traceback_lines(_LEFTOVER)]
    lines += [WINDOW[n % 3].format(pid=1, s=n) for n in range(6)]
    _same(lines)
    found, runs = _windows(lines)
    assert len(found) == 1
    assert (runs.calls, runs.takes) == (1, 0)
    assert runs.absorbed >= 10


@needs_native
@pytest.mark.skipif(not accel.use_native(), reason="HARMONY_DOCTOR_NATIVE=0: no Rust to count")
def test_runs_past_a_message_still_open_are_dropped_and_read_again() -> None:
    """An error line cut inside its remainder's quote leaves its message open, and another
    process's lines after it do not end it (they are interleaved), so it is still open where
    the runs after the line handed back begin: they are dropped (what they summed taken and
    thrown away), the lines are read in Python until a line of its own process ends it, and
    a second call sums the rest."""
    lines = [WINDOW[n % 3].format(pid=1, s=n) for n in range(6)]
    lines += [ERROR.format(pid=1, s=7) + "openai_harmony.HarmonyError: " + _LEFTOVER[:-4]]
    lines += [WINDOW[n % 3].format(pid=2, s=n) for n in range(4)]
    lines += [WINDOW[1].format(pid=1, s=9)]
    lines += [WINDOW[n % 3].format(pid=2, s=n) for n in range(6)]
    _same(lines)
    found, runs = _windows(lines)
    assert len(found) == 1 and found[0].message.endswith(_LEFTOVER[:-4])
    assert (runs.calls, runs.takes) == (2, 1)
    assert runs.absorbed >= 6 + 3 + 6  # the runs dropped were counted too
    assert _run(lines, True, windows=True)[0] == _run(lines, False)[0]
