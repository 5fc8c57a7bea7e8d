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


def main() -> NoReturn:
    """Load the command line with the signals answered, run it (cli/app.py `main`, which
    answers SIGTERM and SIGHUP its own way while it runs and puts `_at_once` back after), and
    answer them again until the process ends."""
    answered: list[int] = []
    for number in _EARLY:
        if signal.getsignal(number) in (signal.SIG_DFL, signal.default_int_handler):
            signal.signal(number, _at_once)
            answered.append(number)
    from harmony_doctor.cli.app import main as run

    if signal.SIGINT in answered:  # during the run, Ctrl-C unwinds it (KeyboardInterrupt)
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        run()
    except KeyboardInterrupt:  # after the run's own answer, before the line below
        _at_once(signal.SIGINT, None)
    finally:
        for loaded in answered:
            signal.signal(loaded, _at_once)


def _at_once(number: int, frame: FrameType | None) -> NoReturn:
    """Nothing is being read or written (the run has not started, or has ended and flushed its
    output), and no worker runs: say it, and end at once."""
    from harmony_doctor.cli.signals import Signalled, ending

    code, words = ending(Signalled(number))
    sys.stderr.write(f"{PROGRAM}: {words}\n")
    sys.stderr.flush()
    os._exit(code)
