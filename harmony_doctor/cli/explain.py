"""`harmony-doctor explain`: what broke, where the header went wrong, why, and the fix."""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

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
    read_input,
)
from harmony_doctor.errors import ExitCode, InputError
from harmony_doctor.models import LogError

if TYPE_CHECKING:
    from harmony_doctor.cli.grammar import GuidedCheck


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
    grammar_check: Annotated[
        bool,
        typer.Option(
            "--grammar",
            help="Say whether guided decoding with the Harmony grammar would have blocked "
            "the stream, and at which token (llguidance, offline).",
        ),
    ] = False,
    grammar_file: Annotated[
        Path | None,
        typer.Option(
            "--grammar-file", help="Check with this llguidance Lark grammar; implies --grammar."
        ),
    ] = None,
    input_format: InputFormatOpt = InputFormatOption.auto,
    request: RequestOpt = None,
    vocab_path: VocabOpt = None,
    color: ColorOpt = Color.auto,
) -> None:
    """What broke, the token where the header went wrong, why, and the fix.

    INPUT is token ids (JSON, lists, vLLM request logs), Harmony text, or any log excerpt:
    tracebacks, wrapped errors and JSON error bodies of any server are explained too.
    """
    with error_funnel():
        from harmony_doctor.diagnose import diagnose
        from harmony_doctor.harmony.vocab import load_vocab
        from harmony_doctor.inputs import tokens as ingest
        from harmony_doctor.output import contract as serialize
        from harmony_doctor.output.explain_view import explain_view
        from harmony_doctor.output.recover_view import next_steps_view

        text, label = read_input(source)
        found = _log_findings(text, input_format, request)
        if found is not None:  # a log of errors, not a token stream
            guided_log = None
            if grammar_check or grammar_file is not None:
                from harmony_doctor.cli.grammar import guided_log_check

                guided_log = guided_log_check(found, custom=grammar_file is not None)
            _explain_log(found, text, label, output, vocab_path, color, guided_log)
            if found and not exit_zero:
                raise typer.Exit(ExitCode.FINDINGS)
            return
        vocab = load_vocab(vocab_path)
        inp = ingest.parse_tokens(text, vocab.encode, input_format.value, request)
        result = diagnose(inp, vocab, role.value, strict=not lenient)
        guided = None
        if grammar_check or grammar_file is not None:
            from harmony_doctor.cli.grammar import guided_check

            guided = guided_check(result, vocab, grammar_file)
        if output is Format.json:
            record = serialize.explain_record(result, label, vocab)
            if guided is not None:
                record["guided_decoding"] = guided.record
            print_json(record)
        else:
            console = make_console(color)
            emit(console, explain_view(result, label, vocab, window))
            if guided is not None:
                emit(console, guided.view, soft_wrap=True)
            if result.harmony_error is not None:
                from harmony_doctor.repro import next_commands

                steps = next_commands(
                    source, role.value, input_format.value, request, vocab_path, lenient
                )
                emit(console, next_steps_view(steps))
    if result.findings and not exit_zero:
        raise typer.Exit(ExitCode.FINDINGS)


_OUTPUT_IDS = re.compile(r"\boutput_token_ids\s*[:=]\s*\[")


def _log_findings(
    text: str, input_format: InputFormatOption, request: str | None
) -> tuple[LogError, ...] | None:
    """The failures in a log excerpt, or None when the input is a token stream to replay."""
    from harmony_doctor import logs
    from harmony_doctor.inputs import tokens as ingest

    body = text.lstrip("\ufeff")
    if input_format is not InputFormatOption.auto or not body.strip():
        return None  # ingest handles forced shapes, and reports empty input
    try:
        shape = ingest.detect_format(body)
    except InputError:
        return logs.extract_text(text)  # no tokens at all: whatever the log holds, maybe nothing
    if shape not in ("text", "json", "jsonl", "vllm-log"):
        return None
    found = logs.extract_text(text)
    if not found:
        return None
    if shape == "text":
        return found  # special-token strings inside error messages, not a Harmony stream
    if shape == "vllm-log":  # replay the completions it logs; else explain its errors
        return None if _OUTPUT_IDS.search(body) else found
    try:
        ingest.parse_tokens(body, _no_encode, shape, request)
    except InputError:
        return found  # a JSON error body without token ids
    return None


def _no_encode(text: str) -> list[int]:  # pragma: no cover - JSON shapes never encode
    raise InputError("JSON input holds Harmony text, not token ids")


def _explain_log(
    found: tuple[LogError, ...],
    text: str,
    label: str,
    output: Format,
    vocab_path: Path | None,
    color: Color,
    guided: GuidedCheck | None = None,
) -> None:
    from harmony_doctor.harmony.vocab import load_vocab
    from harmony_doctor.output import contract as serialize
    from harmony_doctor.output.explain_view import log_explain_view

    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    # The vocabulary only names tokens and re-tokenizes leftover words: load it when needed.
    wanted = any(e.token is not None or (output is Format.json and e.header_words) for e in found)
    vocab = load_vocab(vocab_path) if wanted else None
    if output is Format.json:
        record = serialize.log_explain_record(found, label, lines, vocab)
        if guided is not None:
            record["guided_decoding"] = guided.record
        print_json(record)
    else:
        console = make_console(color)
        emit(console, log_explain_view(found, label, lines, vocab))
        if guided is not None:
            emit(console, guided.view, soft_wrap=True)
