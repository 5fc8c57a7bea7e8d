"""The Rust search settles the form it finds (its start, end and named groups) and calls no
Python back: messages.py reads the message from Rust's answer without running the form's
regex again."""

from __future__ import annotations

import gc
import sys
from types import FrameType
from typing import Any

import pytest

from harmony_doctor import native as accel
from harmony_doctor.faults.catalogue import MESSAGE_FORMS
from harmony_doctor.logs import messages
from tests.logs.test_fast_paths import REAL_LINES

hits = messages.native_hits() if accel.native_available() else None
needs_native = pytest.mark.skipif(hits is None, reason="the Rust extension is not built")

TEXTS = [example for form in MESSAGE_FORMS for example in form.examples] + REAL_LINES


@needs_native
def test_rust_settles_the_form_python_matches() -> None:
    """Where Rust finds a form, it is the one Python's `_hit` reads, with Python's span and
    groups; where it declines, Python searches."""
    assert hits is not None
    settled = 0
    for text in TEXTS:
        found = hits.find(text, 0)
        if found is None:
            continue
        reference = messages.find_hit_reference(text, 0)
        if found.form is None:
            assert reference is None or reference.name == "bare_remainder", text
            continue
        settled += 1
        name, form = messages._FORMS[found.form]
        match = form.match(text, found.start)
        assert match is not None, text
        assert (match.end(), match.groupdict()) == (found.end, found.groups), text
        if reference is not None and reference.name != "bare_remainder":
            assert (reference.name, reference.start) == (name, found.start), text
    assert settled > 100


@needs_native
def test_the_rust_search_calls_no_python_back() -> None:
    assert hits is not None
    calls: list[str] = []

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            calls.append(frame.f_code.co_name)

    found = []
    gc.disable()  # a collection runs gc.callbacks (a library's) inside the hook
    sys.setprofile(hook)
    try:
        for text in TEXTS:
            found.append(hits.find(text, 0))  # noqa: PERF401 - no comprehension's own frame
    finally:
        sys.setprofile(None)
        gc.enable()
    assert calls == []
    assert sum(f is not None and f.form is not None for f in found) > 100
