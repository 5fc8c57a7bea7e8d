"""vLLM's request log -> the token ids of each request.

vLLM logs a request's prompt ids (`Received request <id>: ... prompt_token_ids: [...]`) and,
with `--enable-log-outputs`, its output ids (`Generated response <id>[ (streaming delta)]:
output: ..., output_token_ids: [...], finish_reason: ...`); streaming deltas are joined per
request in order. Rust reads the common `Generated response` line (`parse_vllm_bytes`); this
module's `parse_vllm_line` is the reference it is tested equal to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from harmony_doctor.errors import InputError
from harmony_doctor.harmony.vocab import VOCAB_SIZE
from harmony_doctor.inputs import log_words as words
from harmony_doctor.inputs.id_lists import Stream, finish, parse_id_list
from harmony_doctor.inputs.text_lines import numbered_lines
from harmony_doctor.inputs.token_sniff import GENERATED_RE, PROMPT_LINE_RE
from harmony_doctor.lazy_regex import Pattern
from harmony_doctor.models import TokenInput
from harmony_doctor.native import native_for, vllm_output_line

_FINISH_RE = Pattern(re.escape(words.VLLM_FINISH_KEY) + r"[:=]\s*'?(?P<reason>\w+)")


@dataclass(frozen=True)
class VllmRecord:
    """One vLLM request-log line that carries token ids."""

    request_id: str
    kind: Literal["output", "complete", "prompt"]
    ids: tuple[int, ...] | None  # None when the line logs `None`
    cut: bool  # the list lost its closing bracket
    finish_reason: str | None
    delta: bool = False  # one `(streaming delta)` of a streamed response


def parse_vllm_line(line: str, number: int) -> VllmRecord | None:
    """The token ids a vLLM request-log line carries, or None for any other line."""
    if "token_ids" not in line:
        return None
    generated = GENERATED_RE.search(line)
    if generated is not None:
        ids, cut = _ids_after(line, words.VLLM_OUTPUT_KEY, number)
        finish = _FINISH_RE.search(line[line.rfind(words.VLLM_FINISH_KEY) :])
        reason = finish["reason"] if finish else None
        if reason in words.VLLM_NO_REASONS:
            reason = None
        mode = generated["mode"]
        complete = mode == words.VLLM_COMPLETE
        kind: Literal["output", "complete"] = "complete" if complete else "output"
        return VllmRecord(generated["id"], kind, ids, cut, reason, delta=mode == words.VLLM_DELTA)
    prompt_line = PROMPT_LINE_RE.search(line)
    if prompt_line is not None and "prompt_token_ids" in line:
        ids, cut = _ids_after(line, "prompt_token_ids", number)
        return VllmRecord(prompt_line["id"], "prompt", ids, cut, None)
    return None


def parse_vllm_bytes(raw: bytes, number: int, native: bool | None = None) -> VllmRecord | None:
    """`parse_vllm_line` of the line's bytes decoded as UTF-8 (with replacement): Rust reads the
    common `Generated response` line and hands any other or doubtful one to `parse_vllm_line`,
    the reference it is tested equal to. `native`: whether to try Rust; None asks `use_native()`,
    which reads the environment (~1 us) at each call: a caller deciding once passes its answer."""
    if native_for(native):
        parsed = vllm_output_line(raw, VOCAB_SIZE)
        if parsed is not None:
            return VllmRecord(
                parsed.request_id,
                "complete" if parsed.complete else "output",
                parsed.ids,
                False,  # the extension only reads lists with their closing bracket
                parsed.finish_reason,
                parsed.delta,
            )
    return parse_vllm_line(raw.decode("utf-8", "replace"), number)


class RequestStreams:
    """Token ids of vLLM requests, gathered line by line (streaming deltas joined in order)."""

    def __init__(self) -> None:
        self.streams: dict[str, Stream] = {}

    def add(self, record: VllmRecord) -> None:
        stream = self.streams.setdefault(record.request_id, Stream(record.request_id))
        if record.kind == "prompt":
            if record.ids is not None:
                stream.prompt = list(record.ids)
            return
        if record.ids is not None:
            if record.kind == "complete":
                if len(record.ids) >= len(stream.tokens):
                    stream.tokens = list(record.ids)
            else:
                stream.tokens.extend(record.ids)
            stream.cut = stream.cut or record.cut
        if record.finish_reason is not None:
            stream.finish_reason = record.finish_reason

    def pop(self, request_id: str) -> TokenInput | None:
        """The finished request's stream as a TokenInput (None if it holds no output ids)."""
        stream = self.streams.pop(request_id, None)
        if stream is None or not stream.tokens:
            return None
        return finish(stream, "vllm-log", "log")


def vllm_streams(text: str) -> list[Stream]:
    """Per request: the prompt ids, and the output ids (streaming deltas joined in order)."""
    gathered = RequestStreams()
    for number, line in numbered_lines(text):
        record = parse_vllm_line(line, number)
        if record is not None:
            gathered.add(record)
    found = [s for s in gathered.streams.values() if s.tokens or s.prompt]
    if not found:
        raise InputError("no vLLM request-log lines with output_token_ids or prompt_token_ids")
    return [s for s in found if s.tokens] or found


def logged_completions(text: str) -> list[TokenInput]:
    """Every completion a vLLM request log carries as output token ids, one stream each."""
    try:
        streams = vllm_streams(text)
    except InputError:
        return []
    return [finish(s, "vllm-log", "log") for s in streams if s.tokens]


def _ids_after(line: str, key: str, number: int) -> tuple[tuple[int, ...] | None, bool]:
    """The id list after the last `key: [` in a log line, and whether its `]` is missing."""
    at = line.rfind(key)
    rest = line[at + len(key) :].lstrip(" :=")
    if rest.startswith(words.VLLM_NO_IDS):
        return None, False
    if not rest.startswith("["):
        raise InputError(f"line {number}: {key} is not followed by a list")
    close = rest.find("]")
    inner = rest[1:] if close < 0 else rest[1:close]
    column = len(line) - len(rest) + 2
    return tuple(parse_id_list(inner, number, column)), close < 0
