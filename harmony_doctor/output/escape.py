"""The one escaping helper: every untrusted string reaches stdout, stderr or a file through it.

The rule is the same everywhere: control characters (C0 but tab and newline, DEL, C1), bidi
and invisible formatting characters and the Unicode line separators are shown as escapes
(`\\x1b`, `\\u202e`), never written. The terminal gets them through `safe_text` and
`one_line`; files through `visible` and its per-format entry points (`for_html`), so that a file
`cat`ed to a terminal or opened in a browser runs or reorders nothing (OSC 52, U+202E).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from harmony_doctor.lazy_regex import Pattern
from harmony_doctor.output.styles import ESCAPED

if TYPE_CHECKING:  # one_line serves stderr without loading rich
    from rich.text import Text

# Control characters (C0 but tab/newline, DEL, C1), bidi/invisible formatting characters, the
# Arabic letter mark (a bidi control), and the Unicode line and paragraph separators (a terminal
# or editor may break the line there, so one line of output could pass for two).
_UNSAFE_CHARS = (
    r"\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff"
)
_UNSAFE = Pattern(f"[{_UNSAFE_CHARS}]")
_UNSAFE_ON_ONE_LINE = Pattern(f"[\\n\\t{_UNSAFE_CHARS}]")
_NAMED = {"\n": "\\n", "\t": "\\t"}
# Whitespace controls that one_line folds like a space rather than shows: they only move the
# cursor, and a multi-line message (or CRLF text) reads best as one line.
_FOLDED_CONTROLS = "\x0b\x0c\r"
_WHITESPACE_RUN = Pattern(r"\s+")


def _escape_char(ch: str) -> str:
    named = _NAMED.get(ch)
    if named is not None:
        return named
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def safe_text(value: str, style: str = "", *, keep_newlines: bool = True) -> Text:
    """Untrusted text as a rich Text: no markup, no emoji codes, control characters visible."""
    unsafe = _UNSAFE if keep_newlines else _UNSAFE_ON_ONE_LINE
    from rich.text import Text

    text = Text(style=style)
    position = 0
    for match in unsafe.finditer(value):
        text.append(value[position : match.start()])
        text.append(_escape_char(match.group()), style=ESCAPED)
        position = match.end()
    text.append(value[position:])
    return text


def _visible(match: re.Match[str]) -> str:
    ch = match.group()
    return " " if ch in _FOLDED_CONTROLS else _escape_char(ch)


def one_line(text: str) -> str:
    """Untrusted text as one plain line (stderr): unsafe characters shown, whitespace folded."""
    # ESC becomes the inert `\x1b`, so ANSI and OSC sequences print as text and do nothing.
    folded = _WHITESPACE_RUN.sub(" ", _UNSAFE.sub(_visible, text)).strip()
    # What is left unprintable (unassigned, private-use or surrogate code points) is shown too.
    if folded.isprintable():
        return folded
    return "".join(c if c.isprintable() else _escape_char(c) for c in folded)


def visible(text: str) -> str:
    """Untrusted text as plain text with every unsafe or unprintable character shown as an
    escape (`\\x1b`, `\\u202e`), newlines and tabs kept: for formats that have escapes of
    their own for line breaks (GitHub workflow commands, Markdown cells)."""
    shown = _UNSAFE.sub(lambda match: _escape_char(match.group()), text)
    if shown.isprintable():
        return shown
    return "".join(c if c.isprintable() or c in "\n\t" else _escape_char(c) for c in shown)


def for_html(value: str) -> str:
    """Untrusted text as HTML text or an attribute value: `visible`, then markup escaped."""
    import html

    return html.escape(visible(value), quote=True)


def json_escaped(encoded: str) -> str:
    """JSON text with its unsafe characters as JSON's own `\\uXXXX` escapes: lossless, as
    they can stand only inside strings (json.dumps writes C0 as escapes already)."""
    return _UNSAFE.sub(lambda match: f"\\u{ord(match.group()):04x}", encoded)


def unsafe(text: str) -> bool:
    """Whether `text` holds a character no output may write as it is (what `visible` shows)."""
    return _UNSAFE.search(text) is not None


def shorten(value: str, limit: int) -> str:
    """`value` cut to at most `limit` characters, the middle elided."""
    if len(value) <= limit:
        return value
    half = (limit - 1) // 2
    return value[:half] + "…" + value[len(value) - (limit - 1 - half) :]


# --- Markdown (`rules --format markdown`, docs/codes.md) ----------------------------------------

# What Markdown may read as markup inside a line: emphasis, code, links, HTML and entities,
# table cells, strikethrough. Escaped with a backslash (CommonMark escapes any ASCII punctuation).
_MARKDOWN_INLINE = Pattern(r"[\\`*_\[\]<>|&~]")
# What Markdown reads as a block only at the start of a line: a heading, a list item, a setext
# underline (escaped with a backslash), an ordered list's `1.` or `1)` (its `.` or `)` escaped).
_MARKDOWN_BLOCK_START = Pattern(r"^(?P<indent> {0,3})(?P<mark>[#+\-=]|\d+[.)])")
_BACKTICKS = Pattern(r"`+")


def _printable_line(text: str) -> str:
    """Text on one line: unsafe characters, newlines and tabs and the unprintable shown."""
    shown = _UNSAFE_ON_ONE_LINE.sub(lambda match: _escape_char(match.group()), text)
    if shown.isprintable():
        return shown
    return "".join(c if c.isprintable() else _escape_char(c) for c in shown)


def markdown_code(text: str, *, cell: bool = False) -> str:
    """Untrusted text as one Markdown inline code span that shows it as it is: fenced by one
    backtick more than its longest run of backticks, so nothing in it closes the span; on one
    line, with control, bidi and invisible characters (and newlines) shown as escapes. Inside
    a code span nothing is markup, emoji codes and HTML included. In a table `cell`, its `|`
    are written `\\|`, which GitHub's tables read as a `|` of the span, not a cell's end."""
    shown = _printable_line(text)
    fence = "`" * (max((len(run) for run in _BACKTICKS.findall(shown)), default=0) + 1)
    # A span that starts or ends with a backtick or a space is padded: Markdown strips exactly
    # one padding space on each side.
    pad = " " if not shown or shown[0] in "` " or shown[-1] in "` " else ""
    span = f"{fence}{pad}{shown}{pad}{fence}"
    return span.replace("|", "\\|") if cell else span


def markdown_text(text: str, *, cell: bool = False) -> str:
    """Text as one line of Markdown prose or one table cell, read as written: what stands
    between a pair of backticks becomes a code span (`markdown_code`); elsewhere every
    character Markdown could read as markup (`*`, `_`, `<`, `|`, `[` ...) is escaped, and
    control, bidi and invisible characters are shown as escapes. Meant for the project's own
    prose (the catalogue); untrusted text goes in `markdown_code`, where GitHub's `:emoji:`
    codes stay inert too."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an odd number of backticks: no span, each backtick escaped
        parts = [text]
    shown = "".join(
        markdown_code(part, cell=cell) if index % 2 else _markdown_inline(part)
        for index, part in enumerate(parts)
    )
    block = _MARKDOWN_BLOCK_START.match(shown)
    if block is None:
        return shown
    mark = block["mark"]
    escaped = f"{mark[:-1]}\\{mark[-1]}" if mark[0].isdigit() else f"\\{mark}"
    return block["indent"] + escaped + shown[block.end() :]


def _markdown_inline(text: str) -> str:
    return _MARKDOWN_INLINE.sub(lambda match: "\\" + match.group(), _printable_line(text))
