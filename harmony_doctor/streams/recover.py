"""What a user would have got back from a broken stream: openai-harmony strict, lenient, salvage.

The salvage keeps every message openai-harmony parses (`certain`), then walks past each fault:
it resynchronises at the next `<|start|>` from which openai-harmony parses again, and reads the
broken stretch in between as best it can (`guessed`, with the reason). Every piece carries the
token span it came from, so nothing guessed can pass for parsed output.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from harmony_doctor.choices import ParseRole
from harmony_doctor.errors import VocabError
from harmony_doctor.faults.catalogue import kind_of_error
from harmony_doctor.harmony.replay import replay
from harmony_doctor.harmony.spec import KNOWN_ROLES
from harmony_doctor.harmony.vocab import CALL, CHANNEL, MESSAGE, RETURN, START, STOP_TOKENS, Vocab
from harmony_doctor.models import (
    Confidence,
    ParserResult,
    Received,
    Recovery,
    SalvagePiece,
    SkippedSpan,
    TokenInput,
    ToolCall,
)

_RECIPIENT_WORD = re.compile(r"to=(\S+)")


def recover(inp: TokenInput, vocab: Vocab, role: ParseRole) -> Recovery:
    """Run both openai-harmony modes and our salvage over one stream."""
    tokens = inp.tokens
    strict = _parser_result(vocab, tokens, role, strict=True)
    lenient = _parser_result(vocab, tokens, role, strict=False)
    pieces, skipped = salvage(tokens, vocab, role)
    analysis = tuple(i for i, p in enumerate(pieces) if p.channel == "analysis")
    answers = [i for i, p in enumerate(pieces) if p.channel == "final" and p.content is not None]
    final = answers[-1] if answers else None
    return Recovery(
        input=inp,
        role=role,
        strict=strict,
        lenient=lenient,
        pieces=tuple(pieces),
        skipped=tuple(skipped),
        analysis=analysis,
        final=final,
        tool_call=find_tool_call(pieces),
    )


def _parser_result(
    vocab: Vocab, tokens: Sequence[int], role: ParseRole, strict: bool
) -> ParserResult:
    try:
        outcome = vocab.harmony_parse(tokens, role, strict)
    except VocabError as exc:  # openai-harmony < 0.0.5 has no lenient mode
        return ParserResult(strict, str(exc), None, (), available=False)
    return ParserResult(strict, outcome.error, outcome.raise_index, outcome.messages)


def received(messages: Sequence[dict[str, Any]]) -> Received:
    """Reasoning, final answer and tool call in openai-harmony's messages, as a client sees them."""
    analysis = [str(m.get("text") or "") for m in messages if m.get("channel") == "analysis"]
    finals = [str(m.get("text") or "") for m in messages if m.get("channel") == "final"]
    calls = [
        m
        for m in messages
        if m.get("role") == "assistant" and m.get("recipient") not in (None, "", "assistant")
    ]
    return Received(
        analysis="\n".join(analysis) if analysis else None,
        final=finals[-1] if finals else None,
        tool_recipient=str(calls[-1]["recipient"]) if calls else None,
        tool_arguments=str(calls[-1].get("text") or "") if calls else None,
    )


def find_tool_call(pieces: Sequence[SalvagePiece]) -> ToolCall | None:
    """The last assistant message addressed to a tool, with its arguments."""
    for index in range(len(pieces) - 1, -1, -1):
        p = pieces[index]
        if p.role != "assistant" or not p.recipient or p.recipient == "assistant" or not p.content:
            continue
        try:
            json.loads(p.text)
            valid = True
        except (ValueError, RecursionError):  # arguments nested too deeply are not valid either
            valid = False
        name = p.recipient.split(".", 1)[1] if p.recipient.startswith("functions.") else p.recipient
        return ToolCall(
            piece=index,
            confidence=p.confidence,
            recipient=p.recipient,
            name=name,
            arguments=p.text,
            arguments_json=valid,
            complete=p.terminator == CALL,
        )
    return None


# --- salvage ---------------------------------------------------------------------------------


def salvage(
    tokens: Sequence[int], vocab: Vocab, role: ParseRole
) -> tuple[list[SalvagePiece], list[SkippedSpan]]:
    """Every message we can account for, in order, and the tokens we could not place."""
    pieces: list[SalvagePiece] = []
    skipped: list[SkippedSpan] = []
    pos, mode = 0, role
    how = "parsed by openai-harmony (strict)"
    while True:
        segment = tokens[pos:]
        outcome = vocab.harmony_parse(segment, mode, strict=True)
        parsed = _harmony_pieces(segment, outcome.messages, vocab, mode, pos, "certain", how)
        pieces.extend(parsed)
        if outcome.error is None or outcome.raise_index is None:
            break
        raise_at = pos + outcome.raise_index
        done_to = parsed[-1].span[1] if parsed else pos
        if kind_of_error(outcome.error) == "unexpected_token" and raise_at < len(tokens):
            pos = _past_stray(tokens, raise_at, vocab, pieces, skipped)
        else:
            resync = _resync(tokens, vocab, done_to + 1)
            _read_broken(
                tokens, done_to, resync, vocab, mode if done_to == pos else "none", pieces, skipped
            )
            pos = resync
        mode = "none"
        how = f"parsed by openai-harmony (strict), resynchronised at token {pos}"
        if pos >= len(tokens):
            break
    return pieces, skipped


