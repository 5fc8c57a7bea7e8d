"""One source's findings (logged errors, replayed completions) -> ScanEvent records."""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import datetime

from harmony_doctor.choices import ParseRole
from harmony_doctor.faults.catalogue import FORM, QUOTING_KINDS
from harmony_doctor.faults.rules import RULES
from harmony_doctor.harmony.vocab import Vocab
from harmony_doctor.inputs.text_lines import bounded
from harmony_doctor.inputs.timestamps import parse_timestamp
from harmony_doctor.logs.families import ENGINE_KINDS, shows_another_family
from harmony_doctor.logs.summaries import bare as _bare
from harmony_doctor.logs.summaries import join_sightings
from harmony_doctor.models import Diagnosis, LoggedFailure, ScanEvent, Server, TokenInput
from harmony_doctor.models.core import with_facts
from harmony_doctor.scan import patterns
from harmony_doctor.scan.found import Place, SourceScan
from harmony_doctor.scan.records import ScanOptions
from harmony_doctor.streams.clean import CleanStreams
from harmony_doctor.streams.diagnose import diagnose


def source_events(
    found: SourceScan,
    vocab: Callable[[], Vocab],
    options: ScanOptions,
    clean: CleanStreams | None,
) -> Iterator[ScanEvent]:
    """The events of one source: its logged errors, then what replaying its completions finds.

    `clean`: the verdicts the scan of this source already gave (the same object, so the
    completions it kept are not replayed again); None with --verify-clean.
    """
    for error, hit in found.errors:
        yield _log_event(error, hit, found, vocab)
    for event in found.replayed:
        yield replace(event, file=found.label, server=found.server)
    for inp, hit in found.completions:
        yield from _replayed(inp, hit, found.label, found.server, vocab, options.role, clean)
    for why, request_id, hit in found.rejected:
        yield _rejected_event(why, request_id, hit, found)


