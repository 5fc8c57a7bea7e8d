"""The records of recover, repro and render: built on first use, through harmony_doctor.models."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harmony_doctor.choices import ParseRole
from harmony_doctor.models.core import Confidence, TokenInput

# --- recover ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ParserResult:
    """What openai-harmony returned in one mode: the messages a user would get, and the error."""

    strict: bool
    error: str | None
    raise_index: int | None
    messages: tuple[dict[str, Any], ...]
    available: bool = True  # False when the installed openai-harmony lacks the mode


@dataclass(frozen=True)
class SalvagePiece:
    """One message salvaged from a stream, with the tokens it came from and how sure we are.

    `certain`: openai-harmony itself parsed these tokens as this message. `guessed`: the fields
    or boundaries are our inference (`how` says which) and must not be taken as parsed output.
    """

    confidence: Confidence
    span: tuple[int, int]  # tokens the piece was read from, end exclusive
    content: tuple[int, int] | None  # the content tokens, when they are known
    role: str
    name: str | None
    channel: str | None
    recipient: str | None
    content_type: str | None
    text: str
    terminator: int | None
    how: str


@dataclass(frozen=True)
class SkippedSpan:
    """Tokens the salvage could not place in any message."""

    span: tuple[int, int]
    reason: str


@dataclass(frozen=True)
class ToolCall:
    """The tool call a salvage found: recipient, function name, raw arguments."""

    piece: int
    confidence: Confidence
    recipient: str
    name: str
    arguments: str
    arguments_json: bool  # the arguments parse as JSON
    complete: bool  # ended in <|call|>


@dataclass(frozen=True)
class Recovery:
    """Side by side: openai-harmony strict, lenient, and our salvage with provenance."""

    input: TokenInput
    role: ParseRole
    strict: ParserResult
    lenient: ParserResult
    pieces: tuple[SalvagePiece, ...]
    skipped: tuple[SkippedSpan, ...]
    analysis: tuple[int, ...]  # indexes into pieces
    final: int | None
    tool_call: ToolCall | None


# --- repro -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shrink:
    """A failing stream and the minimal one that fails the same way under openai-harmony."""

    original: tuple[int, ...]
    minimal: tuple[int, ...]
    role: ParseRole
    strict: bool
    original_error: str
    minimal_error: str
    kind: str
    shape: str  # the error message with its variable parts masked
    tests: int  # parser runs spent
    exhausted: bool  # the run budget ran out: still failing the same way, maybe not 1-minimal


# --- render ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RenderWarning:
    """A multi-turn pitfall in a chat request or its rendering."""

    code: str
    message: int | None  # index in the request's `messages`
    text: str


@dataclass(frozen=True)
class RenderedPrompt:
    """A chat request rendered by openai-harmony into the prompt a server would send."""

    tokens: tuple[int, ...]
    text: str
    warnings: tuple[RenderWarning, ...]
    style: str
    conversation: tuple[dict[str, Any], ...]  # what was handed to openai-harmony


@dataclass(frozen=True)
class Received:
    """What a client would get from a list of parsed messages: reasoning, answer, tool call."""

    analysis: str | None
    final: str | None
    tool_recipient: str | None
    tool_arguments: str | None
