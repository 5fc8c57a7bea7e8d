"""`harmony-doctor decode`: token ids to text with every special token visible."""

from __future__ import annotations

from typing import Annotated

import typer

from harmony_doctor.cli.app import (
    Color,
    ColorOpt,
    Format,
    FormatOpt,
    InputArg,
    InputFormatOpt,
    InputFormatOption,
    RequestOpt,
    VocabOpt,
    app,
    emit,
    error_funnel,
    make_console,
    print_json,
    read_tokens,
)


@app.command()
def decode(
    source: InputArg = "-",
    tokens: Annotated[bool, typer.Option("--tokens", "-t", help="One row per token.")] = False,
    output: FormatOpt = Format.text,
    input_format: InputFormatOpt = InputFormatOption.auto,
    request: RequestOpt = None,
    vocab_path: VocabOpt = None,
    color: ColorOpt = Color.auto,
) -> None:
    """Token ids to text, with every special token visible."""
    with error_funnel():
        from harmony_doctor.output import contract as serialize
        from harmony_doctor.output.tokens import stream_text_view, token_table_view

        inp, label, vocab = read_tokens(source, input_format, request, vocab_path)
        if output is Format.json:
            print_json(serialize.decode_record(inp, label, vocab))
            return
        console = make_console(color)
        if tokens:
            emit(console, token_table_view(inp.tokens, vocab))
        else:
            emit(console, stream_text_view(inp.tokens, vocab), soft_wrap=True)
