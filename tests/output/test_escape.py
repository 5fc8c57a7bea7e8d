"""output/escape.py: untrusted text reaches a terminal only with its dangerous characters visible."""

from __future__ import annotations

import io
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from harmony_doctor.output.escape import one_line, safe_text, shorten
from harmony_doctor.output.styles import ESCAPED
from tests.fuzz_inputs import hostile_text

CSI = "\x1b[31mred\x1b[0m"
OSC8 = "\x1b]8;;http://x\x07link\x1b]8;;\x07"
# Characters that may reorder or break a line on a terminal or in an editor.
LINE_BREAKERS = "\u2028\u2029\u061c\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200f"
# Hostile text with the separators and bidi marks mixed in, and whitespace of every kind.
breaking_text = st.lists(
    hostile_text | st.sampled_from(sorted(LINE_BREAKERS + "\n\t\r \x0b\x0c\x1c\x85\u3000")),
    max_size=20,
).map("".join)


def _printed(text: object) -> str:
    console = Console(file=io.StringIO(), width=100, no_color=True, record=True)
    console.print(text)
    return console.export_text()


# --- safe_text -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("char", "shown"),
    [
        ("\x1b", "\\x1b"),
        ("\x00", "\\x00"),
        ("\x7f", "\\x7f"),
        ("\x85", "\\x85"),
        ("\u202e", "\\u202e"),
        ("\u2066", "\\u2066"),
        ("\u200b", "\\u200b"),
        ("\ufeff", "\\ufeff"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
        ("\u061c", "\\u061c"),
    ],
)
def test_safe_text_shows_unsafe_characters(char: str, shown: str) -> None:
    text = safe_text(f"a{char}b")
    assert text.plain == f"a{shown}b"
    assert [(s.start, s.end, s.style) for s in text.spans] == [(1, 1 + len(shown), ESCAPED)]


def test_safe_text_keeps_markup_emoji_codes_and_newlines_literal() -> None:
    out = _printed(safe_text("[bold]x[/bold] :warning: [link=http://x]y[/link]\nnext"))
    assert out == "[bold]x[/bold] :warning: [link=http://x]y[/link]\nnext\n"


def test_safe_text_on_one_line_escapes_newlines_and_tabs() -> None:
    text = safe_text("a\nb\tc", "dim", keep_newlines=False)
    assert text.plain == "a\\nb\\tc"
    assert text.style == "dim"
    assert [(s.start, s.end) for s in text.spans if s.style == ESCAPED] == [(1, 3), (4, 6)]


def test_safe_text_on_one_line_escapes_newlines_before_other_escapes() -> None:
    # Regression: newlines and tabs ahead of the last unsafe character used to pass through raw.
    text = safe_text("a\nb\x00c\td\x1be\nf", keep_newlines=False)
    assert text.plain == "a\\nb\\x00c\\td\\x1be\\nf"
    assert len([s for s in text.spans if s.style == ESCAPED]) == 5


def test_safe_text_styles_only_real_escapes() -> None:
    text = safe_text("C:\\new\n", keep_newlines=False)
    assert text.plain == "C:\\new\\n"
    assert [(s.start, s.end) for s in text.spans] == [(6, 8)]


def test_safe_text_makes_ansi_and_osc_inert() -> None:
    out = _printed(safe_text(f"{CSI} {OSC8}"))
    assert "\x1b" not in out and "\x07" not in out
    assert "\\x1b[31mred\\x1b[0m \\x1b]8;;http://x\\x07link\\x1b]8;;\\x07" in out


@given(breaking_text)
def test_safe_text_never_lets_a_breaker_through(value: str) -> None:
    plain = safe_text(value, keep_newlines=False).plain
    assert not any(unicodedata.category(c) == "Cc" for c in plain)
    assert not any(c in LINE_BREAKERS for c in plain)
    assert len(plain.splitlines()) <= 1


# --- one_line --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "line"),
    [
        ("plain name.log", "plain name.log"),
        (CSI, "\\x1b[31mred\\x1b[0m"),
        (OSC8, "\\x1b]8;;http://x\\x07link\\x1b]8;;\\x07"),
        ("\u202eevil\u202c", "\\u202eevil\\u202c"),
        ("a\u2028b\u2029c\u061cd", "a\\u2028b\\u2029c\\u061cd"),
        ("nul\x00 bell\x07 del\x7f nel\x85", "nul\\x00 bell\\x07 del\\x7f nel\\x85"),
        ("file\x1cgroup", "file\\x1cgroup"),
        ("cannot read x:\n  Traceback\r\n\tline", "cannot read x: Traceback line"),
        ("  wide   \x0b\x0c gaps \u3000 here\n", "wide gaps here"),
        (":warning: [bold]x[/bold]", ":warning: [bold]x[/bold]"),
    ],
)
def test_one_line(value: str, line: str) -> None:
    assert one_line(value) == line


@given(breaking_text)
def test_one_line_is_always_one_safe_line(value: str) -> None:
    line = one_line(value)
    assert not any(unicodedata.category(c) == "Cc" for c in line)
    assert not any(c in LINE_BREAKERS for c in line)
    assert line.splitlines() == ([line] if line else [])
    assert line == line.strip()
    assert "  " not in line


def test_one_line_agrees_with_safe_text_on_what_is_unsafe() -> None:
    value = f"{CSI}\u2028\u202e\x00x"
    assert one_line(value) == safe_text(value).plain


def test_shorten_elides_the_middle() -> None:
    assert shorten("abcdef", 6) == "abcdef"
    assert shorten("abcdefghij", 5) == "ab…ij"
    assert len(shorten("x" * 1000, 40)) == 40
