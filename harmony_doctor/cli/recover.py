"""`harmony-doctor recover`: what strict, lenient and our salvage would have returned."""

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
    RoleOpt,
    VocabOpt,
)
from harmony_doctor.cli.reading import read_tokens
from harmony_doctor.errors import ExitCode


def recover(
    source: InputArg = "-",
    output: FormatOpt = "text",
    role: RoleOpt = "assistant",
    exit_zero: Annotated[
        bool, typer.Option("--exit-zero", help="Exit 0 even when the stream is broken.")
    ] = False,
    input_format: InputFormatOpt = "auto",
    request: RequestOpt = None,
    vocab_path: VocabOpt = None,
    color: ColorOpt = "auto",
) -> int:
    """Strict, lenient and salvaged content side by side, each piece with its token span."""
    from harmony_doctor import salvage as recovering
    from harmony_doctor.output import contract
    from harmony_doctor.output.recover_view import recover_view

    inp, label, vocab = read_tokens(source, input_format, request, vocab_path)
    result = recovering.recover(inp, vocab, role)
    if output == "json":
        print_json(contract.recover_record(result, label))
    else:
        strict = recovering.received(result.strict.messages)
        lenient = recovering.received(result.lenient.messages)
        show(make_console(color), recover_view(result, strict, lenient, label, vocab))
    broken = result.strict.error is not None
    return ExitCode.FINDINGS if broken and not exit_zero else ExitCode.CLEAN
