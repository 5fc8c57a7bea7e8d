"""lines.py's gutter shapes: `_GUTTER` written with its one lookahead at the end equals the
pattern first written (a lookahead inside a repeat), and the Rust reader takes gutters off
itself, equal to Python's reader, calling no Python back (a frame's path it asks servers.py
about once, and keeps the answer)."""

from __future__ import annotations

import gc
import re
import sys
from types import FrameType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harmony_doctor import native as accel
from harmony_doctor.logs import lines

FIRST_WRITTEN = re.compile(r"^(?:\s*\|(?=\s|$))+")

reader = lines._native_anatomy() if accel.native_available() else None
needs_native = pytest.mark.skipif(reader is None, reason="the Rust extension is not built")

GUTTERED = [
    "+---------------- 1 ----------------",
    "  +-+---------------- 2 ----------------",
    "+ Exception Group Traceback (most recent call last):",
    '  | File "/usr/lib/python3.12/asyncio/tasks.py", line 314, in __step',
    "  |   | openai_harmony.HarmonyError: Unknown role: assistantassistant",
    "| | |x",
    "||| x",
    "  |",
    "    +------------------------------------",
]
PREFIXES = ["", "(APIServer pid=12) ", "ERROR 11-01 00:00:01 [x.py:1] ", "[2026-11-01 00:00:01] "]


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet=" \t|+x\u00a0\u2003\n", max_size=12))
def test_the_gutter_pattern_equals_the_one_first_written(text: str) -> None:
    first = FIRST_WRITTEN.match(text)
    now = lines._GUTTER.match(text)
    assert (first and first.end()) == (now and now.end()), repr(text)


@needs_native
@pytest.mark.parametrize("prefix", PREFIXES)
def test_rust_takes_gutters_off_as_python_does_and_calls_nothing_back(prefix: str) -> None:
    assert reader is not None
    calls: list[str] = []

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            calls.append(frame.f_code.co_name)

    texts = [prefix + raw for raw in GUTTERED]
    for text in texts:  # a frame's path is asked of servers.py once, then kept
        reader.read(3, text)
    read = []
    before = reader.counts()
    gc.disable()  # a collection runs gc.callbacks (a library's) inside the hook
    sys.setprofile(hook)
    try:
        for text in texts:
            read.append(reader.read(3, text))  # noqa: PERF401 - no comprehension's own frame
    finally:
        sys.setprofile(None)
        gc.enable()
    assert reader.counts()[0] - before[0] == len(GUTTERED)  # every line read in Rust
    assert read == [lines.anatomize_reference(3, prefix + raw) for raw in GUTTERED]
    assert calls == []
    assert sum(line.gutter for line in read) >= 5