def _harmony_pieces(
    segment: Sequence[int],
    messages: Sequence[dict[str, object]],
    vocab: Vocab,
    mode: ParseRole,
    base: int,
    confidence: Confidence,
    how: str,
    shift: int = 0,
) -> list[SalvagePiece]:
    """openai-harmony's messages, placed on the original tokens with the replay's positions.

    `shift` is the number of tokens we inserted at the front of `segment` (guesses only).
    """
    walk = replay(segment, vocab, mode, strict=True).messages
    out: list[SalvagePiece] = []
    for i, message in enumerate(messages):
        if i < len(walk):
            m = walk[i]
            lo = m.start_index if m.start_index is not None else m.header[0]
            hi = m.terminator_index + 1 if m.terminator_index is not None else m.content[1]
            span = (base + max(lo - shift, 0), base + hi - shift)
            content: tuple[int, int] | None = (
                base + m.content[0] - shift,
                base + m.content[1] - shift,
            )
            terminator = m.terminator
        else:  # the replay stopped short of openai-harmony: keep the message, place it loosely
            span, content, terminator = (base, base + len(segment) - shift), None, None
        out.append(
            SalvagePiece(
                confidence=confidence,
                span=span,
                content=content,
                role=str(message.get("role") or "assistant"),
                name=_str_or_none(message.get("name")),
                channel=_str_or_none(message.get("channel")),
                recipient=_str_or_none(message.get("recipient")),
                content_type=_str_or_none(message.get("content_type")),
                text=str(message.get("text") or ""),
                terminator=terminator,
                how=how,
            )
        )
    return out


def _str_or_none(value: object) -> str | None:
    return None if value is None else str(value)


def _next_start(tokens: Sequence[int], start: int) -> int:
    return next((i for i in range(start, len(tokens)) if tokens[i] == START), len(tokens))


def _resync(tokens: Sequence[int], vocab: Vocab, start: int) -> int:
    """The first `<|start|>` at or after `start` from which openai-harmony parses a message."""
    i = _next_start(tokens, start)
    while i < len(tokens):
        stop = next((k for k in range(i + 1, len(tokens)) if tokens[k] in STOP_TOKENS), None)
        end = len(tokens) if stop is None else stop + 1
        outcome = vocab.harmony_parse(tokens[i:end], "none", strict=True)
        if outcome.error is None and outcome.messages:
            return i
        i = _next_start(tokens, i + 1)
    return len(tokens)


def _past_stray(
    tokens: Sequence[int],
    at: int,
    vocab: Vocab,
    pieces: list[SalvagePiece],
    skipped: list[SkippedSpan],
) -> int:
    """Handle a token where `<|start|>` was expected; return where to carry on."""
    token = tokens[at]
    if vocab.is_special(token):
        after = vocab.decode([tokens[at - 1]]) if at > 0 else "the start"
        skipped.append(
            SkippedSpan(
                (at, at + 1), f"{vocab.decode([token])} after {after}, where <|start|> was expected"
            )
        )
        return at + 1
    end = _next_start(tokens, at + 1)
    segment = list(tokens[at:end])
    # Text where a header belongs: the model most often dropped `<|start|>assistant<|channel|>`
    # (`commentary to=...` right after `<|call|>`), sometimes only `<|start|>assistant`.
    for prefix, assumed in (
        ([CHANNEL], "<|start|>assistant<|channel|>"),
        ([], "<|start|>assistant"),
    ):
        candidate = prefix + segment
        outcome = vocab.harmony_parse(candidate, "assistant", strict=True)
        if outcome.messages:
            how = (
                f"guessed: assumed a missing {assumed} before token {at}; "
                "openai-harmony parses the rest"
            )
            parsed = _harmony_pieces(
                candidate,
                outcome.messages,
                vocab,
                "assistant",
                at,
                "guessed",
                how,
                shift=len(prefix),
            )
            pieces.extend(parsed)
            if parsed[-1].span[1] < end:
                skipped.append(
                    SkippedSpan((parsed[-1].span[1], end), "text after the guessed message")
                )
            return end
    skipped.append(SkippedSpan((at, end), "text outside any message, where <|start|> was expected"))
    return end


