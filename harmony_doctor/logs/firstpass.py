"""A failure window's first pass in Rust (native/src/firstpass.rs): the ordinary lines summed.

Most lines of a failure window (access lines, request records, throughput lines) change
nothing in the extractor but their process's counters: `ProcessState.observe` counts them and
keeps their time, pid, server, request start and record line; no message starts, continues or
ends on them. Rust reads such a line with the reader made of `logs/lines.py`'s and
`logs/servers.py`'s patterns, the catalogue's forms (`logs/messages.py`) and
`logs/process.py`'s traceback shapes, and sums it per process (`absorb`). One `absorb_runs`
call reads a window's lines to its end: each run of ordinary lines ends at a line Python
reads, handed back taken apart with the sums Python takes (`take`) before it reads that line
and applies with `ProcessState.absorb`. Of the other lines, those Rust read where no message
begins (QUIET: a traceback's head, frames and source lines) skip the extractor's search for
one. Past a line a message may begin on, the runs are summed as though the message had ended
by the line after it (handed back too): Python applies them only if it had, else drops them
and reads on as the reference does. Every other line (and every line while a message is
open) goes through Python as before: the extractor without a first pass is the reference it
is tested equal to (tests/logs/test_first_pass.py)."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Final, Protocol, cast

from harmony_doctor.logs.lines import (
    FRAME_SOURCE,
    MODEL_OUTPUT,
    Line,
    anatomy_patterns,
    native_reader,
)
from harmony_doctor.logs.messages import form_patterns
from harmony_doctor.logs.process import ordinary_shapes
from harmony_doctor.native import native_for, native_module

if TYPE_CHECKING:
    from harmony_doctor.models import Server

# Per process, in the order last seen: key, lines, timestamp and its line, pid, server and its
# line, the last request's line, the last record line and the one before it (when both are
# among the lines summed).
Absorbed = tuple[
    str,
    int,
    "str | None",
    "int | None",
    "int | None",
    "Server | None",
    "int | None",
    "int | None",
    "int | None",
    "int | None",
]

# One run of `FirstPass.absorb_runs`: lines summed, what was said of the line it ends at, that
# line read (or None), the sums to take before reading it (or None).
Run = tuple[int, int, "Line | None", "list[Absorbed] | None"]


# What `FirstPass.absorb` did with a line: left it to Python, which may find a message on it;
# summed it; left it to Python, but no message (nor a leak, LM Studio's output, the rest of a
# wrapped line) begins on it, so the extractor need not look for one.
NOT_READ: Final = 0
ABSORBED: Final = 1
QUIET: Final = 2


class FirstPass(Protocol):
    """The Rust first pass (`harmony_doctor._native.FirstPass`)."""

    def absorb(self, number: int, raw: str, room: int) -> int:
        """Sum line `number` if ordinary and of one of at most `room` processes summed
        (ABSORBED); else NOT_READ or QUIET."""
        ...

    def absorb_runs(self, number: int, lines: list[str], start: int, room: int) -> list[Run]:
        """`absorb` over `lines[start:]` (line `number` first) in runs to the end, each ending
        at a line that is not ABSORBED: how many were, what `absorb` said of that line, its
        `Line` (read by the line anatomy the first pass was made with, else None) and the sums
        to take before reading it (None: nothing summed); (how many, ABSORBED, None, None)
        when no line is left. The line after a NOT_READ one is handed back too, never summed,
        as a run of none (QUIET or NOT_READ): the runs after it hold only if no message is
        open by then (else Python drops them, and `take`s what the last left here). The
        processes summed and those of the lines handed back count once each against `room`
        (as new to Python), so a run may sum fewer than a call made after Python read those
        lines would; a line it does not sum comes back QUIET, which Python reads as the
        reference does."""
        ...

    def take(self) -> list[Absorbed]:
        """The sums since the last call, per process in the order last seen."""
        ...

    def fresh(self) -> FirstPass:
        """A first pass of its own sharing the compiled patterns."""
        ...


def first_pass(native: bool | None = None) -> FirstPass | None:
    """A first pass of the caller's own, or None: the extension not built or not allowed
    (`native_for(native)`), or a pattern without an exact translation."""
    if not native_for(native):
        return None
    made = _made()
    return None if made is None else made.fresh()


@cache
def _made() -> FirstPass | None:
    module = native_module()
    patterns = anatomy_patterns()
    forms = form_patterns()
    traceback, request = ordinary_shapes()
    if module is None or patterns is None or forms is None or traceback.flags or request.flags:
        return None
    try:
        made = module.FirstPass(
            **patterns,
            forms=forms,
            traceback=traceback.pattern,
            request=request.pattern,
            model_output=MODEL_OUTPUT,
            frame_source=FRAME_SOURCE,
            anatomy=native_reader(),
        )
    except ValueError:
        return None
    return cast(FirstPass, made)
