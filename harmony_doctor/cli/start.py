"""The command's first and last step (console script and `python -m harmony_doctor`): a signal
that lands while the command line loads, or after the run has answered (its outputs written,
the process on its way out), ends the run as one landing during it does, with its one line and
128 + its number (cli/signals.py), not with a traceback from whatever was importing, nor
silently by the signal's default action."""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType
from typing import NoReturn

from harmony_doctor.version import PROGRAM

_EARLY = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
ALLOCATOR_ENV = "_RJEM_MALLOC_CONF"  # the jemalloc polars is built with reads it at load


def main() -> NoReturn:
    """Load the command line with the signals answered, run it (cli/app.py `main`, which
    answers SIGTERM and SIGHUP its own way while it runs and puts `_at_once` back after), and
    answer them again until the process ends."""
    answered: list[int] = []
    for number in _EARLY:
        if signal.getsignal(number) in (signal.SIG_DFL, signal.default_int_handler):
            signal.signal(number, _at_once)
            answered.append(number)
    # polars' allocator (jemalloc) hands freed pages back at once, not after ten seconds: a scan
    # of 10,000 small files peaked 24 MiB lower at the same CPU (issue 34); set before polars
    # loads, and inherited by scan's workers. A value the user set is kept.
    os.environ.setdefault(ALLOCATOR_ENV, "dirty_decay_ms:0,muzzy_decay_ms:0")
    from harmony_doctor.cli.app import main as run

    if signal.SIGINT in answered:  # during the run, Ctrl-C unwinds it (KeyboardInterrupt)
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        run()
    except KeyboardInterrupt:  # after the run's own answer, before the line below
        _at_once(signal.SIGINT, None)
        sys.exit(_ended())  # a repeat: the run a signal ended exits as it said
    finally:
        # After a run a signal ended, the rest of its burst is ignored until the process is
        # gone: SIG_IGN, not a handler, which Python's finalization would put back to the
        # default (a repeat landing then would end the process before its exit handlers).
        after = _at_once if _ended() is None else signal.SIG_IGN
        for loaded in _EARLY if after is signal.SIG_IGN else answered:
            signal.signal(loaded, after)


def _at_once(number: int, frame: FrameType | None) -> None:
    """Nothing is being read or written (the run has not started, or has ended and flushed its
    output), and no worker runs: say it, and end at once; unless a signal ended the run, which
    has said so: a repeat of the burst (cli/signals.py) is ignored, and the process ends as
    it was ending."""
    if _ended() is not None:
        return
    from harmony_doctor.cli.signals import Signalled, ending

    code, words = ending(Signalled(number))
    sys.stderr.write(f"{PROGRAM}: {words}\n")
    sys.stderr.flush()
    os._exit(code)


def _ended() -> int | None:
    """The exit code of the run a signal ended in this process (cli/signals.py), or None."""
    signals = sys.modules.get("harmony_doctor.cli.signals")
    if signals is None or not signals.ended():
        return None
    return int(signals.ending(signals.received())[0])
