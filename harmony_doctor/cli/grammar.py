"""`harmony-doctor grammar`: a guided-decoding grammar for a whole Harmony completion."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, get_args

import typer

import harmony_doctor as hd
from harmony_doctor import advanced
from harmony_doctor.choices import CONTENT_TYPES, Channel, ContentType, Dialect
from harmony_doctor.cli.options import VocabOpt
from harmony_doctor.errors import ExitCode, InputError

# typer reads lists of choices only as enums: these are built from the core's own tuples.
ChannelChoice = StrEnum("ChannelChoice", {c: c for c in get_args(Channel)})  # type: ignore[misc]
ContentTypeChoice = StrEnum("ContentTypeChoice", {c: c for c in (*CONTENT_TYPES, "none")})  # type: ignore[misc]


def grammar(
    fmt: Annotated[
        Dialect,
        typer.Option(
            "--format",
            "-f",
            help="lark: llguidance (vLLM, SGLang), special tokens as ids; "
            "gbnf: llama.cpp / xgrammar, text level.",
        ),
    ] = "lark",
    channels: Annotated[
        list[ChannelChoice] | None,
        typer.Option("--channel", help="Allowed channel (repeat; default: all three)."),
    ] = None,
    tools: Annotated[
        list[str] | None,
        typer.Option(
            "--tool",
            help="Declared tool (repeat): NAME means functions.NAME; dotted names as written. "
            "Limits recipients to declared tools and tool calls to the commentary channel.",
        ),
    ] = None,
    tools_from: Annotated[
        Path | None,
        typer.Option("--tools-from", help="Chat request JSON whose 'tools' are declared."),
    ] = None,
    content_types: Annotated[
        list[ContentTypeChoice] | None,
        typer.Option(
            "--content-type",
            help="Allowed content type (repeat): json (' json'), constrain "
            "('<|constrain|>json'), none (no content type at all). Default: json, constrain.",
        ),
    ] = None,
    require_return: Annotated[
        bool,
        typer.Option("--require-return", help="A final answer must end in <|return|>."),
    ] = False,
    require_call: Annotated[
        bool, typer.Option("--require-call", help="A tool call must end in <|call|>.")
    ] = False,
    check: Annotated[
        bool,
        typer.Option("--check", help="Compile the grammar with llguidance before printing it."),
    ] = False,
    vocab_path: VocabOpt = None,
) -> int:
    """A grammar for the whole completion (every channel), for guided decoding."""
    text = hd.grammar(
        fmt,
        channels=[c.value for c in channels] if channels else None,
        tools=tools,
        tools_from=tools_from,
        content_types=_content_types(content_types),
        require_return=require_return,
        require_call=require_call,
    )
    if check:
        advanced.validate_grammar(text, fmt, vocab_path)
    from harmony_doctor.output.escape import visible  # not loaded for --help

    # Through the one escaper, as every output: the tool names in its comments and literals
    # are checked printable already, so this changes nothing unless a check is ever missed.
    sys.stdout.write(visible(text))
    return ExitCode.CLEAN


def _content_types(values: list[ContentTypeChoice] | None) -> tuple[ContentType, ...]:
    if not values:
        return CONTENT_TYPES
    chosen = {v.value for v in values}
    if "none" in chosen:
        if len(chosen) > 1:
            raise InputError("--content-type none cannot be combined with other content types")
        return ()
    return tuple(t for t in CONTENT_TYPES if t in chosen)
