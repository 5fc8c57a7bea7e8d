"""The Rust search for the catalogue's forms equals `find_hit_reference` on every text.

The Rust search is made of the catalogue's own patterns (translated when it is made); it hands
to Python every text it might search otherwise: non-ASCII text, and text where a form it holds
only loosely (a lookbehind, a negative lookahead) may match first. Texts are generated from the
forms' examples, cut, re-spaced (the wrapping the patterns allow), re-cased, quoted, under every
prefix shape and among ASCII and non-ASCII noise; real lines come from the samples and pastes.
Whole logs through the extractor are compared in tests/logs/test_fast_paths.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harmony_doctor import native as accel
from harmony_doctor.faults.catalogue import MESSAGE_FORMS
from harmony_doctor.logs import messages
from harmony_doctor.logs.messages import MessageHit
from tests.logs.test_fast_paths import EXAMPLES, ODD, REAL_LINES, WORDS
from tests.logs.test_lines import _PREFIX_PIECES

hits = messages.native_hits() if accel.native_available() else None
needs_native = pytest.mark.skipif(hits is None, reason="the Rust extension is not built")

# The forms Rust holds loosely: a lookaround it has no exact translation of.
LOOSE = [f.name for f in MESSAGE_FORMS if f.pattern and re.search(r"\(\?(?:<[=!]|!)", f.pattern)]


def _find(text: str, position: int) -> tuple[MessageHit | None, bool]:
    """The Rust search's hit, and whether Rust searched (not its Python fallback)."""
    assert hits is not None
    before = hits.counts()
    found = messages._find_settled(hits, text, position)
    return found, hits.counts()[0] > before[0]