class EventStream:
    """A source's events as the scan finds them, handed on in line order as each becomes final:
    the events `merge_duplicates(list(source_events(found, ...)))` gives at the end of the
    source, the same ones in the same order, without holding them to the end.

    The scan appends its findings to `found` (errors, replayed, completions, rejected) and calls
    `advance(floor)` with the lowest line any later finding can be on. A logged error more than
    MERGE_WINDOW lines below it has every sighting it can be joined with (`join_sightings`:
    its JOIN_WINDOW is no wider, tests/scan hold it);
    what lies MERGE_WINDOW lines below that can no longer merge with anything to come (a
    replay folds only into errors already joined), and is handed on.
    `close()` hands on the rest. `server`, while the source names none yet, is left None: the
    caller fills it with the source's once read to its end (found.server), as source_events
    would have."""

    def __init__(
        self,
        found: SourceScan,
        vocab: Callable[[], Vocab],
        options: ScanOptions,
        clean: CleanStreams | None,
    ) -> None:
        self.found = found
        self.vocab = vocab
        self.options = options
        self.clean = clean
        self.arrived = 0  # findings taken from `found`, in the order source_events reads them
        # (line, kind, arrival, event) of events with source "log" (rejected ids too), not final
        self.logged: list[tuple[int, int, int, ScanEvent]] = []
        self.replays: list[tuple[int, int, int, ScanEvent]] = []  # (line, kind, arrival, event)
        # decided, waiting for their turn: ((line, 0 replay fault / 1 other, order...), event)
        self.ready: list[tuple[tuple[int, int, int, int, int], ScanEvent]] = []
        self.joined_to: int | None = None  # logged errors below this line are joined
        # (line, pid, bare message) of the engine parse failures over another family's markup
        # not yet far behind (`_over_another_family`)
        self.families: list[_Family] = []

    def advance(self, floor: int) -> list[ScanEvent]:
        """The events final now that no later finding lies below line `floor`, in order."""
        self._take()
        return self._settle(floor - MERGE_WINDOW)

    def close(self) -> list[ScanEvent]:
        """The source read to its end: every event left, in order."""
        self._take()
        return self._settle(None)

    def _take(self) -> None:
        """Move what the scan found since the last call out of `found`, as events."""
        found = self.found
        for error, hit in found.errors:
            self._add(0, _log_event(error, hit, found, self.vocab))
        for event in found.replayed:
            self._add(1, replace(event, file=found.label, server=found.server))
        for inp, hit in found.completions:
            replayed = _replayed(
                inp, hit, found.label, found.server, self.vocab, self.options.role, self.clean
            )
            for event in replayed:
                self._add(2, event)
        for why, request_id, hit in found.rejected:
            self._add(3, _rejected_event(why, request_id, hit, found))
        found.errors, found.replayed, found.completions, found.rejected = [], [], [], []

    def _add(self, kind: int, event: ScanEvent) -> None:
        self.arrived += 1
        if _another_family(event):
            insort(self.families, (event.line, event.pid, _bare(event.message)), key=_first)
        if event.source == "replay" and event.severity == "error":
            self.replays.append((event.line, kind, self.arrived, event))
        elif event.source == "log":
            insort(self.logged, (event.line, kind, self.arrived, event), key=lambda t: t[:3])
        else:
            self.ready.append(((event.line, 1, kind, self.arrived, 0), event))

    def _settle(self, joined: int | None) -> list[ScanEvent]:
        """Join the logged sightings below `joined` (None: all), then decide the replayed
        faults MERGE_WINDOW lines below that, in merge_duplicates' order, and hand on every
        decided event below it."""
        _drop_other_families(self.logged, self.families, self.joined_to, joined)
        join_sightings(self.logged, self.joined_to, joined, _joined)
        self.joined_to = joined
        if joined is not None:  # what no error left to judge can be near
            del self.families[: bisect_left(self.families, joined - MERGE_WINDOW, key=_first)]
        cut = joined - MERGE_WINDOW if joined is not None else None
        self.replays.sort(key=lambda t: t[:3])
        done = 0
        for line, kind, arrival, event in self.replays:
            if cut is not None and line >= cut:
                break
            done += 1
            start = bisect_left(self.logged, line, key=lambda t: t[0])
            end = bisect_right(self.logged, line + MERGE_WINDOW, lo=start, key=lambda t: t[0])
            index = next((i for i in range(start, end) if _reports(self.logged[i][3], event)), None)
            order = (line, kind, arrival)
            if index is None:
                self.ready.append(((line, 0, *order), event))
                continue
            logged = self.logged.pop(index)[3]
            self.ready.append(((logged.line, 0, *order), _folded(event, logged)))
        del self.replays[:done]
        final = len(self.logged)
        if cut is not None:
            final = bisect_left(self.logged, cut, key=lambda t: t[0])
        for line, kind, arrival, event in self.logged[:final]:
            self.ready.append(((line, 1, kind, arrival, 0), event))
        del self.logged[:final]
        self.ready.sort(key=lambda t: t[0])
        due = len(self.ready)
        if cut is not None:
            due = bisect_left(self.ready, cut, key=lambda t: t[0][0])
        out = [event for _, event in self.ready[:due]]
        del self.ready[:due]
        return out


def _rejected_event(why: str, request_id: str | None, hit: Place, found: SourceScan) -> ScanEvent:
    """A logged completion whose ids openai-harmony rejects: the catalogue's rejected_ids form."""
    form = FORM["rejected_ids"]
    assert form.code is not None
    return ScanEvent(
        file=found.label,
        line=hit.line,
        timestamp=_iso(hit.timestamp),
        pid=hit.pid,
        server=found.server,
        harmony_version=None,
        kind=form.kind,
        code=form.code,
        severity=RULES[form.code].severity,
        pattern=patterns.pattern_of(form.kind),
        token_id=None,
        token_text=None,
        header_remainder=None,
        message=f"logged completion with ids openai-harmony rejects: {why}",
        request_id=request_id,
        source="log",
    )


MERGE_WINDOW = 200  # lines from a completion's last log line to the traceback logged for it


