"""output/escape.py's Markdown entry points: untrusted text in a Markdown page shows as it is,
and nothing in it becomes markup, a link, HTML, a table cell's end or an invisible character."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token

from harmony_doctor.output.escape import markdown_code, markdown_text, visible
from tests.fuzz_inputs import hostile_text

# GitHub reads Markdown as CommonMark with tables (GFM); markdown-it-py (rich's own Markdown
# reader) follows the same spec.
MARKDOWN = MarkdownIt("commonmark").enable("table")
# Text with what Markdown reads as markup, backtick runs of every length at both ends, and
# the characters every output shows as escapes.
markdown_hostile = st.lists(
    hostile_text
    | st.sampled_from(["`", "``", "```", " ", "|", "*", "_", "<b>", "[x](y)", "&amp;", "#", "\n"]),
    max_size=20,
).map("".join)


def _clean(text: str) -> bool:
    """Whether `text` is one line that writes no unsafe or unprintable character as it is."""
    return "\n" not in text and "\t" not in text and visible(text) == text


def _inline(markdown: str) -> list[Token]:
    """The inline tokens of one paragraph of `markdown` (fails if it is not one paragraph)."""
    blocks = MARKDOWN.parse(markdown)
    assert [b.type for b in blocks] == ["paragraph_open", "inline", "paragraph_close"], markdown
    return blocks[1].children or []


def _shown(markdown: str) -> str:
    """What a reader sees of one paragraph: its text, code spans' content included."""
    return "".join(t.content for t in _inline(markdown))


@given(markdown_hostile)
def test_markdown_code_is_one_code_span_showing_the_text(text: str) -> None:
    span = markdown_code(text)
    tokens = MARKDOWN.parseInline(span)[0].children or []
    assert [t.type for t in tokens] == ["code_inline"], span
    assert _clean(span)
    if _clean(text) and text.strip(" "):
        assert tokens[0].content == text


@given(markdown_hostile)
def test_markdown_code_in_a_table_cell_stays_in_its_cell(text: str) -> None:
    table = f"| a | b |\n|---|---|\n| {markdown_code(text, cell=True)} | end |\n"
    cells = [t for t in MARKDOWN.parse(table) if t.type == "inline"]
    assert [c.content for c in cells][-1] == "end"
    assert len(cells) == 4


@given(markdown_hostile)
def test_markdown_text_is_prose_with_no_markup_but_code_spans(text: str) -> None:
    markdown = "x " + markdown_text(text)
    kinds = {t.type for t in _inline(markdown)}
    assert kinds <= {"text", "code_inline"}, markdown
    assert _clean(markdown)
    if "`" not in text and _clean(text):
        # A paragraph drops the spaces it ends with.
        assert _shown(markdown) == ("x " + text).rstrip(" ")


@pytest.mark.parametrize(
    "text",
    [
        "# not a heading",
        "  ## nor this",
        "- not a list",
        "+ no",
        "1. not a list",
        "12) no",
        "=== no",
        "> no",
    ],
)
def test_markdown_text_at_a_line_start_starts_no_block(text: str) -> None:
    assert _shown(markdown_text(text)) == text.lstrip(" ")


def test_markdown_text_reads_backtick_pairs_as_code_and_the_rest_as_text() -> None:
    tokens = _inline(markdown_text("Parse with strict=False (`<|end|>` then *not* <|start|>)"))
    assert [(t.type, t.content) for t in tokens if t.type == "code_inline"] == [
        ("code_inline", "<|end|>")
    ]
    assert (
        "".join(t.content for t in tokens)
        == "Parse with strict=False (<|end|> then *not* <|start|>)"
    )
    # An odd backtick opens no span.
    assert _shown(markdown_text("one ` tick")) == "one ` tick"


@pytest.mark.parametrize(
    ("char", "shown"),
    [
        ("\x1b", "\\x1b"),
        ("\u202e", "\\u202e"),
        ("\u200b", "\\u200b"),
        ("\n", "\\n"),
        ("\x85", "\\x85"),
    ],
)
def test_markdown_shows_control_and_bidi_characters_as_escapes(char: str, shown: str) -> None:
    assert MARKDOWN.parseInline(markdown_code(f"a{char}b"))[0].children[0].content == f"a{shown}b"  # type: ignore[index]
    assert _shown(markdown_text(f"a{char}b")) == f"a{shown}b"
