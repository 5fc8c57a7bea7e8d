"""logs/summaries.py: a logged summary and its traceback's raise, joined as scan and explain
count them; exactly what the straightforward loop gives, with work linear in the errors."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harmony_doctor.logs import summaries
from harmony_doctor.logs.summaries import JOIN_WINDOW, Logged, join_sightings, one_failure


@dataclass(frozen=True)
class Seen:
    """A logged error as joining reads it, with a name to follow it by."""

    name: str
    line: int
    traceback_line: int | None
    code: str
    kind: str
    token_id: int | None
    pid: int | None
    request_id: str | None
    timestamp: str | None
    message: str


def _joined(first: Seen, other: Seen) -> Seen:
    return replace(first, name=f"({first.name}+{other.name})")


def _reference(
    logged: list[tuple[int, int, int, Seen]],
    start: int | None,
    cut: int | None,
    joined: Callable[[Seen, Seen], Seen],
) -> None:
    """The join as scan first wrote it (scan/findings.py `_join_sightings`): every error of the
    window below each one asked in turn."""
    index = 0 if start is None else bisect_left(logged, start, key=lambda t: t[0])
    while index < len(logged) and (cut is None or logged[index][0] < cut):
        line, kind, arrival, event = logged[index]
        first = bisect_right(logged, line, lo=index, key=lambda t: t[0])
        end = bisect_right(logged, line + JOIN_WINDOW, lo=first, key=lambda t: t[0])
        other = next((k for k in range(first, end) if one_failure(event, logged[k][3])), None)
        if other is not None:
            logged[index] = (line, kind, arrival, joined(event, logged.pop(other)[3]))
        index += 1


_SEEN = st.builds(
    lambda line, tb, code, token, pid, stamp, message: (line, tb, code, token, pid, stamp, message),
    # lines crowded near 0, JOIN_WINDOW and twice it: the window's edges are reached
    st.one_of(*(st.integers(at, at + 12) for at in (1, JOIN_WINDOW - 6, 2 * JOIN_WINDOW - 6))),
    st.one_of(st.none(), st.integers(1, 8)),  # lines above: where its traceback began
    st.sampled_from(["HD102", "HD102", "HD111"]),
    st.sampled_from([None, None, 200002]),
    st.sampled_from([None, 1, 1, 2]),
    st.sampled_from([None, None, "10:00:00", "10:00:01"]),
    st.sampled_from(["unexpected tokens", "unexpected  tokens remaining", "Unknown role", ""]),
)


def _logged(
    rows: Sequence[tuple[int, int | None, str, int | None, int | None, str | None, str]],
) -> list[tuple[int, int, int, Seen]]:
    logged = []
    for arrival, (line, above, code, token, pid, stamp, message) in enumerate(rows):
        tb = None if above is None else max(1, line - above)
        seen = Seen(str(arrival), line, tb, code, "k", token, pid, None, stamp, message)
        logged.append((line, 0, arrival, seen))
    logged.sort(key=lambda t: t[:3])
    return logged


@settings(max_examples=400, deadline=None)
@given(st.lists(_SEEN, max_size=40), st.lists(st.integers(1, 3 * JOIN_WINDOW), max_size=4))
def test_the_join_is_exactly_the_straightforward_ones(
    rows: Sequence[tuple[int, int | None, str, int | None, int | None, str | None, str]],
    cuts: list[int],
) -> None:
    # whole, and a window at a time as a scan's EventStream calls it
    bounds = [None, *sorted(set(cuts)), None]
    for steps in ([(None, None)], list(pairwise(bounds))):
        mine, theirs = _logged(rows), _logged(rows)
        for start, cut in steps:
            join_sightings(mine, start, cut, _joined)
            _reference(theirs, start, cut, _joined)
        assert mine == theirs


def test_a_summary_joins_the_raise_of_its_own_traceback_and_two_summaries_stay_two() -> None:
    rows = [
        (10, None, "HD102", None, 1, None, "unexpected tokens"),  # a summary
        (20, None, "HD102", None, 1, None, "unexpected tokens"),  # the next request's
        (30, 8, "HD102", None, 1, None, "unexpected tokens remaining"),  # the first's raise
        (40, 8, "HD102", None, 1, None, "unexpected tokens remaining"),  # the second's
    ]
    logged = _logged(rows)
    join_sightings(logged, None, None, _joined)
    assert [(line, seen.name) for line, _, _, seen in logged] == [(10, "(0+2)"), (20, "(1+3)")]


def _comparisons(
    rows: Sequence[tuple[int, int | None, str, int | None, int | None, str | None, str]],
) -> int:
    """How many times joining `rows` asks `one_failure`."""
    calls = 0

    def counted(first: Logged, later: Logged) -> bool:
        nonlocal calls
        calls += 1
        return one_failure(first, later)

    logged = _logged(rows)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(summaries, "one_failure", counted)
        join_sightings(logged, None, None, _joined)
    assert len(logged) == len(rows)  # none of them one failure: their stamps differ
    return calls


def _failures(
    count: int, raises: bool
) -> list[tuple[int, int | None, str, int | None, int | None, str | None, str]]:
    """`count` failures alike (one code), a line each, told apart by their stamps: summaries
    only, or summaries and raises in turn."""
    return [
        (n + 10, 3 if raises and n % 2 else None, "HD102", None, 1, f"10:{n:05d}", f"tokens {n}")
        for n in range(count)
    ]


def test_failures_alike_are_compared_only_with_what_can_be_their_other_sighting() -> None:
    """Each error was compared with every error of the window below it (scan: 200 each) or
    every error kept (explain's first fold: 8,000 failures, 32 million comparisons)."""
    assert _comparisons(_failures(4 * JOIN_WINDOW, raises=False)) == 0  # no raise to join
    # what each block of 800 more errors adds stays the same: linear (a square would grow)
    made = [_comparisons(_failures(n * JOIN_WINDOW, raises=True)) for n in (4, 8, 12)]
    assert made[0] > 0 and made[2] - made[1] <= made[1] - made[0], made
