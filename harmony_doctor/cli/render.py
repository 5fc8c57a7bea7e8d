"""`harmony-doctor render`: the exact Harmony prompt of an OpenAI-style chat request."""

from __future__ import annotations

from typing import Annotated

import typer

import harmony_doctor as hd
from harmony_doctor import advanced
from harmony_doctor.choices import Style
from harmony_doctor.cli.console import make_console, print_json, show
from harmony_doctor.cli.options import ColorOpt, FormatOpt, VocabOpt, WidthOpt
from harmony_doctor.errors import ExitCode


def render(
    source: Annotated[
        str,
        typer.Argument(
            metavar="CHAT.json",
            help="Chat request (messages, tools, reasoning_effort); '-' reads standard input.",
            show_default=False,
        ),
    ] = "-",
    output: FormatOpt = "text",
    style: Annotated[
        Style,
        typer.Option(
            "--style",
            help="harmony: as openai-harmony documents it; passthrough: roles copied as "
            "given, no channels (early vLLM 0.10.x).",
        ),
    ] = "harmony",
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
    color: ColorOpt = "auto",
    width: WidthOpt = None,
) -> int:
    """Render a chat with openai-harmony: the prompt tokens, ending with <|start|>assistant."""
    from harmony_doctor.output import contract
    from harmony_doctor.output.prompt_view import prompt_view
    from harmony_doctor.output.tokens import token_table_view

    text, label = advanced.read_text(source)
    vocab = hd.load_vocab(vocab_path)
    prompt = hd.render(text, vocab, style=style, date=date, keep_analysis=keep_analysis)
    if output == "json":
        print_json(contract.render_record(prompt, label))
    else:
        console = make_console(color, width)
        if tokens:
            show(console, token_table_view(prompt.tokens, vocab))
        show(console, prompt_view(prompt, label, vocab), soft_wrap=True)
    return ExitCode.FINDINGS if prompt.warnings and not exit_zero else ExitCode.CLEAN
