"""Records -> plain JSON-able dicts: the `--format json` contract, versioned by `schema`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from harmony_doctor.explain import LogExplanation
from harmony_doctor.faults.rules import RULES, Rule
from harmony_doctor.harmony.vocab import FIRST_SPECIAL, Vocab, harmony_version
from harmony_doctor.inputs.text_lines import bounded
from harmony_doctor.logs.words import MAX_TEXT
from harmony_doctor.models import (
    Diagnosis,
    Finding,
    LogError,
    Message,
    ParserResult,
    Recovery,
    RenderedPrompt,
    SalvagePiece,
    Shrink,
    TokenInput,
)

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


RECOVER_SCHEMA = "harmony-doctor.recover/1"
REPRO_SCHEMA = "harmony-doctor.repro/1"
RENDER_SCHEMA = "harmony-doctor.render/1"


def parser_result_record(result: ParserResult) -> dict[str, Any]:
    return {
        "available": result.available,
        "error": result.error,
        "raise_index": result.raise_index,
        "messages": list(result.messages),
    }


def piece_record(piece: SalvagePiece) -> dict[str, Any]:
    record = asdict(piece)
    record["span"] = list(piece.span)
    record["content"] = list(piece.content) if piece.content is not None else None
    return record


def recover_record(rec: Recovery, source: str) -> dict[str, Any]:
    """Strict, lenient and salvage; every salvaged piece says `certain` or `guessed`."""
    return {
        "schema": RECOVER_SCHEMA,
        "input": input_record(rec.input, source, rec.role, True) | {"strict": None},
        "harmony_version": harmony_version(),
        "strict": parser_result_record(rec.strict),
        "lenient": parser_result_record(rec.lenient),
        "salvage": {
            "pieces": [piece_record(p) for p in rec.pieces],
            "skipped": [{"span": list(s.span), "reason": s.reason} for s in rec.skipped],
            "analysis": list(rec.analysis),
            "final": rec.final,
            "tool_call": asdict(rec.tool_call) if rec.tool_call is not None else None,
        },
    }


def repro_record(
    result: Shrink, source: str, out_dir: str, written: Sequence[str]
) -> dict[str, Any]:
    return {
        "schema": REPRO_SCHEMA,
        "source": source,
        "harmony_version": harmony_version(),
        "role": result.role,
        "strict": result.strict,
        "kind": result.kind,
        "shape": result.shape,
        "original_error": result.original_error,
        "minimal_error": result.minimal_error,
        "original_tokens": len(result.original),
        "minimal": list(result.minimal),
        "tests": result.tests,
        "exhausted": result.exhausted,
        "out_dir": out_dir,
        "written": list(written),
    }


def render_record(prompt: RenderedPrompt, source: str) -> dict[str, Any]:
    return {
        "schema": RENDER_SCHEMA,
        "source": source,
        "harmony_version": harmony_version(),
        "style": prompt.style,
        "tokens": list(prompt.tokens),
        "text": prompt.text,
        "warnings": [asdict(w) for w in prompt.warnings],
    }


# --- explain on logs -------------------------------------------------------------------------


def log_token_record(token: int, vocab: Vocab | None) -> dict[str, Any]:
    """`{"id", "text", "special"}`; text is None when no vocabulary was loaded."""
    return {
        "id": token,
        "text": vocab.decode([token]) if vocab is not None else None,
        "special": token >= FIRST_SPECIAL,
    }


def log_finding_record(e: LogError, vocab: Vocab | None) -> dict[str, Any]:
    """One failure found in a log: the `findings` item of `explain` on log text."""
    header: dict[str, Any] | None = None
    if e.kind == "header_leftover":
        tokens = vocab.encode(e.header_remainder) if vocab and e.header_remainder else []
        header = {
            "remainder": e.header_remainder,
            "words": list(e.header_words),
            "truncated": e.remainder_truncated,
            "tokens": [log_token_record(t, vocab) for t in tokens],
            "reconstructed": e.reconstructed,
        }
        if e.words_unread:  # words in the middle of a remainder over the bound, not read
            header["unread_words"] = e.words_unread
        if e.words_cut:  # characters left out of the middle of words over the bound (at …)
            header["cut_characters"] = sum(e.words_cut)
    return {
        "kind": e.kind,
        "code": e.code,
        "severity": e.severity,
        "title": RULES[e.code].title,
        # The token-stream keys, for consumers that read both: no token positions in a log.
        "raise_index": None,
        "origin_index": None,
        "message_index": None,
        "harmony_error": _message(e) if e.harmony_error else None,
        "line": e.line,
        "span": list(e.span),
        "message": _message(e),
        "server": e.server,
        "harmony_version": e.harmony_version,
        "timestamp": e.timestamp,
        "pid": e.pid,
        "token": log_token_record(e.token, vocab) if e.token is not None else None,
        "header": header,
        "context": e.context,
        "expected": e.expected,
        "found": e.found,
        "cause": RULES[e.code].cause,
        "fix": RULES[e.code].fix,
        "refs": list(RULES[e.code].refs),
        "raw": e.raw,
    }


def log_explain_record(found: LogExplanation, source: str, vocab: Vocab | None) -> dict[str, Any]:
    """`explain --format json` on a log: its failures, then its completions replayed (when the
    log carries token ids), whether it showed anything Harmony-related at all, and what a
    description with no evidence names (`described`, as the text output says it)."""
    errors = found.errors
    faulty = any(e.severity == "error" for e in errors)
    record: dict[str, Any] = {
        "schema": EXPLAIN_SCHEMA,
        "input": {
            "source": source,
            "detected": "log",
            "format": "log",
            "lines": found.lines,
            "truncated": any(e.remainder_truncated for e in errors),
            "harmony_related": found.related,
        },
        "verdict": "fault" if faulty else "ok",
        "findings": [log_finding_record(e, vocab) for e in errors],
        "messages": [],
    }
    if found.described is not None:  # a description with no evidence: what it names
        described = found.described
        record["described"] = {
            "what": described.what,
            "code": described.code,
            "paste": described.paste,
        }
    if found.completions:
        assert vocab is not None, "completions were replayed with a vocabulary"
        record["completions"] = [explain_record(d, source, vocab) for d in found.completions]
        if any(d.verdict == "fault" for d in found.completions):
            record["verdict"] = "fault"
    return record


def rule_record(rule: Rule) -> dict[str, Any]:
    """One entry of the diagnosis catalogue (`harmony-doctor rules --format json`)."""
    return {
        "code": rule.code,
        "kind": rule.kind,
        "severity": rule.severity,
        "title": rule.title,
        "cause": rule.cause,
        "fix": rule.fix,
        "refs": list(rule.refs),
    }


def _message(e: LogError) -> str:
    """`e`'s message as logged, or with the count of what its reader left out of the middle."""
    return bounded(e.message, MAX_TEXT, e.message_cut) if e.message_cut else e.message
