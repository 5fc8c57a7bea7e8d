"""The extractor: log lines in, each Harmony failure out once as a LogError, in bounded state.

`extract_errors` reads lines one at a time and keeps a bounded state per process prefix (the
traceback in progress, the last timestamp, an error line still being continued, a few failures
waiting for their duplicates), so `scan` can run it over streams of any length. A failure is
reported once however many times a log repeats it (the traceback's error line, a wrapper, the
JSON body sent to the client), at the 1-based line of its first error line. Nothing here knows
a particular excerpt: prefixes, wrappers and message forms are recognised by shape.
"""

from __future__ import annotations

import re
from collections import OrderedDict, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Final

from harmony_doctor.faults.catalogue import FORM, FormName
from harmony_doctor.logs.describe import describe, lmstudio_found
from harmony_doctor.logs.lines import Line, anatomize, structural
from harmony_doctor.logs.messages import MessageHit, find_hit, find_leak, holds_message
from harmony_doctor.logs.process import ProcessState
from harmony_doctor.models import LogError

# Bounds. Memory: process prefixes remembered, failures waiting for their copies, how long an
# error line may grow by continuation. Distance in lines: how far apart two copies of one
# failure may be (a failure is emitted once this many lines passed without a copy).
MAX_KEYS: Final = 64
MAX_PENDING: Final = 64
MAX_CONTINUATION_LINES: Final = 256
MAX_MESSAGE_CHARS: Final = 65_536
MAX_ERRORS_PER_LINE: Final = 16
DUP_WINDOW: Final = 60


@dataclass
class _Candidate:
    """An error line being read: it may continue on the next lines."""

    line: Line
    text: str
    last_line: int
    hit: MessageHit
    continued: int = 0
    lead: Line | None = None  # a prefix-only line just before (LM Studio's timestamp line)
    stale: bool = False  # text grew since `hit` was read
    offset: int = 0  # where in `text` to look for the message (a second one on a line)


def _reread(candidate: _Candidate) -> None:
    hit = find_hit(candidate.text, candidate.offset)
    if hit is not None:  # always: the text still starts with the same message
        candidate.hit = hit
    candidate.stale = False


def _may_close(hit: MessageHit, text: str) -> bool:
    """Whether `text` could end the open message: its closing quote, `]` or `)`."""
    if hit.quote is not None:
        return hit.quote in text
    remainder = hit.remainder
    if remainder is not None and remainder.form == "list":
        return "]" in text
    if remainder is not None and remainder.form == "some":
        return ")" in text
    return True


@dataclass
class _Pending:
    """A failure waiting to see whether the log repeats it."""

    error: LogError
    form: FormName
    key: str
    shape: str
    norm: str
    last_line: int
    emitted: bool = False


def extract_errors(lines: Iterable[str], first_line: int = 1) -> Iterator[LogError]:
    """Every Harmony failure in `lines`, once each, in about the order of their lines."""
    extractor = _Extractor()
    number = first_line - 1
    for number, raw in enumerate(lines, start=first_line):
        yield from extractor.feed(number, raw)
    yield from extractor.close(number)


def extract_text(text: str) -> tuple[LogError, ...]:
    """`extract_errors` over a whole text, sorted by line."""
    found = extract_errors(text.lstrip("\ufeff").split("\n"))
    return tuple(sorted(found, key=lambda e: e.line))


