"""A failure the extractor (logs/extract.py) holds while it waits to see whether the log shows
it again: what places a sighting, and the pure tests of whether two sightings can be one."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Final

from harmony_doctor.faults.catalogue import FormName
from harmony_doctor.logs.lines import Line, cut_marker
from harmony_doctor.models import LogError

# Cut markers remembered: the reaches they shorten are a few lines (logs/extract.py *_REACH).
_CUTS_KEPT: Final = 8


@dataclass
class Pending:
    """A failure waiting to see whether the log shows it again, with what places a sighting."""

    error: LogError
    form: FormName
    key: str
    norm: str
    last_line: int
    rank: int  # the shape rank (logs/extract.py) of the outermost copy seen
    traceback_start: int | None  # first line of the traceback the failure ended, if it did
    request_id: str | None
    mention: bool  # the message without its details: a reference, not a record of its own
    field_line: bool  # a pretty-printed body's field line (`"content": "..."`)
    emitted: bool = False


def compatible(old: Pending, new: Pending) -> bool:
    """Whether two messages can be one failure's: equal, or one a cut copy of the other."""
    if old.error.kind != new.error.kind:
        return False
    if new.error.kind == "markup_leak":
        return True  # the fields of one body leak different text: their lines decide
    if old.mention or new.mention:
        return old.form == new.form and old.mention != new.mention
    # equal, or the shorter a prefix of the longer (a string is no prefix of a shorter one)
    return old.norm.startswith(new.norm) or new.norm.startswith(old.norm)


def keys_agree(old: Pending, new: Pending) -> bool:
    """The same process, or one of the two shows none (a body pasted under a log)."""
    return old.key == new.key or not old.key or not new.key


def stamps_differ(a: LogError, b: LogError) -> bool:
    return bool(a.timestamp and b.timestamp and a.timestamp != b.timestamp)


class Cuts:
    """The lines lately read that mark a cut in an excerpt (logs/lines.py `cut_marker`: an
    elision, grep's `--`): two sightings of one failure with a cut between are as near as
    without it (a summary line, `--`, then its traceback)."""

    def __init__(self) -> None:
        self.lines: deque[int] = deque(maxlen=_CUTS_KEPT)

    def see(self, line: Line) -> None:
        """Note `line` if it marks a cut (a line of no log record: no prefix)."""
        if cut_marker(line):
            self.lines.append(line.number)

    def apart(self, first: int, last: int) -> int:
        """How many lines after `first` line `last` is, the cut markers between not counted."""
        return last - first - sum(first < cut < last for cut in self.lines)
