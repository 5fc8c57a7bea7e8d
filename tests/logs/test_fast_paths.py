"""The extractor's fast paths equal the Python they replace, which stays as the reference.

Each window line of a scan goes through `anatomize`, `find_hit`, `holds_message`, `holds_form`
and `ProcessState.observe`; their quick refusals and one-regex reads must answer exactly as the
code first written: line by line on real logs and pastes (bare and under every prefix shape)
and on generated text, and for whole logs through the extractor with the references put back.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harmony_doctor.faults.catalogue import KEYWORDS, MESSAGE_FORMS
from harmony_doctor.logs import extract, lines, messages, process, remainder
from harmony_doctor.logs.extract import extract_text
from harmony_doctor.logs.words import MAX_WORD, Words
from harmony_doctor.models import LogError
from tests.helpers import REPO, SAMPLES, shared_files
from tests.logs.test_lines import _PREFIX_PIECES

TEXTS = [
    *sorted(SAMPLES.glob("*.log")),
    *sorted(SAMPLES.glob("*.txt")),
    *sorted(SAMPLES.glob("*.md")),
    *sorted((REPO / "tests" / "pastes" / "texts").glob("*.txt")),
    *sorted((REPO / "tests" / "cases").glob("*.in")),
    *shared_files("corpus"),
]


def _real_lines() -> list[str]:
    found: dict[str, None] = {}
    for path in TEXTS:
        for line in path.read_text("utf-8", "replace").split("\n"):
            found[line] = None
    return list(found)


REAL_LINES = _real_lines()
EXAMPLES = [example for form in MESSAGE_FORMS for example in form.examples]
# Text that folds or lowers in ways ASCII does not (the long s matches `s` case-insensitively,
# Kelvin `k`, a dotted I lowers to two characters), curly quotes, gutters, frames, markup.
ODD = ["\u017f", "\u212a", "\u0130", "\u201c", "\u00a0", "| ", "+-", "+ ", "\t", "    ", "<|", "\\"]
WORDS = [*KEYWORDS, "Traceback (most recent call last):", 'File "x.py", line 3, in f', "^^^^"]


def _pieces() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(_PREFIX_PIECES),
        st.sampled_from(EXAMPLES),
        st.sampled_from(ODD),
        st.sampled_from(WORDS),
        st.sampled_from(REAL_LINES),
        st.text(max_size=12),
    )


TEXT = st.lists(_pieces(), min_size=1, max_size=6).map("".join)


def _reference_holds_message(text: str, position: int = 0, bare: bool = True) -> bool:
    """holds_message as first written."""
    lower = text.lower()
    if any(word in lower for word in KEYWORDS) and messages.ANY_FORM.search(text, position):
        return True
    return bare and messages._find_bare(text, position) is not None


def _check_line(text: str) -> None:
    assert lines.anatomize(7, text) == lines.anatomize_reference(7, text), text
    assert lines._strip_gutter(text) == lines._strip_gutter_reference(text), text
    assert messages.holds_form(text) == (messages.ANY_FORM.search(text) is not None), text
    for position in {0, len(text) // 2}:
        found = messages.find_hit(text, position)
        assert found == messages.find_hit_reference(text, position), (text, position)
        for bare in (True, False):
            expected = _reference_holds_message(text, position, bare)
            assert messages.holds_message(text, position, bare) == expected, text
    shapes = (
        lines.TRACEBACK_START,
        lines.CHAIN,
        process._EXCEPTION_LINE,
        lines.FRAME,
        lines.CARETS,
        lines.TRACEBACK_FURNITURE,
    )
    any_shape = any(shape.match(text) for shape in shapes)
    assert (process._ANY_TRACEBACK_SHAPE.match(text) is not None) == any_shape, text


@pytest.mark.parametrize(
    "text",
    [
        # The long s matches `s` case-insensitively but does not lower to it: the form's word
        # is not in the lowered text, another form's is (or none is, for holds_form).
        "could not par\u017fe header: too many tokens remaining (role)",
        "could not par\u017fe header: too many tokens remaining",
        "ERROR: failed to par\u017fe tool call arguments as JSON",
        "Unknown role: \u0130x, unexpected \u212aeys",
    ],
)
def test_text_that_folds_unlike_it_lowers_reads_as_the_reference(text: str) -> None:
    _check_line(text)
    assert messages.holds_form(text)


def test_the_real_lines_are_many() -> None:
    assert len(REAL_LINES) > 500  # samples, pastes and golden inputs were read


@pytest.mark.parametrize("prefix", ["", *_PREFIX_PIECES[:15]])
def test_real_lines_bare_and_under_each_prefix_read_as_the_reference(prefix: str) -> None:
    for line in REAL_LINES:
        _check_line(prefix + line)


@settings(max_examples=400, deadline=None)
@given(TEXT)
def test_generated_lines_read_as_the_reference(text: str) -> None:
    _check_line(text)


# -- whole logs, through the extractor ---------------------------------------------------------


# Matches every text: the quick refusal it stands in for never refuses.
_EVERYTHING = re.compile("")


def _both(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[tuple[LogError, ...], tuple[LogError, ...]]:
    """The failures of `text` as the extractor finds them, and with every fast path replaced
    by the code it replaces."""
    fast = extract_text(text)
    with monkeypatch.context() as patch:
        patch.setattr(extract, "first_pass", lambda: None)
        patch.setattr(extract, "line_reader", lambda: lines.anatomize_reference)
        patch.setattr(extract, "hit_finder", lambda: messages.find_hit_reference)
        patch.setattr(extract, "holds_message", _reference_holds_message)
        patch.setattr(lines, "_strip_gutter", lines._strip_gutter_reference)
        patch.setattr(process, "holds_form", lambda t: messages.ANY_FORM.search(t) is not None)
        patch.setattr(process, "_ANY_TRACEBACK_SHAPE", _EVERYTHING)
        patch.setattr(process, "_ANY_REQUEST_WORD", _EVERYTHING)
        # each line's shape read anew, none remembered
        patch.setattr(process.Shapes, "of", lambda _, text, gutter: process.shape_of(text, gutter))
        slow = extract_text(text)
    return fast, slow


@pytest.mark.parametrize("path", TEXTS, ids=lambda p: Path(p).name)
def test_real_logs_give_the_reference_failures(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = path.read_text("utf-8", "replace")
    fast, slow = _both(text, monkeypatch)
    assert fast == slow


@pytest.mark.parametrize("prefix", ["(APIServer pid=12) ", "vllm-1  | ", "    "])
def test_real_logs_under_a_prefix_give_the_reference_failures(
    prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for path in TEXTS:
        text = "\n".join(prefix + line for line in path.read_text("utf-8", "replace").split("\n"))
        fast, slow = _both(text, monkeypatch)
        assert fast == slow, path.name


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(REAL_LINES), TEXT), min_size=1, max_size=40))
def test_generated_logs_give_the_reference_failures(log: list[str]) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        fast, slow = _both("\n".join(log), monkeypatch)
    assert fast == slow


# -- a Rust Debug string, read in runs --------------------------------------------------------

_RUST_PIECES = st.sampled_from(['"', "\\", "\\\\", '\\"', "\\u{1F600}", "\\u00e9", "\\x41", "\\n"])
_RUST_TEXT = st.lists(
    st.one_of(_RUST_PIECES, st.text(alphabet='ab )u{}x0e9"\\\n', max_size=4)), max_size=12
).map("".join)


@settings(max_examples=1000, deadline=None)
@given(_RUST_TEXT, st.integers(0, 40))
def test_a_rust_string_reads_as_the_reference(text: str, index: int) -> None:
    assert remainder._rust_string(text, index) == remainder._rust_string_reference(text, index)


@pytest.mark.parametrize("line", [line for line in REAL_LINES if 'Some("' in line or '["' in line])
def test_the_rust_strings_of_real_lines_read_as_the_reference(line: str) -> None:
    for start in range(len(line)):
        if line[start] == '"':
            assert remainder._rust_string(line, start + 1) == remainder._rust_string_reference(
                line, start + 1
            )


@settings(max_examples=300, deadline=None)
@given(
    _RUST_TEXT,
    st.integers(0, 3),
    st.integers(MAX_WORD - 2, MAX_WORD + 40),
    st.sampled_from(["x", "é", " "]),
    _RUST_TEXT,
)
def test_a_list_word_is_held_as_words_would_hold_the_reference_string(
    before: str, index: int, size: int, char: str, after: str
) -> None:
    """`_list_word` keeps of a long value with no escape only its ends, never copying its
    middle: what `Words.add` keeps of `_rust_string`'s value, the same left-out count, the
    same closing and the same next index, whatever is around it."""
    text = before + char * size + after
    got, closed, index_after = remainder._list_word(text, index)
    value, ref_closed, ref_after = remainder._rust_string(text, index)
    assert (closed, index_after) == (ref_closed, ref_after)
    held, reference = Words(), Words()
    held.add(got)
    reference.add(value)
    assert held.remainder(True, "list") == reference.remainder(True, "list")


def _read_plain_reference(text: str, start: int, end: int) -> tuple[str, str, bool]:
    """What `_read_plain` read before it stopped copying: the line's end stripped, cut at the
    match's end (`rest` was `body[offset:]` of a whole copy)."""
    body = text[start:].rstrip()
    as_logged = not ('Some(\\"' in body or '[\\"' in body)
    if not as_logged:
        body = remainder.unescape(body)
    return body[: end - start], body[end - start :], as_logged


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet='ab :[]"\\\n\t\u3000Some(', max_size=30), st.data())
def test_a_plain_message_is_read_as_the_whole_copy_was(text: str, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    matched, rest, as_logged, _ = messages._read_plain(text, start, end)
    assert (matched, rest, as_logged) == _read_plain_reference(text, start, end)
