"""The window a header remainder's words are read into: its head and tail kept, the middle
counted (one rule for scan and explain)."""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass

# A header remainder is held as its first and last words: a line of a million leftover words
# (ten such lines took 2.7 GB in `explain`, 204 MiB in `scan` while split whole) is read in this
# window, the words between counted.
HEAD_WORDS = 192
TAIL_WORDS = 64
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Remainder:
    words: tuple[str, ...]  # at most HEAD_WORDS first and TAIL_WORDS last
    closed: bool
    form: str  # list, some, none, text, absent
    unread: int = 0  # the words between the head and the tail, counted, not kept


class Words:
    """The words of a remainder as they are read: the first HEAD_WORDS and the last TAIL_WORDS
    kept, the ones between counted."""

    __slots__ = ("head", "tail", "unread")

    def __init__(self) -> None:
        self.head: list[str] = []
        self.tail: deque[str] = deque(maxlen=TAIL_WORDS)
        self.unread = 0

    def add(self, word: str) -> None:
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

    def kept(self) -> tuple[str, ...]:
        return (*self.head, *self.tail)
