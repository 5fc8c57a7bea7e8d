"""The signals that end a run: SIGINT, SIGTERM and SIGHUP, each through the funnel's one exit.

Python turns SIGINT into KeyboardInterrupt; SIGTERM and SIGHUP would end the process on the
spot, leaving worker processes, the multiprocessing resource tracker and temporary files
behind. `install` makes them raise `Signalled` (a KeyboardInterrupt too), so that every
`finally` and `except BaseException` that cleans up (the scan's pool stops its workers, an
export removes its temporary file) runs as it does for Ctrl-C. `ending` gives the exit: one line
and 128 + the signal's number (130 SIGINT, 143 SIGTERM, 129 SIGHUP), as a shell reports a
program the signal ended. Ctrl-C is answered the same way (a KeyboardInterrupt that names its
signal).

The rule for repeats: once one of these signals has started the run's end, the others and any
repeat are ignored until the process is gone. `timeout` and systemd send SIGTERM to the
whole process group, often more than once, and a shell's Ctrl-C may be pressed again; a second
signal acted on halfway through the cleanup would leave the workers, the spill, a `.part`
file and the pool's semaphores behind (a leaked-semaphore warning on stderr). SIGKILL is what
ends a run that will not end.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

HANDLED = (signal.SIGTERM, signal.SIGHUP)
ENDING = (signal.SIGINT, *HANDLED)  # the signals that end a run: one is acted on, once
_WORDS = {
    signal.SIGINT: "interrupted",
    signal.SIGTERM: "terminated (SIGTERM)",
    signal.SIGHUP: "hung up (SIGHUP)",
}


class Signalled(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived: the run unwinds as for Ctrl-C, then exits 128 + number."""

    def __init__(self, number: int) -> None:
        super().__init__(signal.Signals(number).name)
        self.number = number


def install() -> dict[int, Any]:
    """SIGINT, SIGTERM and SIGHUP raise Signalled in the main thread (where they are ignored,
    as under nohup, they stay ignored; a handler set outside Python is left alone). Returns
    the handlers replaced (the default, or the entry point's own: cli/start.py), for
    `restore`."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    replaced: dict[int, Any] = {}
    for number in ENDING:
        if signal.getsignal(number) not in (signal.SIG_IGN, None):
            replaced[number] = signal.signal(number, _raise)
    return replaced


def restore(replaced: dict[int, Any]) -> None:
    """Put back what `install` replaced (a run inside a longer-lived process, as in tests)."""
    for number, handler in replaced.items():
        signal.signal(number, handler)


@contextlib.contextmanager
def answered() -> Iterator[None]:
    """SIGTERM and SIGHUP answered (`install`) while the body runs."""
    replaced = install()
    try:
        yield
    finally:
        restore(replaced)


def _raise(number: int, frame: FrameType | None) -> None:
    for other in ENDING:  # the run is ending: repeats are ignored while it cleans up
        if signal.getsignal(other) is _raise:
            signal.signal(other, signal.SIG_IGN)
    _received.append(number)
    raise Signalled(number)


_received: list[int] = []  # the signals `_raise` turned into Signalled, in this process


def ended() -> bool:
    """Whether a signal has ended a run in this process (the entry point then ignores the
    repeats that land after the run's handlers are put back: cli/start.py)."""
    return bool(_received)


def received() -> Signalled | None:
    """The signal that ended the run, where an interrupt was swallowed on its way out (typer
    turns a KeyboardInterrupt raised outside a command's body into a silent exit 130)."""
    return Signalled(_received[-1]) if _received else None


def ending(exc: BaseException | None) -> tuple[int, str]:
    """(exit code, one line) for an interrupt: Signalled, KeyboardInterrupt (SIGINT), or an
    interrupt that names its signal (an export's own handler raises one with "SIGTERM")."""
    number = getattr(exc, "number", None)
    if number is None and exc is not None and exc.args and isinstance(exc.args[0], str):
        number = signal.Signals.__members__.get(exc.args[0])
    if number not in _WORDS:
        number = signal.SIGINT
    return 128 + int(number), _WORDS[signal.Signals(number)]
