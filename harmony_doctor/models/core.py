"""The records every path takes: token inputs, log failures, scan events and request tallies,
and the names of every kind, server and source (the package's public face re-exports them)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal, Protocol, TypeVar

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
    "unknown_error",  # openai-harmony's exception, in words no form of the catalogue knows
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


Confidence = Literal["certain", "guessed"]


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
    severity: Severity  # the code's (faults/rules.py); its title, cause and fix are looked up
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
    # header words in the middle of a very long remainder, past the bounded head and tail kept
    # (logs/describe.py): counted, not held
    words_unread: int = 0
    # per header word, the characters left out of its middle (logs/words.py MAX_WORD: a word of
    # a mebibyte is held as its ends); () when no word was cut
    words_cut: tuple[int, ...] = ()
    # the message is an openai-harmony parser error's (faults/catalogue.py `kind_of_error`),
    # read where the record is made: what explain's JSON gives as `harmony_error`
    harmony_error: bool = False
    # unknown_role: the role word the header held (`Unknown role: X`, `invalid role: 'X'`)
    role_word: str | None = None
    # the characters left out of `message`'s middle, marked there with one CUT character
    # (logs/words.py `text_ends`: a header remainder of mebibytes is held as its ends); 0: none
    message_cut: int = 0


class Sighting(Protocol):
    """A record of one sighting of a failure (LogError, ScanEvent): where and when it was."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def server(self) -> str | None: ...
    @property
    def harmony_version(self) -> str | None: ...
    @property
    def timestamp(self) -> str | None: ...
    @property
    def pid(self) -> int | None: ...


_Seen = TypeVar("_Seen", bound=Sighting)


def with_facts(main: _Seen, other: _Seen) -> _Seen:
    """`main`, one sighting of a failure, with the facts of its place it lacks taken from
    `other`, another sighting of it: server, Harmony release, time, process."""
    return replace(
        main,
        server=main.server or other.server,
        harmony_version=main.harmony_version or other.harmony_version,
        timestamp=main.timestamp or other.timestamp,
        pid=main.pid if main.pid is not None else other.pid,
    )


# --- scan ------------------------------------------------------------------------------------

EventSource = Literal["log", "replay"]
