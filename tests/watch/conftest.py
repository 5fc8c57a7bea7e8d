"""Helpers for the watch tests: a watcher driven by a clock the test moves."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from harmony_doctor.scan.run import scan_rotated
from harmony_doctor.watch.run import Watcher, WatchOptions


class Driven:
    """A Watcher whose looks the test makes, one second apart (every look after a write is a
    pause: each one ends a read)."""

    def __init__(self, options: WatchOptions) -> None:
        self.notes: list[str] = []
        self.watcher = Watcher(options, self.notes.append)
        self.now = 1000.0

    def look(self, times: int = 2) -> None:
        for _ in range(times):
            self.now += 1.0
            self.watcher.step(self.now)

    def by_code(self) -> Counter[str]:
        return Counter(self.watcher.counts.failures_by_code())


def scan_by_code(paths: Sequence[Path]) -> Counter[str]:
    """What `scan` counts in the parts of one rotated log, by code."""
    return Counter(e.code for found in scan_rotated(paths) for e in found.events)
