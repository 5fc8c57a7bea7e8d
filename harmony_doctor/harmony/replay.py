"""The position-keeping Harmony state machine: messages, the first fault, and the origin.

`replay` mirrors openai-harmony's StreamableParser (0.0.8, strict and lenient) but keeps every
position: where each message starts, its header and content spans, its terminator. Its verdict
is only a cross-check; the verdict users see comes from openai-harmony itself (streams/diagnose.py).

`find_origin` answers a different question with a stricter grammar: at which token did the
stream stop being a viable prefix of a well-formed Harmony completion? A header error surfaces
only when `<|message|>` arrives, often hundreds of tokens after the model left the format.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum, auto

from harmony_doctor.choices import ParseRole
from harmony_doctor.errors import HeaderError
from harmony_doctor.harmony import spec
from harmony_doctor.harmony.vocab import (
    CALL,
    CHANNEL,
    END,
    MESSAGE,
    RETURN,
    START,
    STOP_TOKENS,
    Vocab,
)
from harmony_doctor.models import Message, Replay, ReplayFault

KNOWN_ROLES = spec.KNOWN_ROLES

# Rust's char::is_whitespace (Unicode White_Space) and split_ascii_whitespace's set differ from
# Python's str.isspace and str.split; the header parser uses both, so we spell them out.
_UNICODE_WS = "\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B)))
_UNICODE_WS += "\u2028\u2029\u202f\u205f\u3000"
_ASCII_WS_SPLIT = re.compile(r"[ \t\n\x0c\r]+")
_CHANNEL_MARK = "<|channel|>"
_CONSTRAIN_MARK = "<|constrain|>"


@dataclass(frozen=True)
class ParsedHeader:
    role: str
    name: str | None
    channel: str | None
    recipient: str | None
    content_type: str | None
    leftover: str | None


def parse_header(text: str, role: str | None, parse_recipient_and_type: bool) -> ParsedHeader:
    """openai-harmony's header parsing rules, applied to decoded header text."""
    channel: str | None = None
    at = text.find(_CHANNEL_MARK)
    if at >= 0:
        after = text[at + len(_CHANNEL_MARK) :]
        end = next((i for i, c in enumerate(after) if c in _UNICODE_WS or c == "<"), len(after))
        if end == 0:
            raise HeaderError("empty_channel", "channel marker present but no channel value")
        channel = after[:end]
        text = text[:at] + after[end:]
    text = text.strip(_UNICODE_WS)
    if _CONSTRAIN_MARK in text:
        text = text.replace(_CONSTRAIN_MARK, " " + _CONSTRAIN_MARK).strip(_UNICODE_WS)
    parts = [p for p in _ASCII_WS_SPLIT.split(text) if p]

    role_word: str | None = None
    if role is None:
        if not parts:
            raise HeaderError("missing_role", "message header did not contain a role")
        role_word = parts[0]
        if role_word in KNOWN_ROLES:
            role = role_word
        elif len(parts) > 1 or role_word.startswith("to="):
            parts.pop(0)
            role = "tool"
        else:
            raise HeaderError("unknown_role", role_word)
    if parts and parts[0] == role:
        parts.pop(0)

    recipient: str | None = None
    content_type: str | None = None
    if parse_recipient_and_type and parts:
        count = len(parts)
        last = parts.pop()
        if last.startswith("to="):
            recipient = last[3:]
        elif count == 1:
            recipient = last
        else:
            content_type = last
            if parts:
                raw = parts.pop()
                recipient = raw[3:] if raw.startswith("to=") else raw
    leftover = " ".join(parts) if parts else None
    name = role_word if role == "tool" else None
    return ParsedHeader(role, name, channel, recipient, content_type, leftover)


class _State(Enum):
    EXPECT_START = auto()
    HEADER = auto()
    CONTENT = auto()


