"""`harmony-doctor render`: the exact Harmony prompt of an OpenAI-style chat request."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from harmony_doctor.cli.app import (
    Color,
    ColorOpt,
    Format,
    FormatOpt,
    VocabOpt,
    app,
    emit,
    error_funnel,
    make_console,
    print_json,
    read_input,
)
from harmony_doctor.errors import ExitCode


class StyleOption(StrEnum):
    harmony = "harmony"
    passthrough = "passthrough"


@app.command()
def render(
    source: Annotated[
        str,
        typer.Argument(
            metavar="CHAT.json",
            help="Chat request (messages, tools, reasoning_effort); '-' reads standard input.",
            show_default=False,
        ),
    ] = "-",
    output: FormatOpt = Format.text,
    style: Annotated[
        StyleOption,
        typer.Option(
            "--style",
            help="harmony: as openai-harmony documents it; passthrough: roles copied as "
            "given, no channels (early vLLM 0.10.x).",
        ),
    ] = StyleOption.harmony,
    date: Annotated[
        str | None,
        typer.Option("--date", help="Conversation start date in the system message (YYYY-MM-DD)."),
    ] = None,
    keep_analysis: Annotated[
        bool,
        typer.Option(
            "--keep-analysis", help="Keep earlier turns' analysis (auto_drop_analysis off)."
        ),
    ] = False,
    tokens: Annotated[bool, typer.Option("--tokens", "-t", help="One row per token.")] = False,
    exit_zero: Annotated[
        bool, typer.Option("--exit-zero", help="Exit 0 even when there are warnings.")
    ] = False,
    vocab_path: VocabOpt = None,
    color: ColorOpt = Color.auto,
) -> None:
    """Render a chat with openai-harmony: the prompt tokens, ending with <|start|>assistant."""
    with error_funnel():
        from harmony_doctor.harmony.vocab import load_vocab
        from harmony_doctor.output import contract as serialize
        from harmony_doctor.output.prompt_view import prompt_view
        from harmony_doctor.output.tokens import token_table_view
        from harmony_doctor.prompt import load_chat, render_chat

        text, label = read_input(source)
        vocab = load_vocab(vocab_path)
        chat = load_chat(text)
        prompt = render_chat(chat, vocab, style.value, date, keep_analysis)
        if output is Format.json:
            print_json(serialize.render_record(prompt, label))
        else:
            console = make_console(color)
            if tokens:
                emit(console, token_table_view(prompt.tokens, vocab))
            emit(console, prompt_view(prompt, label, vocab), soft_wrap=True)
    if prompt.warnings and not exit_zero:
        raise typer.Exit(ExitCode.FINDINGS)
