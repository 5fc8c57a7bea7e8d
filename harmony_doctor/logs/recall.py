"""The extractor's message search, remembering what Rust settled for the texts it saw lately.

A failure that recurs writes the same lines each time: the same traceback, the same error line,
the same re-raise. `messages.find_hit` is a pure function of its text and position, so the
hit read once for a text is the hit of every later sighting of that text. The memory is
bounded (a few thousand short texts, cleared when full), and only what Rust settled is kept:
a text the Rust search declines goes to Python's search every time, so the count of declined
texts (`messages.native_hit_counts`, the scan's `rust_declined`) is what it was.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Final, TypeVar

from harmony_doctor.logs.messages import (
    MessageHit,
    find_hit,
    native_hits,
    read_found,
)
from harmony_doctor.native import native_for

# Texts remembered at most (then the memory starts again), and the longest remembered: an
# error line; a message continued over many lines is read once or twice, not recurring.
MAX_KEPT: Final = 4096
MAX_TEXT: Final = 2048

Finder = Callable[[str, int], MessageHit | None]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Recent(dict[K, V]):
    """What a reader worked out for the short texts it saw lately, by key: one bound for every
    such memory of the extractor (the hits here, a line's shape, a hit's wording)."""

    def keep(self, key: K, value: V, size: int) -> None:
        """Remember `value` for `key`, whose text is `size` characters long: not past MAX_TEXT;
        past MAX_KEPT keys, everything is forgotten and the memory starts again."""
        if size <= MAX_TEXT:
            if len(self) >= MAX_KEPT:
                self.clear()
            self[key] = value


def hit_finder(native: bool | None = None) -> Finder:
    """`messages.hit_finder` with a memory of its own: the Rust search where it is built and
    allowed (`native_for(native)`), each text it settles read once; else Python's."""
    hits = native_hits() if native_for(native) else None
    if hits is None:
        return find_hit
    known: Recent[tuple[str, int], MessageHit | None] = Recent()

    def find(text: str, position: int = 0) -> MessageHit | None:
        key = (text, position)
        if key in known:
            return known[key]
        found = hits.find(text, position)
        if found is None:  # declined: Python searches, and is asked again next time
            return find_hit(text, position)
        hit = read_found(text, position, found)
        known.keep(key, hit, len(text))
        return hit

    return find