def replay(
    tokens: Sequence[int],
    vocab: Vocab,
    role: ParseRole,
    strict: bool = True,
    open_stream: bool = False,
    origin: bool = True,
) -> Replay:
    """Walk the stream as openai-harmony would, keeping positions, until the first fault.

    `open_stream`: the stream may go on (a prompt, a partial generation), so its end is no
    fault: openai-harmony without `process_eos`. `origin=False` skips `find_origin` (the
    replay's origin stays None) for callers that only need the fault and the messages.
    """
    messages: list[Message] = []
    fault: ReplayFault | None = None
    state = _State.HEADER if role == "assistant" else _State.EXPECT_START
    next_role: str | None = "assistant" if role == "assistant" else None
    start_index: int | None = None
    header_start = 0
    header: ParsedHeader | None = None
    header_span = (0, 0)
    content_start = 0

    def close(end: int, terminator_index: int | None) -> None:
        assert header is not None
        stop = tokens[terminator_index] if terminator_index is not None else None
        text = vocab.decode(tokens[content_start:end])
        at = (len(messages), start_index)
        messages.append(_message(*at, header_span, header, (content_start, end), stop, text))

    for i, token in enumerate(tokens):
        if state is _State.EXPECT_START:
            if token != START:
                fault = ReplayFault("unexpected_token", i, len(messages), None, str(token))
                break
            state, start_index, header_start = _State.HEADER, i, i + 1
        elif state is _State.HEADER:
            if token == MESSAGE:
                header_span = (header_start, i)
                try:
                    text = _decode_strict(vocab, tokens[header_start:i])
                    header = parse_header(text, next_role, parse_recipient_and_type=True)
                    if header.leftover is not None:
                        raise HeaderError("header_leftover", header.leftover)
                except HeaderError as exc:
                    fault = ReplayFault(exc.kind, i, len(messages), header_span, exc.detail)
                    break
                next_role, state, content_start = None, _State.CONTENT, i + 1
            elif not strict and token in STOP_TOKENS:
                if next_role is not None and i > header_start:
                    header_span = (header_start, i)
                    try:
                        text = _decode_strict(vocab, tokens[header_start:i])
                        header = parse_header(text, next_role, parse_recipient_and_type=False)
                    except HeaderError as exc:
                        fault = ReplayFault(exc.kind, i, len(messages), header_span, exc.detail)
                        break
                    messages.append(
                        _recovered(len(messages), start_index, header_span, header, i, token)
                    )
                state, next_role = _State.EXPECT_START, None
        elif token in STOP_TOKENS:
            close(i, i)
            state = _State.EXPECT_START
    else:
        if state is _State.HEADER and not open_stream:
            span = (header_start, len(tokens))
            fault = ReplayFault("header_eos", len(tokens), len(messages), span, "")
        elif state is _State.CONTENT:
            close(len(tokens), None)

    found, reason = find_origin(tokens, vocab, role) if origin else (None, None)
    return Replay(role, strict, tuple(messages), fault, found, reason)


def _recovered(
    index: int,
    start_index: int | None,
    span: tuple[int, int],
    header: ParsedHeader,
    end: int,
    stop: int,
) -> Message:
    """The message lenient parsing makes of a header cut short by a stop token."""
    text = header.leftover or ""
    return _message(index, start_index, span, header, (span[0], end), stop, text, recovered=True)


def _message(
    index: int,
    start_index: int | None,
    span: tuple[int, int],
    header: ParsedHeader,
    content: tuple[int, int],
    stop: int | None,
    text: str,
    recovered: bool = False,
) -> Message:
    """A message with its header's fields; it ends at `content[1]` (its stop token, if any)."""
    return Message(
        index=index,
        start_index=start_index,
        header=span,
        role=header.role,
        name=header.name,
        channel=header.channel,
        recipient=header.recipient,
        content_type=header.content_type,
        content=content,
        terminator_index=content[1] if stop is not None else None,
        terminator=stop,
        text=text,
        recovered=recovered,
    )


def _decode_strict(vocab: Vocab, tokens: Sequence[int]) -> str:
    try:
        return b"".join(vocab.token_bytes(t) for t in tokens).decode("utf-8")
    except UnicodeDecodeError:
        raise HeaderError("header_decode", "could not decode header") from None


def find_origin(
    tokens: Sequence[int], vocab: Vocab, role: ParseRole
) -> tuple[int | None, str | None]:
    """The first token that no well-formed Harmony continuation can follow, and why.

    Headers are checked against spec.py's grammar at every token boundary (viability is
    prefix-closed, so the first failing boundary is the first bad token); bodies may hold only
    ordinary tokens; a message must end in a stop token followed by `<|start|>`, except that
    `<|return|>` (and, in a completion, `<|call|>`) ends the stream.
    """
    header_kind = "assistant" if role == "assistant" else "any"
    header: str | None = "" if role == "assistant" else None  # text of the open header
    pattern = spec.header_prefix_regex("rest" if role == "assistant" else "any")
    in_body = False
    last_stop: int | None = None if role == "assistant" else END
    for i, token in enumerate(tokens):
        if header is not None:
            if vocab.is_special(token):
                header += spec.SYMBOL.get(token, spec.OTHER_SPECIAL)
            else:
                header += spec.header_symbol_text(vocab.token_bytes(token))
            if pattern.fullmatch(header) is None:
                return i, _header_complaint(header, token, vocab)
            if token == MESSAGE:
                header, in_body = None, True
        elif in_body:
            if token in STOP_TOKENS:
                in_body, last_stop = False, token
            elif vocab.is_special(token):
                return i, "special token inside message content"
        elif token == START and (last_stop == END or (last_stop == CALL and role == "none")):
            header, pattern = "", spec.header_prefix_regex(header_kind)
        elif last_stop == RETURN:
            return i, "token after <|return|>, which ends the completion"
        elif last_stop == CALL:
            return i, "token after <|call|>, which ends a completion"
        else:
            return i, "expected <|start|> after the end of a message"
    return None, None


def _header_complaint(header: str, token: int, vocab: Vocab) -> str:
    if vocab.is_special(token):
        if token == START:
            return "<|start|> inside a header"
        if token in STOP_TOKENS:
            return "stop token before <|message|>"
        if token == CHANNEL and header.count(spec.SYMBOL[CHANNEL]) > 1:
            return "second <|channel|> in one header"
        if token == MESSAGE:
            return "header ended before it was complete"
        return "special token out of place in a header"
    if header.count(" to=") > 1:
        return "second recipient in one header"
    return "text that does not fit a header"
