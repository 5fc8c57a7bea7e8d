"""`harmony-doctor decode`: token ids to text with every special token visible."""

from __future__ import annotations

from typing import Annotated

import typer

from harmony_doctor.cli.console import present
from harmony_doctor.cli.reading import InputArgs, takes_input
from harmony_doctor.errors import ExitCode


@takes_input
def decode(
    given: InputArgs,
    tokens: Annotated[bool, typer.Option("--tokens", "-t", help="One row per token.")] = False,
) -> int:
    """Token ids to text, with every special token visible."""
    from harmony_doctor.output import contract
    from harmony_doctor.output.tokens import stream_text_view, token_table_view

    inp, label, vocab = given.tokens()
    view = token_table_view if tokens else stream_text_view
    present(
        given,
        lambda: contract.decode_record(inp, label, vocab),
        lambda: view(inp.tokens, vocab),
        soft_wrap=not tokens,
    )
    return ExitCode.CLEAN
