"""Exit codes and every exception class of the package; the CLI maps them to exit codes."""

from __future__ import annotations

from enum import IntEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harmony_doctor.models import ErrorKind


class ExitCode(IntEnum):
    CLEAN = 0
    FINDINGS = 1
    ERROR = 2
    INTERRUPTED = 130
    BROKEN_PIPE = 141  # stdout closed early (`| head`): 128 + SIGPIPE, as the shell reports


class DoctorError(Exception):
    """An error the user can act on; the CLI prints it on one line and exits 2."""


class InputError(DoctorError):
    """The input could not be read or understood."""


class Undecodable(InputError):
    """The bytes are not text in any encoding the tool reads."""


class OutputError(DoctorError):
    """An output file cannot be written where the user asked (bad path, full disk, permission)."""


class VocabError(DoctorError):
    """The vocabulary file is missing, unreadable or corrupted."""


class GrammarEngineError(DoctorError):
    """llguidance is missing or refused a grammar."""


class HeaderError(Exception):
    """openai-harmony would reject this header; `kind` says how, `detail` with what.

    Internal to the replay (it mirrors the parser's own header errors); never reaches a user.
    """

    def __init__(self, kind: ErrorKind, detail: str) -> None:
        super().__init__(detail)
        self.kind: ErrorKind = kind
        self.detail = detail
