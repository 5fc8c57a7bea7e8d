"""`harmony-doctor recover`: what strict, lenient and our salvage would have returned."""

from __future__ import annotations

from typing import Annotated

import typer

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
    from harmony_doctor.streams import recover as stream_recover

    inp, label, vocab = given.tokens()
    result = stream_recover.recover(inp, vocab.ready_to_judge(), role)
    strict, lenient = result.strict.messages, result.lenient.messages
    present(
        given,
        lambda: contract.recover_record(result, label),
        lambda: recover_view(
            result, stream_recover.received(strict), stream_recover.received(lenient), label, vocab
        ),
    )
    broken = result.strict.error is not None
    return ExitCode.FINDINGS if broken and not exit_zero else ExitCode.CLEAN
