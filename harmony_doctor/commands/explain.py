"""`harmony-doctor explain`: what broke, where the header went wrong, why, and the fix."""

from __future__ import annotations

from enum import StrEnum
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
    app,
    emit,
    error_funnel,
    make_console,
    print_json,
    read_input,
)
from harmony_doctor.errors import ExitCode


class RoleOption(StrEnum):
    assistant = "assistant"
    none = "none"


@app.command()
def explain(
    source: InputArg = "-",
    output: FormatOpt = Format.text,
    role: Annotated[
        RoleOption,
        typer.Option(
            "--role",
            help="assistant: a completion that starts inside an assistant header; "
            "none: the stream starts with <|start|> (prompt + completion).",
        ),
    ] = RoleOption.assistant,
    lenient: Annotated[
        bool, typer.Option("--lenient", help="Parse as openai-harmony with strict=False.")
    ] = False,
    window: Annotated[
        int, typer.Option("--window", min=0, help="Tokens shown around each point.")
    ] = 6,
    exit_zero: Annotated[
        bool, typer.Option("--exit-zero", help="Exit 0 even when something is found.")
    ] = False,
    input_format: InputFormatOpt = InputFormatOption.auto,
    request: RequestOpt = None,
    vocab_path: VocabOpt = None,
    color: ColorOpt = Color.auto,
) -> None:
    """What broke, the token where the header went wrong, why, and the fix."""
    with error_funnel():
        from harmony_doctor import ingest, report, serialize
        from harmony_doctor.diagnose import diagnose
        from harmony_doctor.vocab import load_vocab

        text, label = read_input(source)
        vocab = load_vocab(vocab_path)
        inp = ingest.parse_tokens(text, vocab.encode, input_format.value, request)
        result = diagnose(inp, vocab, role.value, strict=not lenient)
        if output is Format.json:
            print_json(serialize.explain_record(result, label, vocab))
        else:
            emit(make_console(color), report.render_explain(result, label, vocab, window))
    if result.findings and not exit_zero:
        raise typer.Exit(ExitCode.FINDINGS)
