"""What commands read: one input (through the one reader) as the token stream it holds."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from harmony_doctor.inputs.reader import read_text
from harmony_doctor.inputs.tokens import InputFormat

if TYPE_CHECKING:
    from harmony_doctor.harmony.vocab import Vocab
    from harmony_doctor.models import TokenInput


def read_tokens(
    source: str, input_format: InputFormat, request: str | None, vocab_path: Path | None
) -> tuple[TokenInput, str, Vocab]:
    """The token stream a command was given, read and parsed; its label; the vocabulary."""
    from harmony_doctor.harmony.vocab import load_vocab
    from harmony_doctor.inputs.tokens import parse_tokens

    text, label = read_text(source)
    vocab = load_vocab(vocab_path)
    return parse_tokens(text, vocab.encode, input_format, request), label, vocab
