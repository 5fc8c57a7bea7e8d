"""Exit codes and the small exception tree that the CLI maps to them."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    CLEAN = 0
    FINDINGS = 1
    ERROR = 2
    INTERRUPTED = 130


class DoctorError(Exception):
    """An error the user can act on; the CLI prints it on one line and exits 2."""


class InputError(DoctorError):
    """The input could not be read or understood."""


class VocabError(DoctorError):
    """The vocabulary file is missing, unreadable or corrupted."""
