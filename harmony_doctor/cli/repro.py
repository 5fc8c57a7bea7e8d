"""`harmony-doctor repro`: shrink a failing stream and write a bundle for an upstream issue."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harmony_doctor import advanced
from harmony_doctor.cli.console import present
from harmony_doctor.cli.options import RoleOpt
from harmony_doctor.cli.reading import InputArgs, takes_input
from harmony_doctor.errors import ExitCode


@takes_input
def repro(
    given: InputArgs,
    out_dir: Annotated[
        Path,
        typer.Option("--out", "-o", help="Folder to write the bundle into (created if needed)."),
    ] = Path("harmony-repro"),
    role: RoleOpt = "assistant",
    lenient: Annotated[
        bool, typer.Option("--lenient", help="Reproduce under openai-harmony strict=False.")
    ] = False,
    budget: Annotated[
        int, typer.Option("--budget", min=1, help="Most parser runs the shrinking may spend.")
    ] = 20_000,
    copy_vocab: Annotated[
        bool,
        typer.Option(
            "--copy-vocab/--no-copy-vocab",
            help="Copy o200k_base.tiktoken into DIR/vocab (else repro.py points at this one).",
        ),
    ] = True,
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Overwrite a bundle already in DIR (never the input or another file)."
        ),
    ] = False,
) -> int:
    """Shrink a failing stream (delta debugging); write tokens.json, repro.py, ISSUE.md."""
    from harmony_doctor.output import contract
    from harmony_doctor.output.recover_view import repro_view

    # Asked before the input is read and shrunk. --force replaces a bundle this tool wrote,
    # never the input (nor the vocabulary read) or a file of the user's with a bundle's name.
    inputs = [Path(p) for p in (given.source, given.vocab_path) if p is not None and p != "-"]
    advanced.check_repro_folder(out_dir, copy_vocab=copy_vocab, overwrite=force, inputs=inputs)
    inp, label, vocab = given.tokens()
    result = advanced.shrink(inp, vocab, role=role, strict=not lenient, budget=budget)
    paths = advanced.write_repro(
        result, out_dir, vocab, label=label, source=inp, copy_vocab=copy_vocab, overwrite=force
    )
    written = [str(p) for p in paths]
    present(
        given,
        lambda: contract.repro_record(result, label, str(out_dir), written),
        lambda: repro_view(result, str(out_dir), written, vocab),
    )
    return ExitCode.CLEAN
