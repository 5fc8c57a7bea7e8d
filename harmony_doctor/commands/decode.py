"""`harmony-doctor decode`: token ids to text with every special token visible."""

from __future__ import annotations

from typing import Annotated

import typer

from harmony_doctor.cli import (
    Color,
    ColorOpt,
    Format,
    FormatOpt,
    InputArg,
    InputFormatOpt,
    InputFormatOption,
    RequestOpt,
    VocabOpt,
    _console,
    _errors,
    _print_json,
    _read_input,
    app,
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
    with _errors():
        from harmony_doctor import ingest, report, serialize
        from harmony_doctor.vocab import load_vocab

        text, label = _read_input(source)
        vocab = load_vocab(vocab_path)
        inp = ingest.parse_tokens(text, vocab.encode, input_format.value, request)
        if output is Format.json:
            _print_json(serialize.decode_record(inp, label, vocab))
            return
        console = _console(color)
        if tokens:
            console.print(report.render_token_table(inp.tokens, vocab))
        else:
            console.print(report.render_stream_text(inp.tokens, vocab), soft_wrap=True)
