"""Whether an input's bytes may hold a token stream at all, told without reading them as one.

scan looks at a whole file as explain would (scan/documents.py) only where this says it may:
most inputs are logs, and `inputs/tokens.py`, which reads token streams of every shape, then
never loads. What is checked is a necessary condition of `tokens.detect_format` (a property
test holds the two together).
"""

from __future__ import annotations

from harmony_doctor.lazy_regex import Pattern

# What `detect_format` needs to find tokens, in bytes: a JSON or SSE start, Harmony markup
# anywhere, or a first line of ids (ASCII whitespace and the separators str.strip() drops).
_TOKEN_START = Pattern(rb"[\[{]|data:")
_ID_LINE = Pattern(rb"[\[\(\]\),\s\x1c-\x1f\x80-\xff\d-]*")  # non-ASCII: detect_format decides
_LEADING = Pattern(rb"[ \t\n\r\x0b\x0c\x1c-\x1f]*")
_MARKUP = Pattern(rb"<\|")  # the regex engine searches 2x faster than `in` here


def may_hold_tokens(data: bytes) -> bool:
    """A cheap necessary condition for `tokens.detect_format` to find a token stream in `data`
    (its UTF-8 bytes): False means it finds none, or only a vLLM log's ids. A text that starts with
    a non-ASCII character (a byte-order mark, Unicode spaces) is left to `detect_format`.
    Nothing is copied: it costs a search for `<|` over the data."""
    start = _LEADING.match(data).end()  # type: ignore[union-attr]  # matches the empty string
    if start == len(data):
        return False
    if data[start] >= 0x80 or _TOKEN_START.match(data, start) or _MARKUP.search(data, start):
        return True
    end = data.find(b"\n", start)
    return _ID_LINE.fullmatch(data, start, len(data) if end < 0 else end) is not None
