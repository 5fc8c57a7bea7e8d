"""Token stream -> findings: openai-harmony's verdict, our replay's positions, and the rules."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from harmony_doctor.choices import ParseRole
from harmony_doctor.faults import rules
from harmony_doctor.faults.catalogue import kind_of_error
from harmony_doctor.faults.classify import HEADER_SHAPE, FaultContext, classify
from harmony_doctor.harmony.replay import replay
from harmony_doctor.harmony.spec import SPEC_CHANNELS
from harmony_doctor.harmony.vocab import (
    CHANNEL,
    CONSTRAIN,
    START,
    STOP_TOKENS,
    Vocab,
)
from harmony_doctor.models import (
    Diagnosis,
    ErrorKind,
    Finding,
    Kind,
    Message,
    Replay,
    Severity,
    TokenInput,
)

ROLE_NOTE = (
    "the stream starts with <|start|>: if it holds whole messages (a prompt and its "
    "completion), explain it with --role none; read as a completion, the doubled start is "
    "itself the fault"
)


def replay_is_clean(tokens: Sequence[int], vocab: Vocab, role: ParseRole) -> bool:
    """Our replay alone finds neither a fault nor a warning in the stream.

    openai-harmony clones its whole encoding for every parser (about 0.5 ms), which dominates
    scanning logs that carry every completion's token ids. The replay mirrors its parser and
    agrees with it on every generated stream of the differential suite (100,000 per role and
    mode in the deep run), so scan uses it to skip streams with nothing to report; anything it
    would report still goes through `diagnose`, whose verdict comes from openai-harmony.
    """
    walk = replay(tokens, vocab, role, strict=True, origin=False)
    return walk.fault is None and not _warnings(walk.messages, tokens, vocab)


def diagnose(
    inp: TokenInput,
    vocab: Vocab,
    role: ParseRole,
    strict: bool = True,
    open_stream: bool = False,
) -> Diagnosis:
    """Replay the stream, ask openai-harmony for the verdict, and explain what differs.

    `open_stream`: the stream may go on (a prompt, a partial generation, as vLLM's tool-parser
    tests feed it), so its end is not checked: openai-harmony runs without `process_eos`.
    """
    tokens = inp.tokens
    if role == "assistant" and tokens and tokens[0] == START:
        inp = replace(inp, notes=(*inp.notes, ROLE_NOTE))
    walk = replay(tokens, vocab, role, strict, open_stream=open_stream)
    truth = vocab.harmony_parse(tokens, role, strict, open_stream=open_stream)
    lenient = truth
    if strict and _stop_inside_header(walk, tokens):
        lenient = vocab.harmony_parse(tokens, role, strict=False, open_stream=open_stream)
    findings: list[Finding] = []
    disagreements: list[str] = []

    if truth.error is not None and truth.raise_index is not None:
        kind = kind_of_error(truth.error)
        ours = walk.fault
        if kind is None:
            kind = ours.kind if ours else "header_leftover"
            disagreements.append(
                f"openai-harmony raised an error this tool does not know: {truth.error}"
            )
        if ours is None:
            disagreements.append(
                f"the replay found no fault, openai-harmony raised at token {truth.raise_index}"
            )
        elif (ours.kind, ours.raise_index) != (kind, truth.raise_index):
            disagreements.append(
                f"the replay expected {ours.kind} at token {ours.raise_index}, openai-harmony "
                f"raised {kind} at token {truth.raise_index}"
            )
        findings.append(_error_finding(kind, truth.error, truth.raise_index, walk, tokens, vocab))
    elif walk.fault is not None:
        disagreements.append(
            f"the replay expected {walk.fault.kind} at token {walk.fault.raise_index}, "
            "openai-harmony accepted the stream"
        )
    findings.extend(_warnings(walk.messages, tokens, vocab))
    return Diagnosis(
        input=inp,
        replay=walk,
        harmony_error=truth.error,
        harmony_raise_index=truth.raise_index,
        findings=tuple(findings),
        lenient_messages=lenient.messages,
        lenient_error=lenient.error,
        disagreements=tuple(disagreements),
    )


def _stop_inside_header(walk: Replay, tokens: Sequence[int]) -> bool:
    """Lenient parsing differs from strict only at a stop token in a header (openai-harmony
    0.0.8's StreamableParser): without one, the lenient run would repeat the strict one."""
    spans = [m.header for m in walk.messages]
    if walk.fault is not None and walk.fault.header is not None:
        spans.append(walk.fault.header)
    return any(t in STOP_TOKENS for lo, hi in spans for t in tokens[lo:hi])


def _header_span(
    raise_index: int, tokens: Sequence[int], walk_header: tuple[int, int] | None
) -> tuple[int, int]:
    """The header being parsed when harmony raised: the replay's, else back to `<|start|>`."""
    if walk_header is not None:
        return walk_header
    start = max(
        (i for i in range(min(raise_index, len(tokens)) - 1, -1, -1) if tokens[i] == START),
        default=-1,
    )
    return (start + 1, raise_index)


def _error_finding(
    kind: ErrorKind,
    error: str,
    raise_index: int,
    walk: Replay,
    tokens: Sequence[int],
    vocab: Vocab,
) -> Finding:
    fault = walk.fault if walk.fault and walk.fault.raise_index == raise_index else None
    origin = raise_index
    if walk.origin_index is not None and walk.origin_index < raise_index:
        origin = walk.origin_index
    token = tokens[raise_index] if raise_index < len(tokens) else None
    previous = tokens[raise_index - 1] if 0 < raise_index <= len(tokens) else None
    span: tuple[int, int] | None = None
    header_text: str | None = None
    if kind != "unexpected_token":
        span = _header_span(raise_index, tokens, fault.header if fault else None)
        header_text = vocab.decode(tokens[span[0] : span[1]])
    ctx = FaultContext(
        kind=kind,
        header_text=header_text,
        leftover=fault.detail if fault and kind == "header_leftover" else None,
        token=token if kind == "unexpected_token" else None,
        previous=previous if kind == "unexpected_token" else None,
        role_word=fault.detail if fault and kind == "unknown_role" else None,
        prompt_end=kind == "header_eos" and _ends_like_prompt(tokens, vocab),
    )
    rule = classify(ctx)
    expected, found = _expected_found(
        kind, raise_index, origin, walk.origin_reason, tokens, vocab, header_text, span
    )
    message_index = fault.message_index if fault else len(walk.messages)
    at = (raise_index, origin, message_index)
    return _finding(rule, kind, "error", at, error, (expected, found), span)


def _ends_like_prompt(tokens: Sequence[int], vocab: Vocab) -> bool:
    """The stream ends in `<|start|>assistant`, where a rendered prompt hands over to the model."""
    assistant = vocab.encode("assistant")
    tail = len(assistant) + 1
    return len(tokens) > tail and list(tokens[-tail:]) == [START, *assistant]


def describe_token(tokens: Sequence[int], index: int, vocab: Vocab) -> str:
    """`token 12 " to" (id 316)`, or `end of stream` past the last token."""
    if index >= len(tokens):
        return f"end of stream (after {len(tokens)} tokens)"
    token = tokens[index]
    return f"token {index} {vocab.decode([token])!r} (id {token})"


def _expected_found(
    kind: ErrorKind,
    raise_index: int,
    origin: int,
    reason: str | None,
    tokens: Sequence[int],
    vocab: Vocab,
    header_text: str | None,
    span: tuple[int, int] | None,
) -> tuple[str, str]:
    at_origin = describe_token(tokens, origin, vocab)
    why = f": {reason}" if reason and origin < raise_index else ""
    match kind:
        case "header_leftover":
            return f"a header: {HEADER_SHAPE}", f"{at_origin}{why}"
        case "unexpected_token":
            return "<|start|> (id 200006) to open the next message", f"{at_origin}{why}"
        case "unknown_role":
            return "a role (assistant, user, system, developer, tool) or NAME to=RECIPIENT", (
                f"header {header_text!r}; first bad {at_origin}{why}"
            )
        case "empty_channel":
            return "a channel name right after <|channel|>", f"{at_origin}{why}"
        case "header_eos":
            size = (span[1] - span[0]) if span else 0
            return "<|message|> to close the header", (
                f"end of stream after {size} header tokens {header_text!r}"
            )
        case "missing_role":
            return "a role after <|start|>", f"<|message|> right after <|start|> at {at_origin}"
        case "header_decode":
            return "header tokens that decode as UTF-8", f"invalid UTF-8 in header {at_origin}"


def _warnings(messages: Sequence[Message], tokens: Sequence[int], vocab: Vocab) -> list[Finding]:
    out: list[Finding] = []
    for m in messages:
        lo, hi = m.header
        header_tokens = tokens[lo:hi]
        if m.channel is not None and m.channel not in SPEC_CHANNELS and not m.recovered:
            at = _index_after(header_tokens, CHANNEL, lo)
            out.append(
                _warning(
                    "HD201",
                    m,
                    at,
                    "analysis, commentary or final",
                    f"channel {m.channel!r}",
                    (lo, hi),
                )
            )
        if m.recipient is not None and m.recipient.startswith("<|constrain|>"):
            at = _index_of(header_tokens, CONSTRAIN, lo)
            out.append(
                _warning(
                    "HD202",
                    m,
                    at,
                    "a recipient before <|constrain|>",
                    f"recipient {m.recipient!r}",
                    (lo, hi),
                )
            )
        elif _has_markup(m):
            at = next(
                (
                    lo + k
                    for k, t in enumerate(header_tokens)
                    if vocab.is_special(t) and t != CHANNEL and t != CONSTRAIN
                ),
                lo,
            )
            out.append(
                _warning(
                    "HD203",
                    m,
                    at,
                    "plain names in the header",
                    f"header fields {m.channel!r}/{m.recipient!r}",
                    (lo, hi),
                )
            )
        c_lo, c_hi = m.content
        leaks = (
            []
            if m.recovered
            else [c_lo + k for k, t in enumerate(tokens[c_lo:c_hi]) if vocab.is_special(t)]
        )
        if leaks:
            names = sorted({vocab.decode([tokens[i]]) for i in leaks})
            out.append(
                _warning(
                    "HD203",
                    m,
                    leaks[0],
                    "ordinary text inside message content",
                    f"{len(leaks)} special token(s) in content: {', '.join(names[:5])}",
                    (c_lo, c_hi),
                )
            )
        if m.role == "assistant" and m.channel is None and not m.recovered:
            out.append(
                _warning(
                    "HD204",
                    m,
                    lo,
                    "<|channel|>CHANNEL in the header",
                    "an assistant header without a channel",
                    (lo, hi),
                )
            )
    return out


def _warning(
    code: str, m: Message, origin: int, expected: str, found: str, span: tuple[int, int]
) -> Finding:
    rule = rules.RULES[code]
    return _finding(
        rule, rule.kind, "warning", (None, origin, m.index), None, (expected, found), span
    )


def _finding(
    rule: rules.Rule,
    kind: Kind,
    severity: Severity,
    at: tuple[int | None, int | None, int | None],
    harmony_error: str | None,
    expected_found: tuple[str, str],
    span: tuple[int, int] | None,
) -> Finding:
    """A finding told by its rule; `at` is (raise index, origin index, message index)."""
    raise_index, origin, message_index = at
    expected, found = expected_found
    return Finding(
        kind=kind,
        code=rule.code,
        severity=severity,
        title=rule.title,
        raise_index=raise_index,
        origin_index=origin,
        message_index=message_index,
        harmony_error=harmony_error,
        expected=expected,
        found=found,
        cause=rule.cause,
        fix=rule.fix,
        span=span,
    )


def _index_of(tokens: Sequence[int], token: int, offset: int) -> int:
    return offset + next((k for k, t in enumerate(tokens) if t == token), 0)


def _index_after(tokens: Sequence[int], token: int, offset: int) -> int:
    at = _index_of(tokens, token, offset)
    return at + 1 if at - offset < len(tokens) and tokens[at - offset] == token else at


def _has_markup(m: Message) -> bool:
    """Special-token text in a header field (a leading <|constrain|> is the content type's)."""
    content_type = (m.content_type or "").removeprefix("<|constrain|>")
    return any("<|" in field for field in (m.recipient or "", m.channel or "", content_type))
