"""`harmony-doctor decode`: token ids to text with every special token visible."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from harmony_doctor.cli.console import make_console, present, show
from harmony_doctor.cli.reading import InputArgs, takes_input
from harmony_doctor.errors import ExitCode


@takes_input
def decode(
    given: InputArgs,
    tokens: Annotated[bool, typer.Option("--tokens", "-t", help="One row per token.")] = False,
) -> int:
    """Token ids to text, with every special token visible."""
    from harmony_doctor.output import contract
    from harmony_doctor.output.layout import UNLIMITED
    from harmony_doctor.output.tokens import stream_text_view, token_table_blocks

    inp, label, vocab = given.tokens()
    if tokens and given.output == "text":  # a row per token, printed as the rows come
        console = make_console(given.color, given.width)
        width = None if console.width >= UNLIMITED else console.width
        for block in token_table_blocks(inp.tokens, vocab, width):
            if console.color_system is None and not console.is_terminal:
                sys.stdout.write(block.plain + "\n")  # what show() would print, 3x faster
            else:
                show(console, block, soft_wrap=True)
        return ExitCode.CLEAN
    present(
        given,
        lambda: contract.decode_record(inp, label, vocab),
        lambda: stream_text_view(inp.tokens, vocab),
        soft_wrap=True,
    )
    return ExitCode.CLEAN