def _check(text: str, positions: Iterable[int] = ()) -> bool:
    """Rust's answer is the reference's at 0, the middle and `positions`; whether Rust searched
    every one."""
    native = True
    for position in {0, len(text) // 2, len(text), *positions}:
        found, read = _find(text, position)
        assert found == messages.find_hit_reference(text, position), (text, position)
        native = native and read
    return native


# -- generated texts ---------------------------------------------------------------------------


def _respaced(draw: st.DrawFn, text: str) -> str:
    """`text` with its blanks changed as wrapping does (none, several, a newline), and cased."""
    pieces = re.split(r"( +)", text)
    gaps = st.sampled_from(["", " ", "  ", "\t", "\n", " \n  "])
    out = [piece if not piece.startswith(" ") else draw(gaps) for piece in pieces]
    joined = "".join(out)
    case = draw(st.sampled_from(["same", "upper", "lower", "swapcase"]))
    return joined if case == "same" else str(getattr(joined, case)())


@st.composite
def _message(draw: st.DrawFn) -> str:
    example = draw(st.sampled_from(EXAMPLES))
    if draw(st.booleans()):
        example = _respaced(draw, example)
    cut = draw(st.integers(0, len(example)))
    if draw(st.integers(0, 3)) == 0:
        example = example[:cut] if draw(st.booleans()) else example[cut:]
    return example


# What decides a form's lookarounds: what follows it (`arguments`, `None`, a channel, a tool
# namespace, `[json.exception`, a digit) and what comes before one (`; `, `.`).
_NEIGHBOURS = [
    " arguments",
    " arguments as JSON",
    "argumentsx",
    " None",
    " Nonex",
    " <|constrain|>",
    " functions.x",
    " bob",
    " 'final'",
    " analysis",
    " [json.exception.parse_error.101]",
    " 3",
    "; ",
    ", ",
    ".",
    ": ",
    "Harmony parser ended in a non-terminal state",
    "returning the recovered raw output",
    "returning recovered raw output.",
    'Some("<|start|>assistant")',
    '["<|channel|>", "x"]',
    "<|",
    "\x1c",
    "\x1f",
]
# A message quoted as servers log it: JSON, a repr, an exception line.
_QUOTES = ['{"error": {"message": "', "ValueError('", "HarmonyError: ", 'msg="', '\\"', "'"]


def _pieces() -> st.SearchStrategy[str]:
    return st.one_of(
        _message(),
        st.sampled_from(_NEIGHBOURS),
        st.sampled_from(_QUOTES),
        st.sampled_from(_PREFIX_PIECES),
        st.sampled_from(ODD),
        st.sampled_from(WORDS),
        st.sampled_from(REAL_LINES),
        st.text(max_size=8),
        st.text(alphabet=" ;:,.()[]\"'<|>", max_size=4),
    )


TEXT = st.lists(_pieces(), min_size=1, max_size=6).map("".join)


@needs_native
@settings(max_examples=3000, deadline=None)
@given(TEXT, st.integers(0, 400))
def test_the_native_search_equals_the_reference(text: str, position: int) -> None:
    _check(text, [min(position, len(text))])


@needs_native
@settings(max_examples=1000, deadline=None)
@given(st.sampled_from(_PREFIX_PIECES), _message(), st.sampled_from(["", *_QUOTES]))
def test_every_form_bare_quoted_and_under_a_prefix_equals_the_reference(
    prefix: str, message: str, quote: str
) -> None:
    _check(prefix + quote + message)


# -- real lines --------------------------------------------------------------------------------


@needs_native
@pytest.mark.parametrize("prefix", ["", "(APIServer pid=12) ERROR 11-01 00:00:01 [x.py:1] "])
def test_real_lines_equal_the_reference_and_are_mostly_searched_in_rust(prefix: str) -> None:
    searched = [_check(prefix + line) for line in REAL_LINES]
    declined = searched.count(False) / len(searched)
    assert len(searched) > 500
    assert declined < 0.1, declined  # measured: non-ASCII lines and loose forms' lines


# The loose forms' patterns with their lookarounds taken out (none of them nests a group).
_LOOSENED = [
    re.compile(re.sub(r"\(\?<?[=!][^()]*\)", "", f.pattern), re.I)
    for f in MESSAGE_FORMS
    if f.name in LOOSE and f.pattern
]


@needs_native
def test_every_example_equals_the_reference_and_only_loose_forms_decline() -> None:
    declined = set()
    for form in MESSAGE_FORMS:
        for example in form.examples:
            read = _check(example)
            if example.isascii() and not any(p.search(example) for p in _LOOSENED):
                assert read, example
            if not read:
                declined.add(form.name)
    # a provider's `Failed to parse tool call arguments` holds LM Studio's `Failed to parse
    # tool call`, which only its negative lookahead refuses
    assert {*LOOSE, "provider_tool_args"} <= declined


# -- what is declined, and counted -------------------------------------------------------------


def test_the_loose_forms_are_the_ones_with_lookbehind_or_negative_lookahead() -> None:
    assert sorted(LOOSE) == ["lmstudio_tool", "recovered_raw"]


@needs_native
@pytest.mark.parametrize(
    ("text", "read"),
    [
        ("INFO 11-01 00:00:01 [logger.py:43] Received request chatcmpl-1", True),
        ("HarmonyError: Unknown role: assistantassistant", True),
        ("Unknown recipient: bob", True),  # a trailing lookahead: exact
        ('x Some("<|start|>assistant")', True),  # no form: Python looks for a bare remainder
        ("Unknown role: caf\u00e9", False),  # not ASCII
        ("Unknown role:\x1cx", False),  # Python's \s matches \x1c, Rust's does not
        ("Failed to parse tool call: Unexpected end of JSON input", False),  # loose
        ("Unknown role: x; returning the recovered raw output", True),  # loose, but after
        ("lone \udcff surrogate", False),
    ],
)
def test_the_counts_tell_texts_searched_in_rust_from_texts_handed_to_python(
    text: str, read: bool
) -> None:
    before = messages.native_hit_counts()
    assert before is not None
    found, native = _find(text, 0)
    assert native == read
    assert found == messages.find_hit_reference(text, 0)
    after = messages.native_hit_counts()
    assert after is not None and sum(after) > sum(before)


def test_a_pattern_without_a_translation_makes_no_search() -> None:
    if not accel.native_available():
        pytest.skip("the Rust extension is not built")
    for patterns in ([r"(a)\1"], [r"(?<!a)b"], [r"a(?=b)c"]):
        with pytest.raises(ValueError):
            accel.new_hits(patterns=patterns, ranks=[0] * len(patterns))


def test_the_python_search_when_native_is_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(accel.NATIVE_ENV, "0")
    assert messages.hit_finder() is messages.find_hit
    assert messages.hit_finder(False) is messages.find_hit


@pytest.mark.skipif(not accel.native_available(), reason="the Rust extension is not built")
def test_every_form_of_the_catalogue_is_searched_in_rust_where_rust_is_built() -> None:
    """One form the Rust translator refuses turns the Rust search off for the whole catalogue
    (`native_hits` falls back to None and Python searches every text): counts stay right, but
    the scan is slower and nothing else says so. A new form must translate."""
    messages.native_hits.cache_clear()
    assert messages.form_patterns() is not None, "a form compiled with flags other than re.I"
    assert messages.native_hits() is not None, "a form's pattern the Rust search refuses"


@needs_native
@pytest.mark.parametrize(
    ("form", "made"),
    [("unexcepted token(?= é)", True), ("[标记]+(?!x)", False), (r"\é(?<=é)z", False)],
)
def test_a_loose_form_with_a_character_past_ascii_makes_a_search_or_is_refused(
    form: str, made: bool
) -> None:
    """A form with a lookaround and a character past ASCII (a form in another language) has its
    lookaround cut on a character's boundary (the Rust translator panicked there): the search
    is made when what is left is ASCII, else refused with the ValueError `native_hits` falls
    back to Python on."""

    def make() -> object:
        search = accel.new_hits(patterns=[form, "plain form"], ranks=[0, 0])
        found = search.find("a plain form here")
        return None if found is None else (found.form, found.start)

    if made:
        assert make() == (1, 2)
    else:
        with pytest.raises(ValueError, match="not ASCII"):
            make()
