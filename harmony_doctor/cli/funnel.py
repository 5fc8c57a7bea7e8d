"""The one error funnel: every command runs inside it, and it alone turns outcomes into exits.

A command is a plain function that returns an exit code. `command()` wraps it once, when the
app registers it: errors the user can act on become one escaped line on stderr and exit 2,
Ctrl-C, SIGTERM and SIGHUP exit 130, 143 and 129 (cli/signals.py), and anything else is a bug
and shows its traceback.

Standard output failing is an outcome too, wherever it happens (a command's output, --help,
the last flush): `guard_stdout` makes its write errors a `StdoutFailed` of their own, told
apart from any other OSError. A closed pipe ends quietly with 141 (128 + SIGPIPE, what the
shell reports for grep or ripgrep in the same place); any other write error (a full device,
an I/O error) is one line on stderr and exit 2.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import io
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, ParamSpec

import typer

from harmony_doctor.errors import DoctorError, ExitCode
from harmony_doctor.version import PROGRAM

if TYPE_CHECKING:
    from typing_extensions import Buffer  # collections.abc from Python 3.12

P = ParamSpec("P")


def fail(message: str) -> int:
    """Write an error as one safe line on stderr; the exit code that goes with it."""
    from harmony_doctor.output.escape import one_line  # its regexes compile on first message

    sys.stderr.write(f"{PROGRAM}: error: {one_line(message)}\n")
    return ExitCode.ERROR


def note(message: str) -> None:
    """A one-line notice on stderr (skipped inputs, warnings), escaped like errors."""
    from harmony_doctor.output.escape import one_line

    sys.stderr.write(f"{PROGRAM}: {one_line(message)}\n")


class StdoutFailed(Exception):
    """Standard output could not be written: a closed pipe, a full device, an I/O error."""

    def __init__(self, error: OSError) -> None:
        super().__init__(error.strerror or str(error))
        self.error = error


class _GuardedStdout(io.FileIO):
    """stdout's file descriptor, whose write errors are raised as StdoutFailed: neither typer,
    click nor rich take them for their own (click and rich exit 1 on a closed pipe), and no
    command's `except OSError` takes them for an input's."""

    refusal: OSError | None = None  # stdout was closed at start (`>&-`): every write fails

    def write(self, data: Buffer, /) -> int:
        try:
            if self.refusal is not None:
                raise self.refusal
            return super().write(data)
        except OSError as exc:
            raise StdoutFailed(exc) from None


def guard_stderr() -> None:
    """Started without a standard error (`2>&-`): what would be said there goes nowhere, and
    the exit code still says it (scan failed on `sys.stderr` being None, and exited 1).

    Descriptors 0, 1 and 2 closed at start are first held by /dev/null, each at its own
    number: else the next file opened takes the lowest free one, and code that writes to, or
    dup2()s over, "fd 2" hits it (report hung for ever with `<&- 2>&-`: polars' runtime had
    its epoll descriptor at 2 when the Parquet reader silenced stderr over it). sys.stdin and
    sys.stdout stay None (reading or writing them is the error it was); sys.stderr is fd 2."""
    for descriptor in (0, 1, 2):
        hold_descriptor(descriptor)
    if sys.stderr is None:
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115


def hold_descriptor(descriptor: int) -> None:
    """A standard descriptor that is not open is opened on /dev/null, at that very number."""
    try:
        os.fstat(descriptor)
    except OSError:
        opened = os.open(os.devnull, os.O_RDWR)
        if opened != descriptor:
            os.dup2(opened, descriptor)
            os.close(opened)


def guard_stdout() -> None:
    """Route sys.stdout through _GuardedStdout, with its encoding and buffering kept; nothing
    to do when it is no file descriptor (a test's StringIO) or is guarded already."""
    stream = sys.stdout
    if stream is None:  # started without a standard output: writing to it is the error
        guarded = _GuardedStdout(os.open(os.devnull, os.O_WRONLY), "w")
        guarded.refusal = OSError(errno.EBADF, os.strerror(errno.EBADF))
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(guarded), encoding="utf-8")
        return
    if not isinstance(stream, io.TextIOWrapper):
        return
    if isinstance(getattr(stream.buffer, "raw", None), _GuardedStdout):
        return
    try:
        descriptor = stream.fileno()
        stream.flush()
    except (OSError, ValueError):  # io.UnsupportedOperation is both
        return
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(_GuardedStdout(descriptor, "w", closefd=False)),
        encoding=stream.encoding,
        errors=stream.errors,
        line_buffering=stream.line_buffering,
        write_through=stream.write_through,
    )


def stdout_failed(exc: StdoutFailed) -> int:
    """The one exit for a failed standard output: 141 and nothing said for a closed pipe, else
    one line on stderr and exit 2. What is still buffered goes to /dev/null, so the flush at
    exit stays silent."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    guarded = getattr(getattr(sys.stdout, "buffer", None), "raw", None)
    if isinstance(guarded, _GuardedStdout):
        guarded.refusal = None
    if exc.error.errno == errno.EPIPE:
        return ExitCode.BROKEN_PIPE
    return fail(f"cannot write to standard output: {exc}")


def interrupted(exc: BaseException | None) -> int:
    """The one exit for SIGINT, SIGTERM and SIGHUP (cli/signals.py): one line, 128 + number."""
    from harmony_doctor.cli.signals import ending

    code, words = ending(exc)
    note(words)
    _said.append(code)
    return code


_said: list[int] = []  # the exits `interrupted` has said


def unsaid_interrupt(code: int) -> bool:
    """Whether exit `code` is an interrupt nobody reported: typer ends a KeyboardInterrupt
    raised outside a command's body (parsing, the context's close) with a silent 130."""
    return code == ExitCode.INTERRUPTED and not _said


def outcome(run: Callable[[], int]) -> int:
    """Run a command body and map what it raised to an exit code."""
    try:
        return run()
    except DoctorError as exc:
        return fail(str(exc))
    except KeyboardInterrupt as exc:
        return interrupted(exc)
    except StdoutFailed as exc:
        return stdout_failed(exc)


def command(function: Callable[P, int]) -> Callable[P, None]:
    """Wrap a command so that typer sees its signature and the funnel sees its outcome."""

    @functools.wraps(function)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        code = outcome(lambda: function(*args, **kwargs))
        if code != ExitCode.CLEAN:
            raise typer.Exit(code)

    return run
