"""What commands read: one input as text, or as the token stream it holds."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from harmony_doctor.errors import InputError
from harmony_doctor.inputs.tokens import InputFormat

if TYPE_CHECKING:
    from harmony_doctor.harmony.vocab import Vocab
    from harmony_doctor.models import TokenInput


def read_input(source: str) -> tuple[str, str]:
    """(text, label) of a file or of standard input."""
    if source in ("", "-"):
        if sys.stdin is None or sys.stdin.isatty():
            raise InputError("no input: give a file, or pipe text to standard input")
        data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
        label = "<stdin>"
    else:
        path = Path(source)
        if path.is_dir():
            raise InputError(f"{source} is a directory; explain and decode read one file")
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read {source}: {exc.strerror or exc}") from None
        label = source
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    return text, label


def read_tokens(
    source: str, input_format: InputFormat, request: str | None, vocab_path: Path | None
) -> tuple[TokenInput, str, Vocab]:
    """The token stream a command was given, read and parsed; its label; the vocabulary."""
    from harmony_doctor.harmony.vocab import load_vocab
    from harmony_doctor.inputs.tokens import parse_tokens

    text, label = read_input(source)
    vocab = load_vocab(vocab_path)
    return parse_tokens(text, vocab.encode, input_format, request), label, vocab
