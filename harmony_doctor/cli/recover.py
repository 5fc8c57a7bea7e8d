"""`harmony-doctor recover`: what strict, lenient and our salvage would have returned."""

from __future__ import annotations

from typing import Annotated

import typer

import harmony_doctor as hd
from harmony_doctor import advanced
from harmony_doctor.cli.console import present
from harmony_doctor.cli.options import RoleOpt
from harmony_doctor.cli.reading import InputArgs, takes_input
from harmony_doctor.errors import ExitCode


@takes_input
def recover(
    given: InputArgs,
    role: RoleOpt = "assistant",
    exit_zero: Annotated[
        bool, typer.Option("--exit-zero", help="Exit 0 even when the stream is broken.")
    ] = False,
) -> int:
    """Strict, lenient and salvaged content side by side, each piece with its token span."""
    from harmony_doctor.output import contract
    from harmony_doctor.output.recover_view import recover_view

    inp, label, vocab = given.tokens()
    result = hd.recover(inp, vocab, role=role)
    strict, lenient = result.strict.messages, result.lenient.messages
    present(
        given,
        lambda: contract.recover_record(result, label),
        lambda: recover_view(
            result, advanced.received(strict), advanced.received(lenient), label, vocab
        ),
    )
    broken = result.strict.error is not None
    return ExitCode.FINDINGS if broken and not exit_zero else ExitCode.CLEAN
