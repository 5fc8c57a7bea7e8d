"""The input options every token command shares, declared once, and reading them.

decode, explain, recover and repro all take INPUT, --format, --input-format, --request,
--vocab, --color and --width. `takes_input` adds those options to a command's signature (typer reads
the signature) and hands them to the command as one `InputArgs`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import harmony_doctor as hd
from harmony_doctor import advanced
from harmony_doctor.choices import InputFormat
from harmony_doctor.cli.options import (
    Color,
    ColorOpt,
    Format,
    FormatOpt,
    InputArg,
    InputFormatOpt,
    RequestOpt,
    VocabOpt,
    WidthOpt,
)

if TYPE_CHECKING:
    from harmony_doctor import TokenInput, Vocab


@dataclass(frozen=True)
class InputArgs:
    """What a token command was told to read, and how to show what it found."""

    source: str
    output: Format
    input_format: InputFormat
    request: str | None
    vocab_path: Path | None
    color: Color
    width: int | None

    def vocab(self) -> Vocab:
        return hd.load_vocab(self.vocab_path)

    def tokens(self) -> tuple[TokenInput, str, Vocab]:
        """The token stream the input holds, its label, and the vocabulary."""
        text, label = advanced.read_text(self.source)
        vocab = self.vocab()
        found = hd.parse_tokens(text, vocab, input_format=self.input_format, request=self.request)
        return found, label, vocab


_SHARED = (
    ("source", InputArg, "-"),
    ("output", FormatOpt, "text"),
    ("input_format", InputFormatOpt, "auto"),
    ("request", RequestOpt, None),
    ("vocab_path", VocabOpt, None),
    ("color", ColorOpt, "auto"),
    ("width", WidthOpt, None),
)


def takes_input(command: Callable[..., int]) -> Callable[..., int]:
    """Give `command(given: InputArgs, **own)` the shared options: INPUT first, then its own."""
    own = [p for p in inspect.signature(command, eval_str=True).parameters.values()][1:]
    shared = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=kind)
        for name, kind, default in _SHARED
    ]
    names = [name for name, _, _ in _SHARED]

    @functools.wraps(command)
    def run(**options: Any) -> int:
        given = InputArgs(*(options.pop(name) for name in names))
        return command(given, **options)

    parameters = [shared[0], *(p.replace(kind=p.KEYWORD_ONLY) for p in own), *shared[1:]]
    run.__signature__ = inspect.Signature(parameters, return_annotation=int)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": int}
    del run.__wrapped__  # typer must read the signature above, not the command's own
    return run
