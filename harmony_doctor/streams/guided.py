"""`explain --grammar`: would guided decoding have blocked this stream, or these logged failures?"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harmony_doctor.errors import InputError
from harmony_doctor.harmony.vocab import Vocab
from harmony_doctor.models import Diagnosis, LogError
from harmony_doctor.streams import grammar

DEFAULT_GRAMMAR = "the default Harmony grammar"


@dataclass(frozen=True)
class StreamCheck:
    """One grammar run over a diagnosed completion."""

    run: grammar.GrammarRun
    tokens: tuple[int, ...]
    source: str  # which grammar: the default one or the user's Lark file
    origin: int | None  # where the replay says the stream left the format

    def record(self, vocab: Vocab) -> dict[str, Any]:
        """The JSON contract's `guided_decoding` object."""
        run = grammar.run_record(self.run, self.tokens, vocab, self.source)
        return run | {"origin_index": self.origin}


@dataclass(frozen=True)
class LogVerdict:
    """The grammar's verdict on one failure known only from its error message."""

    line: int
    kind: str
    blocked: bool
    why: str


@dataclass(frozen=True)
class LogCheck:
    """Verdicts for every failure of a log; `custom`: a Lark file was given but needs ids."""

    verdicts: tuple[LogVerdict, ...]
    custom: bool

    def record(self) -> dict[str, Any]:
        """The JSON contract's `guided_decoding` object."""
        failures = [
            {"line": v.line, "kind": v.kind, "blocked": v.blocked, "why": v.why}
            for v in self.verdicts
        ]
        return {"grammar": DEFAULT_GRAMMAR, "from": "error messages", "failures": failures}


def check_stream(
    result: Diagnosis, vocab: Vocab, lark: str | None = None, source: str = DEFAULT_GRAMMAR
) -> StreamCheck:
    """Run the default grammar (or the Lark text given) over a diagnosed completion."""
    if result.replay.role != "assistant":
        raise InputError("--grammar checks a completion; use it with --role assistant")
    tokens = result.input.tokens
    run = grammar.check(tokens, vocab, lark)
    return StreamCheck(
        run, tokens, source if lark is not None else DEFAULT_GRAMMAR, result.replay.origin_index
    )


def check_log(found: Sequence[LogError], custom: bool) -> LogCheck:
    """A verdict per logged failure, from its kind (a log without token ids has no stream)."""
    verdicts = []
    for error in found:
        blocked, why = grammar.log_verdict(error.kind, error.token, error.header_words)
        verdicts.append(LogVerdict(error.line, error.kind, blocked, why))
    return LogCheck(tuple(verdicts), custom)
