"""A logged summary and the raise of the traceback it sums up, seen apart: one failure. The
extractor (logs/extract.py) folds them when they are adjacent; this joins them across the
lines a log puts between (other processes' records, a cut, a client's copy above a server's
traceback). scan (scan/findings.py) and explain (evidence/combine.py) both count by it."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable
from typing import Final, Protocol, TypeVar

from harmony_doctor.lazy_regex import Pattern

# How many lines below a sighting the other sighting of its failure may be.
JOIN_WINDOW: Final = 200


class Logged(Protocol):
    """What joining reads of a logged error (a scan's ScanEvent, explain's view of a LogError)."""

    @property
    def line(self) -> int: ...
    @property
    def traceback_line(self) -> int | None: ...  # the head of the traceback it is the raise of
    @property
    def code(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def token_id(self) -> int | None: ...
    @property
    def pid(self) -> int | None: ...
    @property
    def request_id(self) -> str | None: ...
    @property
    def timestamp(self) -> str | None: ...
    @property
    def message(self) -> str: ...


_L = TypeVar("_L", bound=Logged)


def join_sightings(
    logged: list[tuple[int, int, int, _L]],
    start: int | None,
    cut: int | None,
    joined: Callable[[_L, _L], _L],
) -> None:
    """Join, in `logged` (logged errors as (line, kind, arrival, error), sorted), each that
    lies from line `start` to below `cut` (None: no bound) with the nearest later sighting of
    the same failure within JOIN_WINDOW lines not joined yet (`one_failure`): the first keeps
    its place, `joined(first, other)` stands for both, and the other leaves. One for one, in
    the order of their lines, so that a summary takes the raise of its own traceback, and two
    requests failing alike stay two.

    An error is compared only with the errors of its window that can be its other sighting (a
    raise for a summary, a summary for a raise, of the same code, kind and token): a log of
    many failures alike costs one look each, not one per failure in the window."""
    begin = 0 if start is None else bisect_left(logged, start, key=_line)
    stop = len(logged) if cut is None else bisect_left(logged, cut, key=_line, lo=begin)
    if begin >= stop:
        return
    reach = bisect_right(logged, logged[stop - 1][0] + JOIN_WINDOW, key=_line, lo=stop)
    shapes: dict[tuple[str, str, int | None, bool], list[int]] = {}
    for position in range(begin, reach):
        shapes.setdefault(_shape(logged[position][3]), []).append(position)
    gone: set[int] = set()
    for position in range(begin, stop):
        if position in gone:
            continue
        line, kind, arrival, error = logged[position]
        code, what, token, raised = _shape(error)
        others = shapes.get((code, what, token, not raised), [])
        index = bisect_right(others, line, key=lambda p: logged[p][0])
        for other in others[index:]:
            if logged[other][0] > line + JOIN_WINDOW:
                break
            if other not in gone and one_failure(error, logged[other][3]):
                gone.add(other)
                logged[position] = (line, kind, arrival, joined(error, logged[other][3]))
                break
    for position in sorted(gone, reverse=True):
        del logged[position]


def _line(item: tuple[int, int, int, Logged]) -> int:
    return item[0]


def _shape(error: Logged) -> tuple[str, str, int | None, bool]:
    """What two sightings of one failure share: code, kind and token; and whether it is a raise
    (its other sighting is a summary, and the other way round)."""
    return error.code, error.kind, error.token_id, error.traceback_line is not None


def one_failure(first: Logged, later: Logged) -> bool:
    """Whether `later`, logged after `first`, is another sighting of its failure: a logged
    summary (a record that states the error) and the raise of the traceback it sums up, in
    either order, never two summaries nor two raises (two requests failing alike). They
    report the same failure (code, token, the message one a prefix of the other), in the same
    process, request and second wherever both say."""
    if (first.traceback_line is None) == (later.traceback_line is None):
        return False
    summary, raised = (first, later) if first.traceback_line is None else (later, first)
    if raised.traceback_line is not None and raised.traceback_line <= summary.line:
        return False  # the summary lies in the raise's own traceback
    if (first.code, first.kind, first.token_id) != (later.code, later.kind, later.token_id):
        return False
    for mine, theirs in (
        (first.pid, later.pid),
        (first.request_id, later.request_id),
        (first.timestamp, later.timestamp),
    ):
        if mine is not None and theirs is not None and mine != theirs:
            return False
    one, other = bare(first.message), bare(later.message)
    return bool(one and other) and (one.startswith(other) or other.startswith(one))


_BLANKS: Final = Pattern(r"\s+")


def bare(message: str) -> str:
    """A message as two sightings of it compare: without blanks (wraps), in lower case."""
    return _BLANKS.sub("", message).lower()
