"""`harmony-doctor decode`: token ids to text with every special token visible."""

from __future__ import annotations

from typing import Annotated

import typer

from harmony_doctor.cli.console import make_console, print_json, show
from harmony_doctor.cli.options import (
    ColorOpt,
    FormatOpt,
    InputArg,
    InputFormatOpt,
    RequestOpt,
    VocabOpt,
)
from harmony_doctor.cli.reading import read_tokens
from harmony_doctor.errors import ExitCode


def decode(
    source: InputArg = "-",
    tokens: Annotated[bool, typer.Option("--tokens", "-t", help="One row per token.")] = False,
    output: FormatOpt = "text",
    input_format: InputFormatOpt = "auto",
    request: RequestOpt = None,
    vocab_path: VocabOpt = None,
    color: ColorOpt = "auto",
) -> int:
    """Token ids to text, with every special token visible."""
    from harmony_doctor.output import contract
    from harmony_doctor.output.tokens import stream_text_view, token_table_view

    inp, label, vocab = read_tokens(source, input_format, request, vocab_path)
    if output == "json":
        print_json(contract.decode_record(inp, label, vocab))
        return ExitCode.CLEAN
    console = make_console(color)
    if tokens:
        show(console, token_table_view(inp.tokens, vocab))
    else:
        show(console, stream_text_view(inp.tokens, vocab), soft_wrap=True)
    return ExitCode.CLEAN
