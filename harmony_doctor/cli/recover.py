"""`harmony-doctor recover`: what strict, lenient and our salvage would have returned."""

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
from harmony_doctor.cli.explain import RoleOption
from harmony_doctor.errors import ExitCode

RoleOpt = Annotated[
    RoleOption,
    typer.Option(
        "--role",
        help="assistant: a completion that starts inside an assistant header; "
        "none: the stream starts with <|start|>.",
    ),
]


@app.command()
def recover(
    source: InputArg = "-",
    output: FormatOpt = Format.text,
    role: RoleOpt = RoleOption.assistant,
    exit_zero: Annotated[
        bool, typer.Option("--exit-zero", help="Exit 0 even when the stream is broken.")
    ] = False,
    input_format: InputFormatOpt = InputFormatOption.auto,
    request: RequestOpt = None,
    vocab_path: VocabOpt = None,
    color: ColorOpt = Color.auto,
) -> None:
    """Strict, lenient and salvaged content side by side, each piece with its token span."""
    with error_funnel():
        from harmony_doctor.output import contract as serialize
        from harmony_doctor.output.recover_view import recover_view
        from harmony_doctor.recover import received
        from harmony_doctor.recover import recover as run_recover

        inp, label, vocab = read_tokens(source, input_format, request, vocab_path)
        result = run_recover(inp, vocab, role.value)
        if output is Format.json:
            print_json(serialize.recover_record(result, label))
        else:
            strict, lenient = received(result.strict.messages), received(result.lenient.messages)
            emit(make_console(color), recover_view(result, strict, lenient, label, vocab))
    if result.strict.error is not None and not exit_zero:
        raise typer.Exit(ExitCode.FINDINGS)
