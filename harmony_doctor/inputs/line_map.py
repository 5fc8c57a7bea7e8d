"""Unwrapped line number -> line of the wrapped file (inputs/wrappers.py's line map): a Docker
record split in pieces, a multi-line journald message or a dropped journal note moves the two
apart, and a failure is reported on the line of the file the user gave."""

from __future__ import annotations

import bisect


class LineMap:
    """Unwrapped line number -> line of the wrapped file, stored as runs (bounded by forget)."""

    def __init__(self) -> None:
        self._starts: list[int] = []  # first unwrapped line of each run
        self._sources: list[int] = []  # its wrapped line
        self._steps: list[int] = []  # 1: consecutive wrapped lines; 0: all on one wrapped line
        self._last = 0  # the last line added

    def add(self, line: int, source_line: int, count: int = 1) -> None:
        """Lines line..line+count-1 come from source_line.. (consecutive); lines must grow."""
        if count <= 0:
            return
        if self._starts:
            if self._predict(-1, line) == source_line and (count == 1 or self._steps[-1] == 1):
                self._last = line + count - 1
                return
            step = source_line - self._sources[-1]
            if self._last == self._starts[-1] and step in (0, 1) and (count == 1 or step == 1):
                self._steps[-1] = step  # a run of one line: its step can still be chosen
                self._last = line + count - 1
                return
        self._starts.append(line)
        self._sources.append(source_line)
        self._steps.append(1)
        self._last = line + count - 1

    def source_line(self, line: int) -> int:
        """The wrapped file's line of unwrapped line `line` (itself when nothing maps it)."""
        index = bisect.bisect_right(self._starts, line) - 1
        if index < 0:
            return line
        return self._predict(index, line)

    def forget(self, before: int) -> None:
        """Drop what only lines below `before` need (the consumer will not ask for them)."""
        index = bisect.bisect_right(self._starts, before) - 1
        if index > 0:
            del self._starts[:index], self._sources[:index], self._steps[:index]

    def _predict(self, index: int, line: int) -> int:
        return self._sources[index] + (line - self._starts[index]) * self._steps[index]
