"""The window a header remainder's words are read into: its head and tail kept, the middle
counted (one rule for scan and explain); a word past MAX_WORD characters kept as its ends, the
characters between counted."""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass

from harmony_doctor.inputs.text_lines import stripped_end

# A header remainder is held as its first and last words: a line of a million leftover words
# (ten such lines took 2.7 GB in `explain`, 204 MiB in `scan` while split whole) is read in this
# window, the words between counted.
HEAD_WORDS = 192
TAIL_WORDS = 64
# A word is held to its first and last MAX_WORD // 2 characters, an ellipsis between: ten lines
# whose remainder is one list element of a mebibyte took 246 MiB in `scan`, each element kept
# and classified whole.
MAX_WORD = 1_024
CUT = "…"  # where a word's middle was left out (what was, `Remainder.cut` counts)
_HALF = MAX_WORD // 2
# A header remainder's text, as its failure's message, is held to its first and last
# MAX_TEXT // 2 characters (its words are read from all of it): a message of 4 MiB was copied
# five times over while read.
MAX_TEXT = 65_536
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Remainder:
    words: tuple[str, ...]  # at most HEAD_WORDS first and TAIL_WORDS last
    closed: bool
    form: str  # list, some, none, text, absent
    unread: int = 0  # the words between the head and the tail, counted, not kept
    # per word of `words`, the characters left out of its middle (at CUT); () when none was
    cut: tuple[int, ...] = ()


class _Cut(str):
    """A word held as its ends: `left_out` characters of its middle were cut at CUT."""

    left_out: int


def _cut(word: str) -> _Cut:
    """The ends of a `word` past MAX_WORD characters (a `_Cut` saying how many were left out)."""
    return cut_word(word, 0, len(word))


def cut_word(text: str, start: int, stop: int, half: int = _HALF) -> _Cut:
    """`text[start:stop]` as its first and last `half` characters joined at CUT, its middle
    never copied (`_cut` of it by default; `stop - start` > 2 * `half`)."""
    held = _Cut(text[start : start + half] + CUT + text[stop - half : stop])
    held.left_out = stop - start - 2 * half
    return held


def text_ends(text: str, stop: int) -> tuple[str, int]:
    """`text[:stop]` without its trailing whitespace: whole up to MAX_TEXT characters, else
    its first and last MAX_TEXT // 2 joined at CUT (the middle is never copied); with the
    number of characters left out (0: none)."""
    stop = stripped_end(text, 0, stop)
    if stop <= MAX_TEXT:
        return text[:stop], 0
    held = cut_word(text, 0, stop, MAX_TEXT // 2)
    return str(held), held.left_out


class Words:
    """The words of a remainder as they are read: the first HEAD_WORDS and the last TAIL_WORDS
    kept (each to its ends past MAX_WORD characters), the ones between counted."""

    __slots__ = ("head", "tail", "unread")

    def __init__(self) -> None:
        self.head: list[str] = []
        self.tail: deque[str] = deque(maxlen=TAIL_WORDS)
        self.unread = 0

    def add(self, word: str) -> None:
        if len(word) > MAX_WORD and not isinstance(word, _Cut):
            word = _cut(word)
        if len(self.head) < HEAD_WORDS:
            self.head.append(word)
            return
        if len(self.tail) == TAIL_WORDS:
            self.unread += 1
        self.tail.append(word)

    def split(self, text: str) -> Words:
        """Each whitespace-separated word of `text` added (`str.split()`'s words, none listed)."""
        for match in _WORD.finditer(text):
            self.add(match.group())
        return self

    def remainder(self, closed: bool, form: str) -> Remainder:
        """The words read, as the remainder of the `form` they were read in."""
        kept = (*self.head, *self.tail)
        cut = tuple(getattr(word, "left_out", 0) for word in kept)
        plain = tuple(str(word) if isinstance(word, _Cut) else word for word in kept)
        return Remainder(plain, closed, form, self.unread, cut if any(cut) else ())
