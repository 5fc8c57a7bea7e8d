"""The one error funnel: every command runs inside it, and it alone turns outcomes into exits.

A command is a plain function that returns an exit code. `command()` wraps it once, when the
app registers it: errors the user can act on become one escaped line on stderr and exit 2,
Ctrl-C exits 130, a closed pipe on stdout ends quietly with 141 (128 + SIGPIPE, what the shell
reports for grep or ripgrep in the same place), and anything else is a bug and shows its
traceback.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Callable
from typing import ParamSpec

import typer

from harmony_doctor.errors import DoctorError, ExitCode

P = ParamSpec("P")
PROGRAM = "harmony-doctor"


def fail(message: str) -> int:
    """Write an error as one safe line on stderr; the exit code that goes with it."""
    from harmony_doctor.output.escape import one_line  # its regexes compile on first message

    sys.stderr.write(f"{PROGRAM}: error: {one_line(message)}\n")
    return ExitCode.ERROR


def note(message: str) -> None:
    """A one-line notice on stderr (skipped inputs, warnings), escaped like errors."""
    from harmony_doctor.output.escape import one_line

    sys.stderr.write(f"{PROGRAM}: {one_line(message)}\n")


def quiet_stdout() -> int:
    """stdout is a closed pipe: drop what is still buffered so the exit flush stays silent."""
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return ExitCode.BROKEN_PIPE


def outcome(run: Callable[[], int]) -> int:
    """Run a command body and map what it raised to an exit code."""
    try:
        return run()
    except DoctorError as exc:
        return fail(str(exc))
    except KeyboardInterrupt:
        note("interrupted")
        return ExitCode.INTERRUPTED
    except BrokenPipeError:
        return quiet_stdout()


def command(function: Callable[P, int]) -> Callable[P, None]:
    """Wrap a command so that typer sees its signature and the funnel sees its outcome."""

    @functools.wraps(function)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        code = outcome(lambda: function(*args, **kwargs))
        if code != ExitCode.CLEAN:
            raise typer.Exit(code)

    return run