def merge_duplicates(events: list[ScanEvent]) -> list[ScanEvent]:
    """Count each failure once: a logged summary and its traceback's raise are one event
    (logs/summaries.py `join_sightings`, as explain counts); then a logged error that is the
    server's report of a replayed completion's fault is folded into the replay, which takes the
    line that carries the error.

    They are one failure when they agree on kind and token, on the process and the request id
    wherever both are known, and the error was logged after the completion, within
    MERGE_WINDOW lines (the traceback that follows it). One for one: each completion takes
    the nearest such error not taken yet, completions in the order of their lines.
    """
    events = _joined_sightings(events)
    logged = sorted((e for e in events if e.source == "log"), key=lambda e: e.line)
    lines = [e.line for e in logged]
    taken: set[int] = set()
    out: list[ScanEvent] = []
    for event in sorted(events, key=lambda e: e.line):
        if event.source != "replay" or event.severity != "error":
            continue
        # Only errors from the completion's line to MERGE_WINDOW lines after it can report it:
        # look there, not through every error (a log dense with both would be quadratic).
        start = bisect_left(lines, event.line)
        end = bisect_right(lines, event.line + MERGE_WINDOW, lo=start)
        index = next(
            (i for i in range(start, end) if i not in taken and _reports(logged[i], event)),
            None,
        )
        if index is None:
            out.append(event)
            continue
        taken.add(index)
        out.append(_folded(event, logged[index]))
    return _with_the_rest(out, events, {id(logged[i]) for i in taken})


def _joined_sightings(events: list[ScanEvent]) -> list[ScanEvent]:
    """`events` without the parse failures over another family's markup, and with each
    logged summary and its traceback's raise joined (logs/summaries.py `join_sightings`)."""
    logged = sorted(
        ((e.line, 0, index, e) for index, e in enumerate(events) if e.source == "log"),
        key=lambda t: t[:3],
    )
    families = sorted(
        ((e.line, e.pid, _bare(e.message)) for e in events if _another_family(e)), key=_first
    )
    _drop_other_families(logged, families, None, None)
    join_sightings(logged, None, None, _joined)
    kept = {index: event for _, _, index, event in logged}
    return [
        kept.get(index, e) for index, e in enumerate(events) if e.source != "log" or index in kept
    ]


_Family = tuple[int, int | None, str]


def _first(family: _Family) -> int:
    return family[0]


def _another_family(event: ScanEvent) -> bool:
    """Whether `event` is an engine's parse failure over another model family's tool-call
    markup: its own message shows that markup, and nothing of Harmony."""
    return (
        event.source == "log" and event.kind in ENGINE_KINDS and shows_another_family(event.message)
    )


def _drop_other_families(
    logged: list[tuple[int, int, int, ScanEvent]],
    families: list[_Family],
    start: int | None,
    cut: int | None,
) -> None:
    """Take out of `logged` (as in `join_sightings`) the errors from line `start` to below
    `cut` that are engine parse failures over another family's output: those whose message
    shows it (`families`: their lines, processes and messages), and the copies of one without
    its payload (the client's copy of the error, a summary), of the same process within
    MERGE_WINDOW lines. Explain judges the whole paste; a scan judges what each failure and
    its neighbours show, holding no more than its window."""
    if not families:
        return
    index = 0 if start is None else bisect_left(logged, start, key=lambda t: t[0])
    while index < len(logged) and (cut is None or logged[index][0] < cut):
        if _over_another_family(logged[index][3], families):
            del logged[index]
        else:
            index += 1


def _over_another_family(event: ScanEvent, families: list[_Family]) -> bool:
    if event.source != "log" or event.kind not in ENGINE_KINDS:
        return False
    start = bisect_left(families, event.line - MERGE_WINDOW, key=_first)
    end = bisect_right(families, event.line + MERGE_WINDOW, lo=start, key=_first)
    if start == end:
        return False
    bare = _bare(event.message)
    return any(
        (pid is None or event.pid is None or pid == event.pid) and _copies(bare, message)
        for _, pid, message in families[start:end]
    )


