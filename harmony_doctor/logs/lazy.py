"""A regular expression compiled where it is first used, not where it is written.

The log reader holds about a hundred patterns; compiling them all at import was a third of a
clean scan's start-up, paid by every run, most of which never read a failure. A `Pattern` is
written where its compiled form used to be and behaves as it does; its first call compiles it
and puts the compiled pattern's own bound methods in the instance's `__dict__`, where they
shadow the class's: every later call goes straight to the compiled pattern, at no extra cost.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any

_METHODS = ("match", "search", "fullmatch", "finditer", "findall", "sub", "split")


class Pattern:
    """`re.compile(pattern, flags)`, compiled at its first use."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags

    def compiled(self) -> re.Pattern[str]:
        """The compiled pattern; from now on each method below is that pattern's own."""
        regex = re.compile(self.pattern, self.flags)
        self.__dict__.update({name: getattr(regex, name) for name in _METHODS})
        self.__dict__["compiled"] = lambda: regex
        return regex

    @property
    def groupindex(self) -> Mapping[str, int]:
        return self.compiled().groupindex

    @property
    def groups(self) -> int:
        return self.compiled().groups

    def match(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled().match(string, pos, endpos)

    def search(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled().search(string, pos, endpos)

    def fullmatch(
        self, string: str, pos: int = 0, endpos: int = sys.maxsize
    ) -> re.Match[str] | None:
        return self.compiled().fullmatch(string, pos, endpos)

    def finditer(
        self, string: str, pos: int = 0, endpos: int = sys.maxsize
    ) -> Iterator[re.Match[str]]:
        return self.compiled().finditer(string, pos, endpos)

    def findall(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> list[Any]:
        return self.compiled().findall(string, pos, endpos)

    def sub(self, repl: str | Callable[[re.Match[str]], str], string: str, count: int = 0) -> str:
        return self.compiled().sub(repl, string, count)

    def split(self, string: str, maxsplit: int = 0) -> list[str | Any]:
        return self.compiled().split(string, maxsplit)
