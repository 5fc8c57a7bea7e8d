"""Frozen records that flow from ingestion through replay and diagnosis to rendering."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from harmony_doctor.choices import ParseRole

Detected = Literal["tokens", "text", "log"]
Severity = Literal["error", "warning"]


# Kinds raised by openai-harmony's parser, then the warnings harmony lets through.
ErrorKind = Literal[
    "header_leftover",
    "unexpected_token",
    "unknown_role",
    "empty_channel",
    "header_eos",
    "missing_role",
    "header_decode",
]
WarningKind = Literal["unknown_channel", "constrain_as_recipient", "markup_leak", "missing_channel"]
# Failures only logs show: openai-harmony outside its parser, and other engines' Harmony parsers.
LogKind = Literal[
    "vocab_load",
    "render_error",
    "tool_call_parse",
    "input_parse",
    "template_content",
    "recovered_raw_output",  # a server caught the parser's error and returned raw text
    "server_rejected",  # the server's own gpt-oss code refused a message openai-harmony parsed
    "stripped_markup",  # Harmony text whose special tokens were stripped (cannot be replayed)
    "rejected_ids",  # a logged completion holds ids openai-harmony rejects (a corrupt or cut log)
]
Kind = ErrorKind | WarningKind | LogKind


@dataclass(frozen=True)
class TokenInput:
    """A token stream taken from user input, with where it came from."""

    tokens: tuple[int, ...]
    detected: Detected
    format: str  # the concrete shape: json-array, ids, json, jsonl, vllm-log, harmony-text
    request_id: str | None = None
    finish_reason: str | None = None
    truncated: bool = False  # the log probably cut the list (vLLM --max-log-len)
    prompt_tokens: tuple[int, ...] | None = None
    notes: tuple[str, ...] = ()


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


# --- recover ---------------------------------------------------------------------------------

Confidence = Literal["certain", "guessed"]


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


# --- logs ------------------------------------------------------------------------------------

Server = Literal[
    "vllm",
    "sglang",
    "lmdeploy",
    "ollama",
    "lmstudio",
    "llama.cpp",
    "tensorrt-llm",
    "exo",
    "llama-stack",
    "groq",
]


@dataclass(frozen=True, slots=True)
class LogError:
    """One Harmony failure found in log text, reported once, with the evidence around it."""

    line: int  # 1-based line of the error line
    span: tuple[int, int]  # first and last line of the evidence (traceback ... error), inclusive
    kind: Kind
    code: str
    severity: Severity
    title: str
    message: str  # the error text without wrapper or class prefix, unescaped
    raw: str  # the error line as found
    server: Server | None
    harmony_version: str | None  # "0.0.3-0.0.4", ">=0.0.5", ...; None when unknowable
    timestamp: str | None
    pid: int | None
    token: int | None  # unexpected_token: the id harmony choked on
    header_remainder: str | None  # header_leftover: the leftover words joined by single spaces
    header_words: tuple[str, ...]
    remainder_truncated: bool  # the log cut the leftover short
    reconstructed: str | None  # the header the model most likely wrote, unknown parts marked
    context: str | None  # other engines' evidence: the raw tool call, the model output...
    expected: str
    found: str
    cause: str
    fix: str


@dataclass(frozen=True, slots=True)
class LoggedFailure:
    """What a scan keeps of a LogError until the source's events are built (scan/findings.py):
    the fields an event takes, without the evidence, explanation and advice `explain` shows
    (several hundred bytes per failure that no event carries)."""

    line: int
    timestamp: str | None
    pid: int | None
    server: Server | None
    harmony_version: str | None
    kind: Kind
    code: str
    severity: Severity
    token: int | None
    header_remainder: str | None
    message: str

    @classmethod
    def of(cls, error: LogError, line: int) -> LoggedFailure:
        """`error`'s event fields, at `line` (the line of the input as given)."""
        return cls(
            line,
            error.timestamp,
            error.pid,
            error.server,
            error.harmony_version,
            error.kind,
            error.code,
            error.severity,
            error.token,
            error.header_remainder,
            error.message,
        )


# --- scan ------------------------------------------------------------------------------------

EventSource = Literal["log", "replay"]


@dataclass(frozen=True, slots=True)  # no per-instance dict: scan keeps one per failure
class ScanEvent:
    """One failure found while scanning: a logged error, or a fault in a replayed completion."""

    file: str
    line: int
    timestamp: str | None  # ISO 8601, year inferred when the log omits it
    pid: int | None
    server: str | None
    harmony_version: str | None
    kind: str
    code: str
    severity: Severity
    pattern: str
    token_id: int | None
    token_text: str | None
    header_remainder: str | None
    message: str
    request_id: str | None = None
    origin_index: int | None = None
    raise_index: int | None = None
    source: EventSource = "log"
    origin: str | None = None  # the host (or name given with --origin) the log was scanned on


@dataclass(frozen=True, slots=True)
class RequestTally:
    """Requests seen in the logs for one (origin, file, pid, server, hour, kind) cell."""

    file: str
    pid: int | None
    server: str | None
    hour: str | None  # ISO hour `2026-11-28T10`, None when no timestamp is known
    count: int
    origin: str | None = None  # as ScanEvent.origin
    # What was counted: "access" lines, "received" (`Received request`) lines or logged
    # "completions"; a summary counts each process one way (scan/summary.py counted_tallies).
    kind: str | None = None
