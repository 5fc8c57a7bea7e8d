"""`harmony-doctor explain`: what broke, where the header went wrong, why, and the fix."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from harmony_doctor.cli.console import make_console, print_json, show
from harmony_doctor.cli.options import (
    Color,
    ColorOpt,
    Format,
    FormatOpt,
    InputArg,
    InputFormatOpt,
    RequestOpt,
    RoleOpt,
    VocabOpt,
)
from harmony_doctor.errors import ExitCode
from harmony_doctor.inputs.reader import read_input, read_text
from harmony_doctor.inputs.tokens import InputFormat
from harmony_doctor.models import ParseRole

if TYPE_CHECKING:
    from harmony_doctor.explain import LogExplanation
    from harmony_doctor.guided import LogCheck


def explain(
    source: InputArg = "-",
    output: FormatOpt = "text",
    role: RoleOpt = "assistant",
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
    input_format: InputFormatOpt = "auto",
    request: RequestOpt = None,
    vocab_path: VocabOpt = None,
    color: ColorOpt = "auto",
) -> int:
    """What broke, the token where the header went wrong, why, and the fix.

    INPUT is token ids (JSON, lists, vLLM request logs), Harmony text, or any log excerpt:
    tracebacks, wrapped errors and JSON error bodies of any server are explained too.
    """
    from harmony_doctor import guided
    from harmony_doctor.diagnose import diagnose
    from harmony_doctor.explain import LogExplanation, count_lines, log_failures, place_in_input
    from harmony_doctor.harmony.vocab import load_vocab
    from harmony_doctor.inputs.tokens import parse_tokens
    from harmony_doctor.output import contract
    from harmony_doctor.output.explain_view import explain_view
    from harmony_doctor.output.guided_view import stream_check_view
    from harmony_doctor.output.recover_view import next_steps_view

    given = read_input(source)
    text, label = given.text, given.label
    checking = grammar_check or grammar_file is not None
    found = log_failures(text, input_format, request)
    if found is not None:  # a log of errors, not a token stream
        found = place_in_input(found, given)
        log_check = guided.check_log(found, custom=grammar_file is not None) if checking else None
        explanation = LogExplanation(found, count_lines(given.text))
        _explain_log(explanation, label, output, vocab_path, color, log_check)
        return ExitCode.FINDINGS if found and not exit_zero else ExitCode.CLEAN
    vocab = load_vocab(vocab_path)
    inp = parse_tokens(text, vocab.encode, input_format, request)
    result = diagnose(inp, vocab, role, strict=not lenient)
    check = None
    if checking:
        lark, lark_label = read_text(str(grammar_file)) if grammar_file else (None, "")
        check = guided.check_stream(result, vocab, lark, lark_label)
    if output == "json":
        record = contract.explain_record(result, label, vocab)
        if check is not None:
            record["guided_decoding"] = check.record(vocab)
        print_json(record)
    else:
        console = make_console(color)
        show(console, explain_view(result, label, vocab, window))
        if check is not None:
            show(console, stream_check_view(check, vocab), soft_wrap=True)
        if result.harmony_error is not None:
            steps = next_commands(source, role, input_format, request, vocab_path, lenient)
            show(console, next_steps_view(steps))
    return ExitCode.FINDINGS if result.findings and not exit_zero else ExitCode.CLEAN


def _explain_log(
    explanation: LogExplanation,
    label: str,
    output: Format,
    vocab_path: Path | None,
    color: Color,
    check: LogCheck | None,
) -> None:
    from harmony_doctor.harmony.vocab import load_vocab
    from harmony_doctor.output import contract
    from harmony_doctor.output.explain_view import log_explain_view
    from harmony_doctor.output.guided_view import log_check_view

    found, lines = explanation.errors, explanation.lines
    # The vocabulary only names tokens and re-tokenizes leftover words: load it when needed.
    wanted = any(e.token is not None or (output == "json" and e.header_words) for e in found)
    vocab = load_vocab(vocab_path) if wanted else None
    if output == "json":
        record = contract.log_explain_record(found, label, lines, vocab)
        if check is not None:
            record["guided_decoding"] = check.record()
        print_json(record)
    else:
        console = make_console(color)
        show(console, log_explain_view(found, label, lines, vocab))
        if check is not None:
            show(console, log_check_view(check), soft_wrap=True)


def next_commands(
    source: str,
    role: ParseRole = "assistant",
    input_format: InputFormat = "auto",
    request: str | None = None,
    vocab: Path | None = None,
    lenient: bool = False,
) -> list[str]:
    """The one-line `recover` and `repro` commands for the input `explain` just read."""
    options: list[str] = []
    if role != "assistant":
        options += ["--role", role]
    if input_format != "auto":
        options += ["--input-format", input_format]
    if request is not None:
        options += ["--request", request]
    if vocab is not None:
        options += ["--vocab", str(vocab)]
    target = [source or "-", *options]
    recover = shlex.join(["harmony-doctor", "recover", *target])
    mode = ["--lenient"] if lenient else []
    repro = shlex.join(["harmony-doctor", "repro", *target, *mode, "-o", "harmony-repro"])
    return [recover, repro]
