"""The lines the byte-level scan counts besides failures (request lines, received requests,
completion ids): one entry per shape, read by both scan cores (harmony_doctor/scan/core.py
builds its regexes from them; native/src/anchors.rs is handed them when the core is built)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

Counts = Literal["access", "received", "ids"]

_WS: Final = rb"[ \t\n\r\f\v]"
_META: Final = frozenset(rb"\.+*?()|[]{}^$#&-~")


def _escape(literal: bytes) -> bytes:
    """`literal` as a regex both Python's re and Rust's regex crate read alike."""
    return b"".join(
        b"\\" + bytes([c]) if c in _META else bytes([c]) if 32 <= c < 127 else b"\\x%02x" % c
        for c in literal
    )


@dataclass(frozen=True)
class LineShape:
    """A line holding one of `literals` and, right after it, blanks (when `blanks`), one of
    `words`, then one of the bytes of `then` (when `then` is empty: anything, or the line's
    end). With `line`, the literal is only searched for: the line must match that regex (ASCII
    bytes) anywhere. What the line counts as: `counts` (a received line that is also an access
    line counts once, as access)."""

    name: str
    counts: Counts
    literals: tuple[bytes, ...]
    words: tuple[bytes, ...] = (b"",)
    blanks: bool = False
    then: bytes = b""
    line: bytes | None = None

    def regex(self) -> bytes:
        """The shape as one regex: what the Python core searches a candidate line with."""
        if self.line is not None:
            return self.line
        literal = b"(?:" + b"|".join(map(_escape, self.literals)) + b")"
        blanks = _WS + b"*" if self.blanks else b""
        words = b"(?:" + b"|".join(map(_escape, self.words)) + b")" if any(self.words) else b""
        then = b"[" + _escape(self.then) + b"]" if self.then else b""
        return literal + blanks + words + then


# The generation endpoints of a server's own request line, each then a space: llama.cpp's
# llama-server (server-http.cpp log_server_request: `srv  log_server_r: request: POST
# /v1/chat/completions 127.0.0.1 200`, `done request: ...` in later builds) and LM Studio's
# (`Received request: POST to /v1/chat/completions with body {`). Never /health, /slots,
# /tokenize, /v1/messages/count_tokens...; the request body llama-server logs in verbose mode
# (`request:  {...}`) and its `response:` lines are no request.
REQUEST_ENDPOINTS: Final = (
    b"v1/chat/completions",
    b"chat/completions",
    b"v1/completions",
    b"completions",
    b"completion",
    b"v1/responses",
    b"responses",
    b"v1/messages",
    b"infill",
    b"api/chat",
)

LINE_SHAPES: Final[tuple[LineShape, ...]] = (
    # Output ids only: a `Received request` line's prompt ids are no completion (the reader
    # replays what a request generated), and vLLM writes one per request.
    LineShape("ids", "ids", (b"output_token_ids",), blanks=True, then=b":="),
    # An OpenAI-style access line (uvicorn's, vLLM's and SGLang's servers), Anthropic's
    # `/v1/messages` too (vLLM serves it; never `/v1/messages/count_tokens`), and SGLang's
    # native `"POST /generate HTTP/1.1"` (one literal for all: the anchors are 64 at most).
    LineShape(
        "quoted",
        "access",
        (b'"POST /', b'"GET /v1/'),
        words=(
            b"v1/chat/completions",
            b"v1/responses",
            b"v1/completions",
            b"v1/messages",
            b"generate",
            b"chat/completions",
            b"responses",
            b"completions",
        ),
        then=b' ?"',
    ),
    # ollama's gin access line.
    LineShape(
        "gin",
        "access",
        (b"| POST", b"| GET"),
        line=rb"\| (?:POST|GET)" + _WS + rb'+"/(?:api/chat|api/generate|v1/[a-z/]+)"',
    ),
    LineShape("received", "received", (b"Received request ",)),
    LineShape(
        "request",
        "access",
        (b"request: POST /", b"request: POST to /"),
        words=REQUEST_ENDPOINTS,
        then=b" ",
    ),
)
