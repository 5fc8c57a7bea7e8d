"""A regular expression compiled where it is first used, not where it is written.

The readers hold a few hundred patterns; compiling them all at import was a third of a clean
scan's start-up, paid by every run, most of which never read a failure. A `Pattern` is written
where its compiled form used to be and behaves as it does; its first call compiles it and puts
the compiled pattern's own bound methods in the instance's `__dict__`, where they shadow the
class's: every later call goes straight to the compiled pattern, at no extra cost. Text or
bytes, as `re.compile` takes them. It imports nothing of the package: every layer may use it.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any, AnyStr, Generic

_METHODS = ("match", "search", "fullmatch", "finditer", "findall", "sub", "split")


class Pattern(Generic[AnyStr]):
    """`re.compile(pattern, flags)`, compiled at its first use."""

    def __init__(self, pattern: AnyStr, flags: int = 0) -> None:
        self.pattern: AnyStr = pattern
        self.flags = flags

    def compiled(self) -> re.Pattern[AnyStr]:
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

    def match(
        self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize
    ) -> re.Match[AnyStr] | None:
        return self.compiled().match(string, pos, endpos)

    def search(
        self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize
    ) -> re.Match[AnyStr] | None:
        return self.compiled().search(string, pos, endpos)

    def fullmatch(
        self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize
    ) -> re.Match[AnyStr] | None:
        return self.compiled().fullmatch(string, pos, endpos)

    def finditer(
        self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize
    ) -> Iterator[re.Match[AnyStr]]:
        return self.compiled().finditer(string, pos, endpos)

    def findall(self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize) -> list[Any]:
        return self.compiled().findall(string, pos, endpos)

    def sub(
        self, repl: AnyStr | Callable[[re.Match[AnyStr]], AnyStr], string: AnyStr, count: int = 0
    ) -> AnyStr:
        return self.compiled().sub(repl, string, count)

    def split(self, string: AnyStr, maxsplit: int = 0) -> list[AnyStr | Any]:
        return self.compiled().split(string, maxsplit)