def _copies(short: str, message: str) -> bool:
    """Whether `short` is `message` without what follows a word of it (`at pos 1` is not
    `at pos 12: ...` cut)."""
    return message.startswith(short) and not message[len(short) : len(short) + 1].isalnum()


def _joined(first: ScanEvent, later: ScanEvent) -> ScanEvent:
    """One event of a failure's two sightings: the first's line and words, with what the
    other adds; the server its traceback's frames name before the summary's."""
    raised = later if later.traceback_line is not None else first
    summary = first if raised is later else later
    return replace(
        with_facts(first, later),
        server=raised.server or summary.server,
        request_id=first.request_id or later.request_id,
        traceback_line=raised.traceback_line,
    )


def _folded(replayed: ScanEvent, logged: ScanEvent) -> ScanEvent:
    """The replay of a fault with the logged error that reports it folded in: the error's
    line, time (where it has one), Harmony version and message."""
    return replace(
        replayed,
        line=logged.line,
        timestamp=logged.timestamp or replayed.timestamp,
        harmony_version=logged.harmony_version,
        message=logged.message,
    )


def _with_the_rest(
    out: list[ScanEvent], events: list[ScanEvent], folded: set[int]
) -> list[ScanEvent]:
    """`out` (the replayed faults) and every other event not folded into one, by line."""
    rest = [
        e
        for e in events
        if id(e) not in folded and not (e.source == "replay" and e.severity == "error")
    ]
    return sorted([*out, *rest], key=lambda e: e.line)


def _reports(logged: ScanEvent, replayed: ScanEvent) -> bool:
    """Whether `logged` can be the server's report of the fault `replayed` found."""
    if logged.kind != replayed.kind or logged.token_id != replayed.token_id:
        return False
    for mine, theirs in ((logged.pid, replayed.pid), (logged.request_id, replayed.request_id)):
        if mine is not None and theirs is not None and mine != theirs:
            return False
    return 0 <= logged.line - replayed.line <= MERGE_WINDOW


def completion_diagnosis(
    vocab: Callable[[], Vocab], options: ScanOptions, clean: CleanStreams | None
) -> Callable[[TokenInput, Place], list[ScanEvent]]:
    """Diagnose a kept completion when the scan keeps it (scan_source's `diagnose`): its
    events, with `file` and `server` set later (source_events), take far less than its ids.
    A day of failing completions is then held as events, not as every completion's ids."""

    def events(inp: TokenInput, hit: Place) -> list[ScanEvent]:
        return list(_replayed(inp, hit, "", None, vocab, options.role, clean))

    return events


def _replayed(
    inp: TokenInput,
    hit: Place,
    label: str,
    server: Server | None,
    vocab: Callable[[], Vocab],
    role: ParseRole,
    clean: CleanStreams | None,
) -> Iterator[ScanEvent]:
    """What diagnosing one completion finds; `clean` skips streams our replay finds clean
    (None: --verify-clean, every stream goes to openai-harmony)."""
    if clean is not None and clean(inp.tokens):
        return
    v = vocab()
    yield from diagnosis_events(inp, diagnose(inp, v, role), v, label, hit, server)


def diagnosis_events(
    inp: TokenInput,
    result: Diagnosis,
    vocab: Vocab,
    label: str,
    place: Place,
    server: Server | None,
) -> Iterator[ScanEvent]:
    """The events of one diagnosed stream (a logged completion, or a whole token file)."""
    for finding in result.findings:
        raise_index = finding.raise_index
        token = None
        if finding.kind == "unexpected_token" and raise_index is not None:
            token = inp.tokens[raise_index] if raise_index < len(inp.tokens) else None
        remainder = None
        if finding.kind == "header_leftover" and finding.span is not None:
            remainder = vocab.decode(inp.tokens[finding.span[0] : finding.span[1]])
        yield ScanEvent(
            file=label,
            line=place.line,
            timestamp=_iso(place.timestamp),
            pid=place.pid,
            server=server,
            harmony_version=None,
            kind=finding.kind,
            code=finding.code,
            severity=finding.severity,
            pattern=patterns.pattern_of(finding.kind, token, remainder),
            token_id=token,
            token_text=vocab.decode([token]) if token is not None else None,
            header_remainder=remainder,
            message=finding.harmony_error or finding.title,
            request_id=inp.request_id,
            origin_index=finding.origin_index,
            raise_index=raise_index,
            source="replay",
        )


