"""process.py: tracebacks followed per process, through elisions, groups, IPython, rich."""

from __future__ import annotations

import pytest

from harmony_doctor.logs import messages, process
from harmony_doctor.logs.firstpass import first_pass
from harmony_doctor.logs.lines import anatomize
from harmony_doctor.logs.process import ProcessState
from tests.logs.helpers import HARMONY_INIT, LEFTOVER_LIST, only, traceback_lines


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


def test_elision_between_frames_keeps_the_traceback() -> None:
    lines = traceback_lines(LEFTOVER_LIST, 627)
    text = "\n".join([*lines[:3], ".....", *lines[4:]])
    error = only(text)
    assert error.harmony_version == "0.0.3-0.0.4"
    assert error.code == "HD101"


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


def test_a_line_known_formless_is_followed_without_a_form_search(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`observe(line, formless=True)` (a line the first pass called QUIET) follows the
    traceback as `observe(line)` does, without asking `holds_form`."""
    asked: list[str] = []

    def holds_form(text: str) -> bool:
        asked.append(text)
        return False

    monkeypatch.setattr(process, "holds_form", holds_form)
    api = "(APIServer pid=11) ERROR 03-14 08:09:10 [serving.py:830] "
    lines = [anatomize(n, api + t) for n, t in enumerate(traceback_lines("x", 627)[1:6], 1)]
    asking, told = ProcessState(), ProcessState()
    for line in lines:
        asking.observe(line)
    assert asked  # the source lines under the frames are searched for a form
    asked.clear()
    for line in lines:
        told.observe(line, formless=True)
    assert asked == []
    assert told == asking


def test_the_extractor_tells_the_first_pass_quiet_lines_formless(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if first_pass() is None:
        pytest.skip("the Rust extension is not built")
    asked: list[str] = []
    real = messages.holds_form

    def holds_form(text: str) -> bool:
        asked.append(text)
        return real(text)

    monkeypatch.setattr(process, "holds_form", holds_form)
    api = "(APIServer pid=11) ERROR 03-14 08:09:10 [serving.py:830] "
    error = only("\n".join(api + line for line in traceback_lines(LEFTOVER_LIST, 627)))
    assert error.code == "HD101"
    assert error.span == (2, 7)  # the traceback followed through its source lines
    assert all("harmony_parser" not in t and "_inner" not in t for t in asked), asked


def test_a_recurring_traceback_line_is_shaped_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader's `Shapes` reads a text's shape once (a failure that recurs writes the same
    traceback lines); the shape remembered is the one read, and the states are the same."""
    shaped: list[str] = []
    real = process.shape_of

    def shape_of(text: str, gutter: bool) -> process.Shape:
        shaped.append(text)
        return real(text, gutter)

    monkeypatch.setattr(process, "shape_of", shape_of)
    api = "(APIServer pid=11) ERROR 03-14 08:09:10 [serving.py:830] "
    body = traceback_lines(LEFTOVER_LIST, 627)
    twice = [anatomize(n, api + t) for n, t in enumerate(body + body, 1)]
    shapes, remembering, reading = process.Shapes(), ProcessState(), ProcessState()
    for line in twice:
        remembering.observe(line, shape=shapes.of(line.text, line.gutter))
    assert shaped == [line.text for line in twice[: len(body)]]
    for line in twice:
        reading.observe(line)
    assert remembering == reading
    assert remembering.versions == frozenset({3, 4})  # the frames' release (0.0.3-0.0.4)
    for line in twice:
        assert shapes.known[(line.text, line.gutter)] == real(line.text, line.gutter)
