"""The extractor: log lines in, each Harmony failure out once as a LogError, in bounded state.

`extract_errors` reads lines one at a time and keeps a bounded state per process prefix (the
traceback in progress, the last timestamp, an error line still being continued, a few failures
waiting for their copies), so `scan` can run it over streams of any length. A failure is
reported once however many times the log shows that one event, at the 1-based line of its
first error line, and every other failure is reported too, however alike their texts.

Two sightings with compatible messages are one event only when their places say so:
- a chained re-raise: the exception a process was handling when `During handling of the above
  exception...` (or `The above exception was the direct cause...`) began, shown again by the
  traceback that follows, with no unchained traceback in between;
- a summary line (a log record that states the error, as `logger.exception` writes it) right
  above the head of the traceback whose last line it sums up (the same process, and the same
  stamp where both have one);
- an echo: a copy a few lines after the error as raised, one step further out (the error line,
  then a wrapper's re-raise or quoting, then the body sent to the client), with no other
  failure and no new request of the process in between;
- a mention: the message without its details (an issue's title, a sentence about it), folded
  into the failure it names nearby (mentions alone count one each: nothing says they are one);
- a markup leak over the field lines of one pretty-printed body.
Two sightings that name different request ids are never one event. A line that marks a cut (an
elision, grep's `--`) does not count in how close two sightings are. Nothing here knows a
particular excerpt: prefixes, wrappers and message forms are recognised by shape.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Iterable, Iterator
from dataclasses import replace
from itertools import chain
from operator import attrgetter
from typing import Final

from harmony_doctor.faults.catalogue import FORM
from harmony_doctor.faults.generic import stated
from harmony_doctor.logs.candidate import (
    Candidate,
    is_mention,
    may_close,
    request_id_of,
    reread,
    written_by_caller,
)
from harmony_doctor.logs.describe import Worded, describe, lmstudio_found
from harmony_doctor.logs.families import javascript_syntax_error
from harmony_doctor.logs.firstpass import ABSORBED, NOT_READ, QUIET, Absorbed, Run, first_pass
from harmony_doctor.logs.lines import FRAME, Line, line_reader, native_counts, structural
from harmony_doctor.logs.lines import MODEL_OUTPUT as _MODEL_OUTPUT
from harmony_doctor.logs.messages import (
    find_leak,
    holds_message,
    is_fallback,
    is_generic,
    native_hit_counts,
)
from harmony_doctor.logs.process import TRACEBACK_REACH, ProcessState, Shapes
from harmony_doctor.logs.recall import hit_finder
from harmony_doctor.logs.servers import raise_server
from harmony_doctor.logs.sightings import Cuts, Pending, compatible, keys_agree, stamps_differ
from harmony_doctor.models import LogError
from harmony_doctor.models.core import with_facts

# Bounds. Memory: process prefixes remembered, failures waiting for their copies, how long an
# error line may grow by continuation. Distance in lines: how far apart two copies of one
# failure may be (a failure is emitted once this many lines passed without a copy).
MAX_KEYS: Final = 64
MAX_PENDING: Final = 64
MAX_CONTINUATION_LINES: Final = 256
MAX_MESSAGE_CHARS: Final = 65_536
MAX_ERRORS_PER_LINE: Final = 16
DUP_WINDOW: Final = 60
# How close two sightings of one event sit, in lines: an echo after the error it copies; a
# summary line before the head of its traceback (`logger.exception` writes them adjacent); the
# field lines of one pretty-printed body.
ECHO_REACH: Final = 4
SUMMARY_REACH: Final = 1
FIELD_REACH: Final = 2

# How far out a copy of an error is: the error as raised (an exception line, the message on
# its own), a wrapper's re-raise or quoting (`RuntimeError: ...: X`, `msg="X"`, `Error('X')`),
# a body sent to a client (`{"error": {"message": "X"}}`). An echo only moves outwards.
_SHAPE_RANK: Final = {"exception": 0, "bare": 0, "wrapper": 1, "quoted": 1, "repr": 1, "json": 2}
# A summary line is a log record (`logger.exception(e)` writes the message, `[safe_run]
# exception caught: HarmonyError X` wraps it), never a body sent to a client.
_SUMMARY_RANK: Final = 1
_ERROR_LINE: Final = attrgetter("error.line")


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
        self.open: Candidate | None = None
        self.previous_hit = False
        self.pending: list[Pending] = []
        self.recent: deque[Pending] = deque(maxlen=32)
        self.latest: Pending | None = None  # the failure the last sighting was
        self.cuts = Cuts()
        self.number: int | None = None  # the last line fed
        self.unread_from: int | None = None  # first line of the last run of lines not fed
        self.anatomize = line_reader()  # Rust or Python, decided once
        self.find_hit = hit_finder()  # the same, remembering the texts it settled
        # what a recurring failure's lines are, read once: their traceback shapes, its wording
        self.shapes = Shapes()
        self.worded: Worded = Worded()
        # Rust sums the ordinary lines (logs/firstpass.py) until Python next reads one; the
        # last of them is read (`previous`) only if asked for.
        self.first_pass = first_pass()
        self.absorbed = False  # lines summed that Python has not taken
        self._previous: Line | None = None
        self._previous_raw: tuple[int, str] | None = None

    @property
    def previous(self) -> Line | None:
        """The line fed last (read now if the first pass summed it)."""
        if self._previous_raw is not None:
            self._previous = self.anatomize(*self._previous_raw)
            self._previous_raw = None
        return self._previous

    @previous.setter
    def previous(self, line: Line | None) -> None:
        self._previous, self._previous_raw = line, None

    def take_absorbed(self, sums: list[Absorbed] | None = None) -> None:
        """Apply what the first pass summed (`sums` when taken already) to the processes'
        states, in the order their lines were last seen (as feeding them one by one would)."""
        if not self.absorbed or self.first_pass is None:
            return
        self.absorbed = False
        for absorbed in self.first_pass.take() if sums is None else sums:
            self.state(absorbed[0]).absorb(*absorbed[1:])  # key, then absorb's arguments

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
        return self.feed_window(number, [raw])

    def feed_window(self, first_line: int, lines: list[str]) -> Iterator[LogError]:
        """`feed` each of `lines`, numbered from `first_line`. The first pass sums a line only
        while no message is open (it may continue one), and only of processes that fit beside
        those kept (no state is pushed out meanwhile). Its runs to the window's end are one
        call into Rust: past a line a message may open on (and the line after it, read here),
        they hold only if the message has ended by then; else they are dropped, and the lines
        are read here until it has, then summed by another call."""
        first, index = self.first_pass, 0
        while index < len(lines):
            runs: list[Run] = [(0, NOT_READ, None, None)]  # Python reads the line
            if first is not None and self.open is None:
                room = MAX_KEYS - len(self.keys)
                runs = first.absorb_runs(first_line + index, lines, index, room)
            past_message = False  # a line a message may open on was read in this call
            for count, fed, line, sums in runs:
                if past_message and count and self.open is not None:
                    last_count, last_fed = runs[-1][:2]
                    if first is not None and last_count and last_fed == ABSORBED:
                        first.take()  # what the runs dropped here left in Rust
                    break
                past_message = past_message or fed == NOT_READ
                number = first_line + index
                if count:
                    self._arrive(number)
                    self.number = number + count - 1
                    index += count
                    yield from self._absorbed(number, self.number, lines[index - 1])
                    if index == len(lines):
                        return
                    number += count
                self._arrive(number)
                yield from self._read(number, lines[index], fed, line, sums)
                index += 1

    def _arrive(self, number: int) -> None:
        """Line `number` is the next fed: note a gap before it (scan feeds the windows around
        hits only)."""
        if self.number is not None and number > self.number + 1:
            self.unread_from = self.number + 1
        self.number = number

    def _absorbed(self, start: int, end: int, raw: str) -> Iterator[LogError]:
        """Lines `start` to `end` (the last `raw`) were summed by the first pass: emit what
        feeding them one by one would have, at the lines it would have."""
        self.absorbed = True
        self._previous_raw = (end, raw)
        self.previous_hit = False
        if not self.pending:
            return
        yield from self._flush(start)
        # a failure falls due at the line past its copies' reach: flush at each such line in
        # order (nothing joins `pending` meanwhile), so they come out in the same order
        for due in sorted({p.last_line + DUP_WINDOW + 1 for p in self.pending}):
            if start < due <= end:
                yield from self._flush(due)

    def _read(
        self,
        number: int,
        raw: str,
        fed: int,
        line: Line | None = None,
        sums: list[Absorbed] | None = None,
    ) -> Iterator[LogError]:
        """Python reads line `number` (`fed`: what the first pass said of it; `line`: the line
        read already, `sums`: what the first pass summed, taken already)."""
        if self.absorbed:
            self.take_absorbed(sums)
        if line is None:
            line = self.anatomize(number, raw)
        consumed = False
        if self.open is not None:
            consumed = self._continue(line)
        if not consumed:
            # a line the first pass calls QUIET holds no form (its search found none there)
            shape = self.shapes.of(line.text, line.gutter)
            self.state(line.key).observe(line, fed == QUIET, shape)
            self.cuts.see(line)
            if fed == QUIET:
                self.previous_hit = False  # what `_detect` finds on a line no message is on
            else:
                self._detect(line)
        self.previous = line
        yield from self._flush(number)

    def skip_to(self, number: int) -> Iterator[LogError]:
        """No line below `number` that was not fed will be (a scan reads only the windows around
        hits, and its core has read past this one): the failures no line from `number` on can
        repeat are emitted now, as feeding that line would emit them, so that a lone failure
        does not wait for the next window (or the source's end) while the events after it are
        held. An open message stays open: the next line fed decides it."""
        if self.number is not None and number > self.number + 1:
            yield from self._flush(number)

    def close(self, number: int) -> Iterator[LogError]:
        self.take_absorbed()
        if self.open is not None:
            self._finalize(self.open)
            self.open = None
        yield from self._flush(number + DUP_WINDOW + 1)

    def _continue(self, line: Line) -> bool:
        """Extend the open error with `line` if it is the rest of it; else maybe close it."""
        candidate = self.open
        assert candidate is not None
        if candidate.provisional:
            return self._settle_fallback(candidate, line)
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
        if not may_close(candidate.hit, line.rest):
            candidate.stale = True  # read it again when it can have ended: no quadratic work
            return True
        reread(candidate, self.find_hit)
        if candidate.hit.closed:
            self._finalize(candidate)
            self.open = None
        return True

    def _detect(self, line: Line) -> None:
        """Start a candidate at an error message, else look for LM Studio output or a leak."""
        if self._frame_source(line):
            self.previous_hit = False
            return  # `raise Error("...")` under its frame: the code, not the error it raised
        hit = stated(line.text, self.find_hit(line.text, 0)) if line.text else None  # no `bail!(`
        candidate: Candidate | None = None
        if hit is not None and is_generic(hit.name):
            # a writer's own form a terminal wrap broke refines the statement left on this line
            candidate = self._wrapped(line)
            if candidate is not None and is_generic(candidate.hit.name):
                candidate = None
        if candidate is None and hit is not None:
            candidate = Candidate(
                line=line,
                text=line.text,
                last_line=line.number,
                hit=hit,
                provisional=is_fallback(hit.name),
            )
        elif candidate is None:
            candidate = self._wrapped(line)
        # (a provisional hit lets the next line try the wrap: `_continue`)
        self.previous_hit = candidate is not None and not candidate.provisional
        if candidate is not None:
            self._start(candidate)
        elif line.text[: len(_MODEL_OUTPUT)].lower() == _MODEL_OUTPUT:
            # (the head lowered alone: lower() maps each character to one but U+0130, whose
            # two are not ASCII)
            self._attach_model_output(line)
        elif "<|" in line.text:
            self._detect_leak(line)

    def _frame_source(self, line: Line) -> bool:
        """Whether `line` is the source line a traceback shows under a frame: indented deeper
        than the `File "...", line N` above it, or a `raise` statement (a paste may have lost
        the indentation)."""
        previous = self.previous
        if previous is None or line.prefix != previous.prefix or not FRAME.match(previous.text):
            return False
        if line.text.startswith("raise "):
            return True
        indent = len(line.rest) - len(line.rest.lstrip())
        return indent > len(previous.rest) - len(previous.rest.lstrip())

    def _settle_fallback(self, candidate: Candidate, line: Line) -> bool:
        """The fallback's hit, held open one line: where this line ends a known form a terminal
        wrap broke (`...remaining in mes` / `sage header: ...`), that form is the failure and
        this line its rest; else the hit stands as read and this line is read on its own."""
        self.open = None
        wrapped = self._wrapped(line)
        if wrapped is not None and not is_fallback(wrapped.hit.name):
            self.previous_hit = True
            self._start(wrapped)
            return True
        self._finalize(candidate)
        return False

    def _wrapped(self, line: Line) -> Candidate | None:
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
        found = stated(previous.text, self.find_hit(previous.text + line.rest, 0))
        if found is None or found.start >= len(previous.text):
            return None
        return Candidate(
            line=previous, text=previous.text + line.rest, last_line=line.number, hit=found
        )

    def _start(self, candidate: Candidate) -> None:
        """Finalize each closed message on the candidate's line; keep an open one open."""
        lead = self.previous
        if lead is not None and lead.prefix and not lead.text and lead is not candidate.line:
            candidate.lead = lead
        for _ in range(MAX_ERRORS_PER_LINE):
            if not candidate.hit.closed or candidate.provisional:
                if self.open is not None:  # one left open by an interleaved process
                    self._finalize(self.open)
                self.open = candidate
                return
            self._finalize(candidate)
            following = self.find_hit(candidate.text, candidate.hit.end)
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
            self._finalize(Candidate(line=line, text=line.text, last_line=line.number, hit=hit))

    # -- findings --

    def _finalize(self, candidate: Candidate) -> None:
        if candidate.stale:
            reread(candidate, self.find_hit)
        hit = candidate.hit
        if javascript_syntax_error(FORM[hit.name].kind, hit.token, candidate.text, hit.start):
            return  # a character JavaScript's parser stopped at: no Harmony token
        if written_by_caller(candidate.text, hit):
            return  # a user (system, tool) quoting the error in a request: asking about it
        line = candidate.line
        state = self.state(line.key)
        error = describe(
            line, candidate.hit, candidate.last_line, candidate.lead, state, self.worded
        )
        ended = state.ends_traceback(line)
        if ended:
            server = raise_server(error.server, state.traceback_server, error.raw)
            if server != error.server:
                error = replace(error, server=server)
            state.close_traceback()  # this error line ended it
        item = Pending(
            error=error,
            form=hit.name,
            key=line.key,
            norm="".join(error.message.split()).lower(),  # re.sub: 170 MB on 1 MiB
            last_line=candidate.last_line,
            rank=1 if hit.name == "bare_remainder" else _SHAPE_RANK.get(hit.shape, 1),
            traceback_start=error.span[0] if ended else None,
            request_id=request_id_of(candidate.text[: hit.start] + " " + candidate.text[hit.end :]),
            mention=is_mention(hit, candidate.text),
            field_line=line.text.startswith(('"', "'")),
        )
        self._place(item, state)
        state.saw_error(candidate.last_line)

    def _place(self, item: Pending, state: ProcessState) -> None:
        """Fold `item` into the failure it is another sighting of, or keep it as a new one.

        `_same_event` is asked only of the sightings near enough with a message that may be
        compatible: its first tests, which are pure, refuse every other one (in a log where
        each line is a failure of its own, all but a few of the recent and pending ones).
        `_place_reference` asks every sighting, newest first: the reference this equals."""
        if not item.mention:
            self._fold_mentions(item)
        line, norm = item.error.line, item.norm
        # `_same_event` holds only where this does: the messages are one a prefix of the other
        # (`compatible`), unless `item` is a mention (it folds into a failure it names, while a
        # failure never folds into a mention) or a leak's field line.
        loose = item.mention or item.error.kind == "markup_leak"
        near = [
            other
            for other in chain(self.recent, self.pending)
            if line - other.last_line <= DUP_WINDOW
            and (loose or other.norm.startswith(norm) or norm.startswith(other.norm))
        ]
        self._fold(item, state, near)

    def _place_reference(self, item: Pending, state: ProcessState) -> None:
        """`_place` as first written: every recent and pending sighting asked in turn."""
        if not item.mention:
            self._fold_mentions(item)
        self._fold(item, state, [*self.recent, *self.pending])

    def _fold_mentions(self, item: Pending) -> None:
        for mention in [p for p in self.pending if p.mention and self._names(p, item)]:
            self.pending.remove(mention)  # the failure a mention named nearby
            self._merge(item, mention)

    def _fold(self, item: Pending, state: ProcessState, sightings: list[Pending]) -> None:
        """Fold `item` into the newest of `sightings` (oldest first) it is another sighting
        of, or keep it as a new failure."""
        for other in reversed(sightings):
            if self._same_event(other, item, state):
                if not other.emitted:
                    self._merge(other, item)
                self.latest = other
                return
        self.pending.append(item)
        self.latest = item

    def _names(self, mention: Pending, item: Pending) -> bool:
        return (
            compatible(mention, item)
            and keys_agree(mention, item)
            and abs(item.error.line - mention.last_line) <= DUP_WINDOW
        )

    def _same_event(self, old: Pending, new: Pending, state: ProcessState) -> bool:
        """Whether `new` is another sighting of the failure `old`; see the module docstring."""
        if not compatible(old, new) or not keys_agree(old, new):
            return False
        if old.request_id and new.request_id and old.request_id != new.request_id:
            return False
        distance = new.error.line - old.last_line
        if distance > DUP_WINDOW or new.error.kind == "recovered_raw_output":
            return False  # the latter: logged once per request, never repeated
        if new.mention or old.mention:
            return new.mention  # a mention folds into a failure, never a failure into it
        if old.key == new.key and (state.reraises(old.last_line) or self._unread(old, new, state)):
            return True
        if old is not self.latest or self._request_between(old, new):
            return False
        if new.error.kind == "markup_leak":
            return old.field_line and new.field_line and distance <= FIELD_REACH
        start = new.traceback_start
        if start is not None and start > old.last_line:
            # `new` ended a traceback that began after `old`: `old` summed it up, or it is
            # another failure.
            return (
                old.traceback_start is None
                and old.rank <= _SUMMARY_RANK
                and self.cuts.apart(old.last_line, start) <= SUMMARY_REACH
                and old.key == new.key
                and not stamps_differ(old.error, new.error)
            )
        return self.cuts.apart(old.last_line, new.error.line) <= ECHO_REACH and new.rank > old.rank

    def _unread(self, old: Pending, new: Pending, state: ProcessState) -> bool:
        """Whether lines between a traceback's failure and `new` were not fed (the scan read
        windows around both, and its frames were too long to reach the chain marker), and
        all that was fed between them belongs to a traceback: the re-raise, as a reader of
        the whole text sees it."""
        line = new.error.line
        return (
            old.traceback_start is not None
            and self.unread_from is not None
            and old.last_line < self.unread_from < line
            and line - old.last_line <= TRACEBACK_REACH
            and state.record_before(line) <= old.last_line
            and state.episode_start <= old.error.line
        )

    def _request_between(self, old: Pending, new: Pending) -> bool:
        keys = {old.key, new.key}
        return any(self.state(key).requests_since(old.last_line) for key in keys)

    def _merge(self, old: Pending, new: Pending) -> None:
        """Keep one record of a failure seen twice: the fuller message, all the evidence."""
        keep, other = (new, old) if len(new.norm) > len(old.norm) else (old, new)
        old.error = with_facts(keep.error, other.error)
        old.norm, old.form = keep.norm, keep.form
        old.last_line = max(old.last_line, new.last_line)
        old.rank = max(old.rank, new.rank)
        old.request_id = old.request_id or new.request_id
        old.mention = old.mention and new.mention
        if old.traceback_start is None:
            old.traceback_start = new.traceback_start

    def _flush(self, number: int) -> Iterator[LogError]:
        """Emit the failures no later line can repeat any more (and the oldest, past a bound)."""
        if not self.pending:
            return
        self.pending.sort(key=_ERROR_LINE)
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
            guess = FORM[item.form].guess
            if item.error.server is None and guess is not None:
                # no sighting's line named a server: the one its words are most often from
                item.error = replace(item.error, server=guess)
            yield item.error


def declined() -> int:
    """Window lines (and texts) the Rust line reader and form search handed to Python so far
    in this process (`logs.lines.native_counts`, `logs.messages.native_hit_counts`)."""
    return sum(counts[1] for counts in (native_counts(), native_hit_counts()) if counts)
