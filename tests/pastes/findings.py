"""What `explain` reports for a text, reduced to what the paste tests compare."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import harmony_doctor as hd
from harmony_doctor.harmony.vocab import Vocab, load_vocab
from harmony_doctor.inputs.reader import TextInput


@dataclass(frozen=True)
class Seen:
    """One finding: its code, the token it names (a log's token, or a stream's token at the
    raise), the server named (None: unknown), and the token index of a stream's raise."""

    code: str
    token: int | None
    server: str | None
    index: int | None = None


@cache
def vocab() -> Vocab:
    return load_vocab()


def findings(text: str) -> tuple[Seen, ...]:
    """Every finding `explain` reports for `text`, as `explain TEXT` would."""
    explained = hd.explain_input(TextInput(text, "<paste>"), vocab())
    if isinstance(explained, hd.ExplainedLog):
        found = explained.explanation
        seen = [Seen(e.code, e.token, e.server) for e in found.errors]
        for completion in found.completions:
            seen += _stream(completion)
        return tuple(seen)
    return tuple(_stream(explained.diagnosis))


def _stream(diagnosis: hd.Diagnosis) -> list[Seen]:
    tokens = diagnosis.input.tokens
    seen = []
    for f in diagnosis.findings:
        index = f.raise_index
        token = tokens[index] if index is not None and index < len(tokens) else None
        seen.append(Seen(f.code, token, None, index))
    return seen


def is_stream(text: str) -> bool:
    """Whether `explain` reads `text` as one token stream (not a log)."""
    return isinstance(hd.explain_input(TextInput(text, "<paste>"), vocab()), hd.ExplainedStream)
