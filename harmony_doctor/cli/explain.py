"""`harmony-doctor explain`: what broke, where the header went wrong, why, and the fix."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

import harmony_doctor as hd
from harmony_doctor.choices import ParseRole
from harmony_doctor.cli.console import make_console, print_json, show, writes_plain
from harmony_doctor.cli.funnel import note
from harmony_doctor.cli.options import RoleOpt
from harmony_doctor.cli.reading import InputArgs, takes_input
from harmony_doctor.errors import ExitCode

if TYPE_CHECKING:
    from harmony_doctor import ExplainedLog, TextInput


@takes_input
def explain(
    given: InputArgs,
    role: RoleOpt = "assistant",
    lenient: Annotated[
        bool, typer.Option("--lenient", help="Parse as openai-harmony with strict=False.")
    ] = False,
    open_stream: Annotated[
        bool,
        typer.Option(
            "--open",
            help="The stream may go on (a prompt, a partial generation): check it without the "
            "end-of-stream check (openai-harmony without process_eos).",
        ),
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
) -> int:
    """What broke, the token where the header went wrong, why, and the fix.

    INPUT is token ids (JSON, lists, vLLM request logs), Harmony text, or any log excerpt:
    tracebacks, wrapped errors and JSON error bodies of any server are explained too, as pasted
    (Markdown quotes, fences and tables, CI and pytest output, flattened tracebacks, code).
    """
    from harmony_doctor.output.explain_view import explain_view

    read = hd.read_input(given.source)
    explained = hd.explain(
        read,
        given.vocab_path,
        input_format=given.input_format,
        request=given.request,
        role=role,
        strict=not lenient,
        open_stream=open_stream,
        check_grammar=grammar_check,
        grammar_file=grammar_file,
    )
    if isinstance(explained, hd.ExplainedLog):  # a log of errors, not a token stream
        _explain_log(explained, read.label, given)
        found = explained.explanation
        faults = found.errors or any(d.findings for d in found.completions)
        return _read_whole(read, ExitCode.FINDINGS if faults and not exit_zero else ExitCode.CLEAN)
    result, check = explained.diagnosis, explained.check
    vocab = given.vocab()  # the one the stream was judged with (loaded once per process)
    if given.output == "json":
        from harmony_doctor.output import contract

        record = contract.explain_record(result, read.label, vocab)
        if check is not None:
            record["guided_decoding"] = check.record(vocab)
        print_json(record)
    else:
        console = make_console(given.color, given.width)
        show(console, explain_view(result, read.label, vocab, window, console.is_terminal))
        if check is not None:
            from harmony_doctor.output.guided_view import stream_check_view

            show(console, stream_check_view(check, vocab), soft_wrap=True)
        if result.harmony_error is not None:
            from harmony_doctor.output.recover_view import next_steps_view

            steps = next_commands(given, role, lenient)
            show(console, next_steps_view(steps))
    return _read_whole(read, ExitCode.FINDINGS if result.findings and not exit_zero else 0)


def _read_whole(read: TextInput, code: int) -> int:
    """`code`, when the input was read whole; else the input is said to be partial, and the
    run exits 2 (what was shown holds what could be read, and is no verdict on the rest)."""
    if read.not_text is None:
        return code
    note(f"partial {read.label}: {read.not_text}")
    return ExitCode.ERROR


def _explain_log(explained: ExplainedLog, label: str, given: InputArgs) -> None:
    from harmony_doctor.output.explain_view import (
        log_explain_plain,
        log_explain_view,
        names_need_vocab,
    )

    explanation, check = explained.explanation, explained.check
    found = explanation.errors
    # The vocabulary names tokens, re-tokenizes leftover words and replays logged completions:
    # load it only when one of those is needed (the view names a special token by its id).
    json_out = given.output == "json"
    if json_out:
        wanted = any(e.token is not None or e.header_words for e in found)
    else:
        wanted = names_need_vocab(found)
    vocab = given.vocab() if wanted or explanation.completions else None
    if json_out:
        from harmony_doctor.output import contract  # the JSON records only

        record = contract.log_explain_record(explanation, label, vocab)
        if check is not None:
            record["guided_decoding"] = check.record()
        print_json(record)
        return
    # Off a terminal the view's lines are written as rich would write them, without loading
    # rich's console and tables (about 20 ms); not with the grammar's verdict, a table.
    plain = None
    if check is None and writes_plain(given.color, given.width, separators=True):
        plain = log_explain_plain(explanation, label, vocab)
    if plain is not None:
        sys.stdout.write(plain)
        return
    console = make_console(given.color, given.width)
    show(console, log_explain_view(explanation, label, vocab, console.is_terminal))
    if check is not None:
        from harmony_doctor.output.guided_view import log_check_view

        show(console, log_check_view(check), soft_wrap=True)


def next_commands(
    given: InputArgs, role: ParseRole = "assistant", lenient: bool = False
) -> list[str]:
    """The one-line `recover` and `repro` commands for the input `explain` just read."""
    options: list[str] = []
    if role != "assistant":
        options += ["--role", role]
    if given.input_format != "auto":
        options += ["--input-format", given.input_format]
    if given.request is not None:
        options += ["--request", given.request]
    if given.vocab_path is not None:
        options += ["--vocab", str(given.vocab_path)]
    import shlex  # for a token stream's next steps only

    target = [given.source or "-", *options]
    recover = shlex.join(["harmony-doctor", "recover", *target])
    mode = ["--lenient"] if lenient else []
    repro = shlex.join(["harmony-doctor", "repro", *target, *mode, "-o", "harmony-repro"])
    return [recover, repro]