def _guessed(
    span: tuple[int, int],
    content: tuple[int, int] | None,
    role: str,
    fields: tuple[str | None, str | None, str | None],
    text: str,
    terminator: int | None,
    how: str,
) -> SalvagePiece:
    """A piece whose boundaries or fields are our inference; `fields`: channel, recipient,
    content type."""
    channel, recipient, content_type = fields
    return SalvagePiece(
        confidence="guessed",
        span=span,
        content=content,
        role=role,
        name=None,
        channel=channel,
        recipient=recipient,
        content_type=content_type,
        text=text,
        terminator=terminator,
        how=how,
    )


def _read_broken(
    tokens: Sequence[int],
    lo: int,
    hi: int,
    vocab: Vocab,
    mode: ParseRole,
    pieces: list[SalvagePiece],
    skipped: list[SkippedSpan],
) -> None:
    """Guess what the broken message in tokens[lo:hi] was meant to be."""
    if lo >= hi:
        return
    header_from = lo + 1 if tokens[lo] == START else lo
    stop = next((k for k in range(header_from, hi) if tokens[k] in STOP_TOKENS), hi)
    body = next((k for k in range(header_from, stop) if tokens[k] == MESSAGE), None)
    header_end = stop if body is None else body
    channel_at = next(
        (k for k in range(header_from, header_end) if tokens[k] == CHANNEL), header_end
    )
    role, recipient, prose = _role_part(vocab.decode(tokens[header_from:channel_at]), mode)
    channel, recipient2, content_type = _channel_part(vocab.decode(tokens[channel_at:header_end]))
    recipient = recipient or recipient2
    terminator = tokens[stop] if stop < hi else None
    end = stop + 1 if stop < hi else hi
    if prose is not None:
        # Text where the header belongs: reasoning (or a refusal) written without its header.
        prose_end = channel_at if channel_at < header_end or body is not None else end
        guess = "final" if body is None and terminator == RETURN else "analysis"
        how = (
            f"guessed: text where a header belongs, taken as {guess} "
            "(the model wrote it without <|channel|>...<|message|>)"
        )
        closed = terminator if prose_end == end else None
        content = (header_from, min(channel_at, stop))
        pieces.append(
            _guessed((lo, prose_end), content, role, (guess, None, None), prose, closed, how)
        )
        if prose_end == end:
            _skip_rest(end, hi, skipped)
            return
    if body is None and prose is None:
        how = "guessed: a header that never reached <|message|>; no content"
        fields = (channel, recipient, content_type)
        pieces.append(_guessed((lo, end), None, role, fields, "", terminator, how))
    elif body is not None:
        how = "guessed: header fields read from a header openai-harmony rejected"
        if channel is None and terminator == RETURN:
            channel, how = "final", how + "; channel taken as final (it ended in <|return|>)"
        pieces.append(
            SalvagePiece(
                confidence="guessed",
                span=(channel_at if prose is not None else lo, end),
                content=(body + 1, stop),
                role=role,
                name=None,
                channel=channel,
                recipient=recipient,
                content_type=content_type,
                text=vocab.decode(tokens[body + 1 : stop]),
                terminator=terminator,
                how=how,
            )
        )
    _skip_rest(end, hi, skipped)


def _skip_rest(lo: int, hi: int, skipped: list[SkippedSpan]) -> None:
    if lo < hi:
        skipped.append(
            SkippedSpan((lo, hi), "tokens between a broken message and the next message")
        )


def _role_part(text: str, mode: ParseRole) -> tuple[str, str | None, str | None]:
    """(role, recipient, prose) from the header text before `<|channel|>`."""
    words = text.split()
    role = "assistant"
    if words and (words[0] == "assistant" or (mode == "none" and words[0] in KNOWN_ROLES)):
        role = words.pop(0)
        text = text.lstrip()[len(role) :]
    recipient = None
    if words and _RECIPIENT_WORD.fullmatch(words[0]):
        recipient = words.pop(0)[3:]
    if not words:
        return role, recipient, None
    return role, None, text


def _channel_part(text: str) -> tuple[str | None, str | None, str | None]:
    """(channel, recipient, content type) from the header text from `<|channel|>` on."""
    if not text.startswith("<|channel|>"):
        return None, None, None
    rest = text[len("<|channel|>") :].replace("<|constrain|>", " <|constrain|>")
    words = rest.split()
    channel = re.split(r"<", words[0])[0] if words and not rest[:1].isspace() else None
    recipient = next((w[3:] for w in words[1:] if w.startswith("to=")), None)
    content_type = next((w for w in words[1:] if w.endswith("json")), None)
    return channel or None, recipient, content_type
