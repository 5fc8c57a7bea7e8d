"""The command's first step (console script and `python -m harmony_doctor`): a signal that
lands while the command line loads ends the run as one landing later does, with its one line
and 128 + its number (cli/signals.py), not with a traceback from whatever was importing."""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType
from typing import Any, NoReturn

from harmony_doctor.version import PROGRAM

_EARLY = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def main() -> NoReturn:
    """Load the command line with the signals answered, then run it (cli/app.py `main`)."""
    replaced: dict[int, Any] = {}
    for number in _EARLY:
        if signal.getsignal(number) in (signal.SIG_DFL, signal.default_int_handler):
            replaced[number] = signal.signal(number, _while_loading)
    from harmony_doctor.cli.app import main as run

    for loaded, handler in replaced.items():
        signal.signal(loaded, handler)
    run()


def _while_loading(number: int, frame: FrameType | None) -> None:
    """Nothing is read or written yet, and no worker started: say it, and end at once."""
    from harmony_doctor.cli.signals import Signalled, ending

    code, words = ending(Signalled(number))
    sys.stderr.write(f"{PROGRAM}: {words}\n")
    sys.stderr.flush()
    os._exit(code)
