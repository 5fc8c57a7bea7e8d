"""The records of one token stream's replay and diagnosis (`explain` on token ids, a scan's
replayed completions): built on first use, through harmony_doctor.models."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from harmony_doctor.choices import ParseRole
from harmony_doctor.models.core import ErrorKind, Kind, Severity, TokenInput


@dataclass(frozen=True)
class Message:
    """One message as the replay walked it, with token positions (end indexes exclusive)."""

    index: int
    start_index: int | None  # the `<|start|>` token; None when the stream began inside a header
    header: tuple[int, int]  # header tokens, from after `<|start|>` up to `<|message|>`
    role: str | None
    name: str | None  # author name of tool messages
    channel: str | None
    recipient: str | None
    content_type: str | None
    content: tuple[int, int]
    terminator_index: int | None  # the stop token; None when the stream ended first
    terminator: int | None
    text: str
    recovered: bool = False  # made by lenient parsing from a header that never got `<|message|>`


@dataclass(frozen=True)
class ReplayFault:
    """Where and how the replay saw the parser fail."""

    kind: ErrorKind
    raise_index: int
    message_index: int
    header: tuple[int, int] | None  # the header span being parsed when it failed
    detail: str  # our rendering of the parser's complaint (the leftover words, the token...)


@dataclass(frozen=True)
class Replay:
    """The position-keeping walk of a stream: messages, first fault, where it left the format."""

    role: ParseRole
    strict: bool
    messages: tuple[Message, ...]
    fault: ReplayFault | None
    origin_index: int | None  # first token that is not a viable prefix of well-formed Harmony
    origin_reason: str | None


@dataclass(frozen=True)
class Finding:
    """One diagnosis: a parser error harmony raised, or a warning it let through."""

    kind: Kind
    code: str
    severity: Severity
    title: str
    raise_index: int | None
    origin_index: int | None
    message_index: int | None
    harmony_error: str | None
    expected: str
    found: str
    cause: str
    fix: str
    span: tuple[int, int] | None = None  # tokens to highlight (the broken header)


@dataclass(frozen=True)
class Diagnosis:
    """Everything `explain` reports about one token stream."""

    input: TokenInput
    replay: Replay
    harmony_error: str | None
    harmony_raise_index: int | None
    findings: tuple[Finding, ...]
    lenient_messages: tuple[dict[str, Any], ...]
    lenient_error: str | None
    disagreements: tuple[str, ...] = field(default=())

    @property
    def verdict(self) -> Literal["ok", "fault"]:
        return "fault" if self.harmony_error is not None else "ok"
