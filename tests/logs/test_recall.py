"""recall.py: the extractor's message search remembers what Rust settled, and nothing else."""

from __future__ import annotations

import pytest

from harmony_doctor import native as accel
from harmony_doctor.logs import messages, recall
from tests.logs.test_fast_paths import REAL_LINES

hits = messages.native_hits() if accel.native_available() else None
needs_native = pytest.mark.skipif(hits is None, reason="the Rust extension is not built")

ERROR = "openai_harmony.HarmonyError: Unexpected token 200002 while expecting start token 200006"


def _searched() -> tuple[int, int]:
    """(texts Rust searched, texts it handed to Python) so far, by the search the finders are
    made with now (a test elsewhere may have made it anew)."""
    counts = messages.native_hit_counts()
    assert counts is not None
    return counts


@needs_native
def test_a_remembered_text_gives_the_reference_hit_without_a_second_search() -> None:
    find = recall.hit_finder(True)
    for text in [*REAL_LINES[:300], ERROR]:
        for position in {0, len(text) // 2}:
            expected = messages.find_hit_reference(text, position)
            before = _searched()
            assert find(text, position) == expected, (text, position)
            settled = _searched()[1] == before[1]  # Rust answered: did not decline
            between = _searched()
            assert find(text, position) == expected, (text, position)
            if settled and len(text) <= recall.MAX_TEXT:
                assert _searched() == between, text


@needs_native
def test_the_second_sighting_of_an_error_line_is_not_searched_again() -> None:
    find = recall.hit_finder(True)
    first = find(ERROR, 0)
    before = _searched()
    again = find(ERROR, 0)
    assert again is first
    assert _searched() == before
    other = recall.hit_finder(True)  # each extractor remembers on its own
    assert other(ERROR, 0) == first
    assert _searched()[0] == before[0] + 1


@needs_native
def test_a_declined_text_goes_to_python_every_time() -> None:
    find = recall.hit_finder(True)
    text = "lone \udcff surrogate: Unexpected token 200002 while expecting start token 200006"
    for _ in range(3):
        before = _searched()
        assert find(text, 0) == messages.find_hit_reference(text, 0)
        assert _searched()[1] == before[1] + 1  # declined, counted each time


@needs_native
def test_the_memory_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recall, "MAX_KEPT", 2)
    find = recall.hit_finder(True)
    texts = [ERROR.replace("200002", str(n)) for n in (1, 2, 3)]
    for text in texts:
        find(text, 0)
    before = _searched()
    find(texts[0], 0)  # forgotten when the third came: searched again
    assert _searched()[0] == before[0] + 1
    long = ERROR + " " + "x" * recall.MAX_TEXT
    find(long, 0)
    before = _searched()
    find(long, 0)  # too long to keep
    assert _searched()[0] == before[0] + 1


def test_without_the_extension_it_is_pythons_search() -> None:
    assert recall.hit_finder(False) is messages.find_hit