class _Extractor:
    """The line-by-line machine behind `extract_errors`; its state is bounded (see MAX_*)."""

    def __init__(self) -> None:
        self.keys: OrderedDict[str, ProcessState] = OrderedDict()
        self.open: _Candidate | None = None
        self.previous: Line | None = None
        self.previous_hit = False
        self.pending: list[_Pending] = []
        self.recent: deque[_Pending] = deque(maxlen=32)

    def state(self, key: str) -> ProcessState:
        state = self.keys.get(key)
        if state is None:
            state = self.keys[key] = ProcessState()
            if len(self.keys) > MAX_KEYS:
                self.keys.popitem(last=False)
        else:
            self.keys.move_to_end(key)
        return state

    # -- feeding --

    def feed(self, number: int, raw: str) -> Iterator[LogError]:
        line = anatomize(number, raw)
        consumed = False
        if self.open is not None:
            consumed = self._continue(line)
        if not consumed:
            self.state(line.key).observe(line)
            self._detect(line)
        self.previous = line
        yield from self._flush(number)

    def close(self, number: int) -> Iterator[LogError]:
        if self.open is not None:
            self._finalize(self.open)
            self.open = None
        yield from self._flush(number + DUP_WINDOW + 1)

    def _continue(self, line: Line) -> bool:
        """Extend the open error with `line` if it is the rest of it; else maybe close it."""
        candidate = self.open
        assert candidate is not None
        text = line.text
        continuation = (
            bool(text)
            and not structural(text)
            and candidate.continued < MAX_CONTINUATION_LINES
            and len(candidate.text) < MAX_MESSAGE_CHARS
            and not holds_message(text, bare=False)
        )
        if continuation and not line.prefix and line.number == candidate.last_line + 1:
            joined = candidate.text + line.rest  # a terminal wrap: the text goes on as is
        elif continuation and line.prefix and line.prefix == candidate.line.prefix:
            joined = candidate.text + "\n" + line.rest  # one record logged as several lines
        else:
            interleaved = (
                line.key != candidate.line.key
                and bool(line.key)
                and bool(candidate.line.key)
                and line.number - candidate.last_line <= 20
            )
            if not interleaved:
                self._finalize(candidate)
                self.open = None
            return False
        candidate.text = joined
        candidate.last_line = line.number
        candidate.continued += 1
        if not _may_close(candidate.hit, line.rest):
            candidate.stale = True  # read it again when it can have ended: no quadratic work
            return True
        _reread(candidate)
        if candidate.hit.closed:
            self._finalize(candidate)
            self.open = None
        return True

    def _detect(self, line: Line) -> None:
        """Start a candidate at an error message, else look for LM Studio output or a leak."""
        hit = find_hit(line.text) if line.text else None
        candidate: _Candidate | None
        if hit is not None:
            candidate = _Candidate(line=line, text=line.text, last_line=line.number, hit=hit)
        else:
            candidate = self._wrapped(line)
        self.previous_hit = candidate is not None
        if candidate is not None:
            self._start(candidate)
        elif line.text.lower().startswith("model output:"):
            self._attach_model_output(line)
        elif "<|" in line.text:
            self._detect_leak(line)

    def _wrapped(self, line: Line) -> _Candidate | None:
        """A message a terminal wrap broke across the previous line and this one, if any."""
        previous = self.previous
        if (
            line.prefix
            or not line.text
            or previous is None
            or not previous.text
            or self.previous_hit
            or structural(line.text)
        ):
            return None
        found = find_hit(previous.text + line.rest)
        if found is None or found.start >= len(previous.text):
            return None
        return _Candidate(
            line=previous, text=previous.text + line.rest, last_line=line.number, hit=found
        )

    def _start(self, candidate: _Candidate) -> None:
        """Finalize each closed message on the candidate's line; keep an open one open."""
        lead = self.previous
        if lead is not None and lead.prefix and not lead.text and lead is not candidate.line:
            candidate.lead = lead
        for _ in range(MAX_ERRORS_PER_LINE):
            if not candidate.hit.closed:
                if self.open is not None:  # one left open by an interleaved process
                    self._finalize(self.open)
                self.open = candidate
                return
            self._finalize(candidate)
            following = find_hit(candidate.text, candidate.hit.end)
            if following is None:
                return
            candidate = replace(candidate, hit=following, offset=candidate.hit.end)

    def _attach_model_output(self, line: Line) -> None:
        for item in reversed(self.pending):
            if (
                FORM[item.form].output_follows
                and line.number - item.last_line <= 3
                and item.error.context is None
            ):
                output = line.text.split(":", 1)[1].strip()
                item.error = replace(
                    item.error, context=output, found=lmstudio_found(item.error.message, output)
                )
                item.last_line = line.number
                item.error = replace(item.error, span=(item.error.span[0], line.number))
                return

    def _detect_leak(self, line: Line) -> None:
        hit = find_leak(line.text)
        if hit is not None:
            self._finalize(_Candidate(line=line, text=line.text, last_line=line.number, hit=hit))

    # -- findings --

    def _finalize(self, candidate: _Candidate) -> None:
        if candidate.stale:
            _reread(candidate)
        line = candidate.line
        state = self.state(line.key)
        error = describe(line, candidate.hit, candidate.last_line, candidate.lead, state)
        if state.ends_traceback(line):
            state.close_traceback()  # this error line ended it
        item = _Pending(
            error=error,
            form=candidate.hit.name,
            key=candidate.line.key,
            shape=candidate.hit.shape,
            norm=re.sub(r"\s+", "", error.message).lower(),
            last_line=candidate.last_line,
        )
        for other in [*self.recent, *self.pending]:
            if self._same_failure(other, item):
                if not other.emitted:
                    self._merge(other, item)
                return
        self.pending.append(item)

    def _same_failure(self, old: _Pending, new: _Pending) -> bool:
        if old.key and new.key and old.key != new.key:
            return False
        if new.error.line - old.last_line > DUP_WINDOW or old.error.kind != new.error.kind:
            return False
        if new.error.kind == "markup_leak":
            return True
        if new.error.kind == "recovered_raw_output":
            return False  # logged once per request, never repeated: each line is one failure
        if old.norm != new.norm:
            shorter, longer = sorted((old.norm, new.norm), key=len)
            return longer.startswith(shorter)  # a truncated copy, or the bare message
        state = self.state(new.key)
        if state.episode_start > old.error.line:
            return False  # a new traceback began since: the same error again
        if old.shape != new.shape:
            return True
        if old.error.span[0] < old.error.line and old.error.span[0] >= state.episode_start:
            # The first copy closed a traceback of this same episode: a chained re-raise prints
            # the failure again, and a logger may stamp its lines seconds apart.
            return True
        return not (
            old.error.timestamp
            and new.error.timestamp
            and old.error.timestamp != new.error.timestamp
        )

    def _merge(self, old: _Pending, new: _Pending) -> None:
        """Keep one record of a failure seen twice: the fuller message, all the evidence."""
        keep, other = (new, old) if len(new.norm) > len(old.norm) else (old, new)
        a, b = keep.error, other.error
        old.error = replace(
            a,
            server=a.server or b.server,
            harmony_version=a.harmony_version or b.harmony_version,
            timestamp=a.timestamp or b.timestamp,
            pid=a.pid if a.pid is not None else b.pid,
        )
        old.norm, old.shape = keep.norm, keep.shape
        old.last_line = max(old.last_line, new.last_line)

    def _flush(self, number: int) -> Iterator[LogError]:
        """Emit the failures no later line can repeat any more (and the oldest, past a bound)."""
        if not self.pending:
            return
        self.pending.sort(key=lambda p: p.error.line)
        excess = len(self.pending) - MAX_PENDING
        due = [
            p
            for index, p in enumerate(self.pending)
            if index < excess or number - p.last_line > DUP_WINDOW
        ]
        for item in due:
            self.pending.remove(item)
            item.emitted = True
            self.recent.append(item)
            yield item.error
