"""Records -> plain JSON-able dicts: the `--format json` contract, versioned by `schema`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from harmony_doctor.models import Diagnosis, Finding, Message, TokenInput
from harmony_doctor.vocab import Vocab, harmony_version

EXPLAIN_SCHEMA = "harmony-doctor.explain/1"
DECODE_SCHEMA = "harmony-doctor.decode/1"


def token_record(tokens: Sequence[int], index: int, vocab: Vocab) -> dict[str, Any] | None:
    if not 0 <= index < len(tokens):
        return None
    token = tokens[index]
    return {
        "index": index,
        "id": token,
        "text": vocab.decode([token]),
        "special": vocab.is_special(token),
    }


def input_record(inp: TokenInput, source: str, role: str, strict: bool) -> dict[str, Any]:
    return {
        "source": source,
        "detected": inp.detected,
        "format": inp.format,
        "tokens": len(inp.tokens),
        "request_id": inp.request_id,
        "finish_reason": inp.finish_reason,
        "truncated": inp.truncated,
        "prompt_tokens": len(inp.prompt_tokens) if inp.prompt_tokens is not None else None,
        "notes": list(inp.notes),
        "role": role,
        "strict": strict,
    }


def finding_record(f: Finding, tokens: Sequence[int], vocab: Vocab) -> dict[str, Any]:
    record = asdict(f)
    record["span"] = list(f.span) if f.span else None
    record["origin_token"] = (
        token_record(tokens, f.origin_index, vocab) if f.origin_index is not None else None
    )
    record["raise_token"] = (
        token_record(tokens, f.raise_index, vocab) if f.raise_index is not None else None
    )
    return record


def message_record(m: Message) -> dict[str, Any]:
    record = asdict(m)
    record["header"] = list(m.header)
    record["content"] = list(m.content)
    return record


def explain_record(d: Diagnosis, source: str, vocab: Vocab) -> dict[str, Any]:
    tokens = d.input.tokens
    return {
        "schema": EXPLAIN_SCHEMA,
        "input": input_record(d.input, source, d.replay.role, d.replay.strict),
        "verdict": d.verdict,
        "harmony_version": harmony_version(),
        "findings": [finding_record(f, tokens, vocab) for f in d.findings],
        "messages": [message_record(m) for m in d.replay.messages],
        "lenient": {"error": d.lenient_error, "messages": list(d.lenient_messages)},
        "disagreements": list(d.disagreements),
    }


def decode_record(inp: TokenInput, source: str, vocab: Vocab) -> dict[str, Any]:
    tokens = inp.tokens
    return {
        "schema": DECODE_SCHEMA,
        "input": input_record(inp, source, "n/a", True) | {"role": None, "strict": None},
        "text": vocab.decode(tokens),
        "tokens": [token_record(tokens, i, vocab) for i in range(len(tokens))],
    }