def _iso(stamp: datetime | None) -> str | None:
    return stamp.isoformat() if stamp is not None else None


# An event's message is written whole up to this many characters, past it as its head and tail
# with the count between (a line of a mebibyte held ten times in every table took 60 MiB):
# event files are read back cut to event_batches.MAX_CELL, which this keeps under.
MAX_EVENT_TEXT = 16 * 1024


def _log_event(
    error: LoggedFailure, hit: Place, found: SourceScan, vocab: Callable[[], Vocab]
) -> ScanEvent:
    stamp = parse_timestamp(error.timestamp, found.reference) if error.timestamp else None
    return ScanEvent(
        file=found.label,
        line=error.line,
        timestamp=_iso(stamp or hit.timestamp),
        pid=error.pid if error.pid is not None else hit.pid,
        server=error.server or found.server,
        harmony_version=error.harmony_version,
        kind=error.kind,
        code=error.code,
        severity=error.severity,
        pattern=patterns.pattern_of(
            error.kind, error.token, error.header_remainder, error.role_word
        ),
        token_id=error.token,
        token_text=vocab().decode([error.token]) if error.token is not None else None,
        header_remainder=error.header_remainder,
        message=bounded(error.message, MAX_EVENT_TEXT, error.message_cut),
        source="log",
        traceback_line=error.traceback_line,
    )


# A pattern's parts: special tokens, placeholders (`<name>`, `<prose>`), and other words.
_PATTERN_PART = re.compile(r"<\|[a-z_0-9]+\|>|<[a-z]+>|[^\s<]+")
_KNOWN_ROLES = frozenset({"assistant", "user", "system", "developer", "tool", "json"})


def redact(event: ScanEvent) -> ScanEvent:
    """Everything the model wrote (header remainders, roles, tool calls, leaked content, the
    token harmony choked on), single words included, replaced by a short stable hash; special
    tokens and the structure of patterns stay readable."""

    def digest(text: str | None) -> str | None:
        if text is None:
            return None
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:12]

    message = event.message
    if event.header_remainder and event.header_remainder in message:
        message = message.replace(event.header_remainder, digest(event.header_remainder) or "")
    elif event.kind in QUOTING_KINDS:
        message = _redact_quoted(message, digest)
    token_text = event.token_text
    if token_text is not None and not (token_text.startswith("<|") and token_text.endswith("|>")):
        token_text = digest(token_text)
    return replace(
        event,
        header_remainder=digest(event.header_remainder),
        message=message,
        token_text=token_text,
        pattern=_PATTERN_PART.sub(_model_word, event.pattern),
    )


def _model_word(match: re.Match[str]) -> str:
    """A part of a pattern, kept if it is structure: a special token or placeholder, a kind,
    a token id, a known role, `to=`; any other word the model wrote becomes `<w>`."""
    part = match.group()
    structure = part.startswith("<") or part.isdigit() or part.endswith("=")
    if structure or part in _KNOWN_ROLES or (part.replace("_", "").isalpha() and "_" in part):
        return part
    repeated = [role for role in _KNOWN_ROLES if part == role * (len(part) // len(role))]
    return part if repeated else "<w>"


_QUOTED_TEXT = re.compile(r'(Some\(|\[|raw=|: )(".*"|\'.*\'|.*)$', re.S)


def _redact_quoted(message: str, digest: Callable[[str | None], str | None]) -> str:
    match = _QUOTED_TEXT.search(message)
    if match is None:
        return message
    return message[: match.start(2)] + (digest(match.group(2)) or "")
