"""A text's lines as `str.splitlines()` cuts them, numbered from 1, a block at a time: a reader
of a whole log never holds a second copy of it as a list of lines (a 117 MB log: about 130 MB
more at once); and a text bounded to its ends, with the count of what is left out between them
(`bounded`: what explain echoes of a log, what scan writes in an event's cell)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

# The characters str.splitlines() ends a line at ("\r\n" is one end).
LINE_BREAKS: Final = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"

_BLOCK: Final = 1 << 20  # characters split at once (then on to the next "\n")
_LEADING: Final = re.compile(r"\s*")  # what str.strip() takes: the characters str.isspace() is


def numbered_lines(text: str, block: int = _BLOCK) -> Iterator[tuple[int, str]]:
    """(number, line) for each line of `text`, exactly as `enumerate(text.splitlines(), 1)`.

    A block ends just after a "\\n", where splitlines ends a line whatever comes next (the "\\r"
    of a "\\r\\n" stays before it), so the blocks' lines are the whole text's."""
    number = 1
    start = 0
    while start < len(text):
        cut = text.find("\n", start + block)
        end = len(text) if cut < 0 else cut + 1
        for line in text[start:end].splitlines():
            yield number, line
            number += 1
        start = end


def stripped_bounds(text: str, block: int = 4096) -> tuple[int, int]:
    """(start, end) with text[start:end] == text.strip(), found without copying the text (a
    117 MB log ending in a newline was copied whole to be looked at)."""
    start = _LEADING.match(text).end()  # type: ignore[union-attr]  # matches ""
    return start, stripped_end(text, start, len(text), block)


def stripped_end(text: str, start: int, end: int, block: int = 4096) -> int:
    """Where `text[start:end].rstrip()` ends in `text`, found without copying the text."""
    while end > start:
        piece = text[max(start, end - block) : end]
        kept = len(piece.rstrip())
        end -= len(piece) - kept
        if kept:
            break
    return end


def bounded(value: str, limit: int, cut: int = 0) -> str:
    """`value` whole up to `limit` characters; past it, its head and tail with how much is
    left out between them (`… 299,600 characters …`): long, yet never silently short. `cut`:
    the characters a reader left out of `value`'s middle already, each such place marked with
    one character (logs/words.py): counted in, so the count is the text's as logged."""
    if len(value) <= limit and not cut:
        return value
    half = max(1, min(limit, len(value)) // 2)
    left = len(value) - 2 * half + cut - (1 if cut else 0)
    return f"{value[:half]}… {left:,} characters …{value[-half:]}"
