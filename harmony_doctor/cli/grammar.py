"""`harmony-doctor grammar`: a guided-decoding grammar for a whole Harmony completion."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from harmony_doctor.cli.app import VocabOpt, app, error_funnel

if TYPE_CHECKING:
    from rich.text import Text

    from harmony_doctor.grammar import ContentType, GrammarRun
    from harmony_doctor.harmony.vocab import Vocab
    from harmony_doctor.models import Diagnosis, LogError


class GrammarFormat(StrEnum):
    lark = "lark"
    gbnf = "gbnf"


class ChannelOption(StrEnum):
    analysis = "analysis"
    commentary = "commentary"
    final = "final"


class ContentTypeOption(StrEnum):
    json = "json"
    constrain = "constrain"
    none = "none"


@app.command()
def grammar(
    fmt: Annotated[
        GrammarFormat,
        typer.Option(
            "--format",
            "-f",
            help="lark: llguidance (vLLM, SGLang), special tokens as ids; "
            "gbnf: llama.cpp / xgrammar, text level.",
        ),
    ] = GrammarFormat.lark,
    channels: Annotated[
        list[ChannelOption] | None,
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
        list[ContentTypeOption] | None,
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
) -> None:
    """A grammar for the whole completion (every channel), for guided decoding."""
    with error_funnel():
        from harmony_doctor import __version__
        from harmony_doctor import grammar as g

        options = g.GrammarOptions(
            channels=tuple(c.value for c in channels) if channels else g.GrammarOptions.channels,
            tools=_declared_tools(tools, tools_from),
            content_types=_content_types(content_types),
            require_return=require_return,
            require_call=require_call,
        )
        text = g.emit(options, fmt.value, __version__)
        if check:
            from harmony_doctor.harmony.vocab import load_vocab

            g.validate(text, fmt.value, load_vocab(vocab_path))
        sys.stdout.write(text)


def _declared_tools(names: list[str] | None, path: Path | None) -> tuple[str, ...] | None:
    from harmony_doctor import grammar as g
    from harmony_doctor.cli.app import read_input

    if names is None and path is None:
        return None
    declared = [g.recipient_for(n) for n in names or ()]
    if path is not None:
        text, label = read_input(str(path))
        declared += g.tools_from_request(text, label)
    return g.narrow_tools(declared)


def _content_types(values: list[ContentTypeOption] | None) -> tuple[ContentType, ...]:
    from harmony_doctor import grammar as g

    if not values:
        return g.CONTENT_TYPES
    if ContentTypeOption.none in values:
        if len(set(values)) > 1:
            from harmony_doctor.errors import InputError

            raise InputError("--content-type none cannot be combined with other content types")
        return ()
    return tuple(t for t in g.CONTENT_TYPES if t in {v.value for v in values})


@dataclass(frozen=True)
class GuidedCheck:
    """`explain --grammar`: the JSON record and the view of one grammar run."""

    record: dict[str, Any]
    view: Text


def guided_check(result: Diagnosis, vocab: Vocab, path: Path | None) -> GuidedCheck:
    """Would guided decoding with the default grammar (or the Lark file) have blocked it?"""
    from harmony_doctor import grammar as g
    from harmony_doctor.cli.app import read_input
    from harmony_doctor.errors import InputError

    if result.replay.role != "assistant":
        raise InputError("--grammar checks a completion; use it with --role assistant")
    lark: str | None = None
    source = "the default Harmony grammar"
    if path is not None:
        lark, source = read_input(str(path))
    tokens = result.input.tokens
    run = g.check(tokens, vocab, lark)
    origin = result.replay.origin_index
    record = g.run_record(run, tokens, vocab, source) | {"origin_index": origin}
    return GuidedCheck(record, render_grammar_run(run, tokens, vocab, source, origin))


def render_grammar_run(
    result: GrammarRun, tokens: Sequence[int], vocab: Vocab, source: str, origin: int | None
) -> Text:
    """What guided decoding would have done, for `explain --grammar`."""
    from rich.text import Text

    from harmony_doctor.output.escape import safe_text
    from harmony_doctor.output.styles import LABEL, OK, WARNING
    from harmony_doctor.output.tokens import token_label

    out = Text()
    out.append("Guided decoding", style=LABEL)
    out.append(" with ")
    out.append_text(safe_text(source, keep_newlines=False))
    out.append(" (llguidance)\n")
    blocked = result.blocked_index
    if blocked is None:
        out.append("  not blocked", style=WARNING)
        out.append("     every token fits the grammar")
        if result.complete:
            out.append(", and the stream ends where a completion may end")
        else:
            out.append(", but the stream stops before <|return|> or <|call|>")
        return out
    out.append("  blocked at", style=OK)
    out.append(f"      token {blocked} ")
    out.append_text(token_label(tokens[blocked], vocab))
    out.append(f" (id {tokens[blocked]})")
    if origin == blocked:
        out.append(", where the stream left the format")
    elif origin is not None:
        out.append(f"; the replay puts the origin at token {origin}")
    if result.end_allowed and not result.allowed_count:
        out.append("\n  allowed there   only the end of the completion")
        return out
    out.append(f"\n  allowed there   {result.allowed_count} token(s)")
    for n, token in enumerate(result.allowed):
        out.append(", " if n else ": ")
        out.append_text(token_label(token, vocab))
    others = result.allowed_count - len(result.allowed)
    if others > 0:
        out.append(f"{' and' if result.allowed else ':'} {others} text token(s)")
    return out


def guided_log_check(found: Sequence[LogError], custom: bool) -> GuidedCheck:
    """`explain --grammar` on a log with no token ids: a verdict per failure, from its kind."""
    from rich.text import Text

    from harmony_doctor import grammar as g
    from harmony_doctor.output.escape import safe_text
    from harmony_doctor.output.styles import LABEL, OK, WARNING

    records: list[dict[str, Any]] = []
    view = Text()
    view.append("Guided decoding", style=LABEL)
    view.append(" with the default Harmony grammar, judged from the error messages")
    if custom:
        view.append(" (--grammar-file needs token ids)")
    for error in found:
        blocked, why = g.log_verdict(error.kind, error.token, error.header_words)
        records.append({"line": error.line, "kind": error.kind, "blocked": blocked, "why": why})
        view.append(f"\n  line {error.line:<6}")
        view.append(
            "would have blocked it" if blocked else "would not have",
            style=OK if blocked else WARNING,
        )
        view.append(": ")
        view.append_text(safe_text(why, keep_newlines=False))
    record = {
        "grammar": "the default Harmony grammar",
        "from": "error messages",
        "failures": records,
    }
    return GuidedCheck(record, view)
