"""A list of token ids as text or JSON gives it -> checked ids; the ids gathered for one
request -> one TokenInput.

The token readers (`tokens` for pastes and JSON documents, `vllm_requests` for vLLM's request
log) share these: an id out of the range openai-harmony accepts is named with its line and
column, each id is the one shared int of its value, and a stream says what it lacks (a list a
log cut, a `stop` with no stop token).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from harmony_doctor.errors import InputError
from harmony_doctor.harmony.vocab import STOP_TOKENS, VOCAB_SIZE, harmony_token_limit, id_objects
from harmony_doctor.lazy_regex import Pattern
from harmony_doctor.models import TokenInput

_INT_RE = Pattern(r"-?\d+")
_LONE_SIGN_RE = Pattern(r"-(?!\d)")
_PLAIN_IDS = Pattern(r"[0-9, ]*")  # digits, commas and spaces only (ASCII: no other digits)


@dataclass
class Stream:
    """Token ids gathered for one request (and choice) while reading."""

    label: str
    tokens: list[int] = field(default_factory=list)
    prompt: list[int] | None = None
    finish_reason: str | None = None
    cut: bool = False  # a list ended without its closing bracket
    line: int = 1  # the line it was first seen on


class HugeId(int):
    """A JSON integer longer than any id (Python refuses past 4,300 digits): its length kept."""

    digits: int

    def __new__(cls, digits: str) -> HugeId:
        made = super().__new__(cls, -1)
        made.digits = len(digits.lstrip("-"))
        return made


def parse_int(digits: str) -> int:  # a JSON integer: an id, or far too long to be one
    return int(digits) if len(digits) <= 20 else HugeId(digits)


def _out_of_range(shown: str) -> str:
    return f"{shown} is outside the range openai-harmony accepts, 0..{harmony_token_limit() - 1}"


def _position(text: str, offset: int, line: int, column: int) -> tuple[int, int]:
    before = text[:offset]
    newlines = before.count("\n")
    if newlines:
        return line + newlines, offset - before.rfind("\n")
    return line, column + offset


def parse_id_list(text: str, line: int, column: int) -> list[int]:
    """Ints separated by commas/whitespace, brackets optional; errors give line and column."""
    if _PLAIN_IDS.fullmatch(text) is not None:
        # The common shape (a logged list): no sign, no stray text. Anything out of range takes
        # the loop below, which names the offending token; each id is the shared object.
        parts = text.replace(",", " ").split()
        if all(len(digits) <= 9 for digits in parts):
            plain = [int(digits) for digits in parts]
            if not plain or max(plain) < VOCAB_SIZE:
                return list(map(id_objects().__getitem__, plain))
    tokens: list[int] = []
    for match in _INT_RE.finditer(text):
        digits = match.group()
        value = int(digits) if len(digits) <= 9 else -1  # huge: out of range anyway
        if not _in_range(value):
            where = _position(text, match.start(), line, column)
            shown = digits if len(digits) <= 20 else f"an id of {len(digits):,} digits"
            raise InputError(
                f"token {len(tokens)} at line {where[0]}, column {where[1]}: "
                + _out_of_range(shown)
            )
        tokens.append(value)
    leftover = _INT_RE.sub("", text).strip(" \t\r\n,[]()")
    if leftover.replace(",", "").strip():
        offset = next((i for i, c in enumerate(text) if c not in " \t\r\n,[]()-0123456789"), -1)
        if offset < 0:  # all that is stray is a sign without digits (`[1, -, 2]`)
            lone = _LONE_SIGN_RE.search(text)  # (every `-` followed by a digit starts an id)
            offset = lone.start() if lone is not None else 0
        where = _position(text, offset, line, column)
        raise InputError(f"unexpected {text[offset]!r} at line {where[0]}, column {where[1]}")
    return tokens


def check_range(values: list[Any], where: str = "") -> list[int]:
    """The ids of a JSON list, each checked: an integer openai-harmony accepts."""
    for index, value in enumerate(values):
        if isinstance(value, HugeId):
            shown = f"an id of {value.digits:,} digits"
            raise InputError(f"{where}token {index}: " + _out_of_range(shown))
        if type(value) is not int:
            raise InputError(f"{where}token {index} is {json.dumps(value)[:40]}, not an integer")
        if not _in_range(value):
            raise InputError(f"{where}token {index}: " + _out_of_range(str(value)))
    shared = id_objects()  # each id the one int of its value (8 bytes an id held, not 36)
    return [shared[value] if value < VOCAB_SIZE else value for value in values]


def _in_range(value: int) -> bool:
    """Whether openai-harmony accepts the id; its own table decides past VOCAB_SIZE."""
    if 0 <= value < VOCAB_SIZE:
        return True
    return VOCAB_SIZE <= value < harmony_token_limit()


def select(labels: list[str], request: str | None) -> str:
    """The label of the one stream to read: `request`'s (a response id picks its choice when
    it has one), or the only one; an error names the streams to choose from."""
    if request is not None:
        chosen = [label for label in labels if request in (label, label.split("#")[0])]
        if not chosen:
            known = ", ".join(labels[:5])
            raise InputError(f"no request {request!r} in the input (found: {known})")
        labels = chosen
    if len(labels) > 1:
        shown = ", ".join(label or "(unnamed)" for label in labels[:5])
        more = f" and {len(labels) - 5} more" if len(labels) > 5 else ""
        raise InputError(
            f"input holds {len(labels)} token streams ({shown}{more}); choose one with --request"
        )
    return labels[0]


def finish(stream: Stream, fmt: str, detected: Literal["tokens", "log"]) -> TokenInput:
    """The stream as the record explain reads, with a note of what it lacks."""
    notes: list[str] = []
    tokens = stream.tokens
    prompt = tuple(stream.prompt) if stream.prompt is not None else None
    if not tokens and prompt:
        tokens, prompt = list(prompt), None
        notes.append("only prompt token ids were found; they are replayed as the stream")
    if not tokens:
        raise InputError("input is empty: the token list has no ids")
    truncated = stream.cut
    if stream.cut:
        notes.append(
            "the token list ends without its closing bracket: the log cut it (vLLM "
            "--max-log-len cuts lists without a marker); the ids after the cut are unknown"
        )
    if stream.finish_reason == "stop" and tokens[-1] not in STOP_TOKENS:
        truncated = True
        notes.append(
            "finish_reason is stop but the stream does not end with a stop token: the log "
            "probably cut the list (vLLM --max-log-len); the tokens after the cut are unknown"
        )
    return TokenInput(
        tokens=tuple(tokens),
        detected=detected,
        format=fmt,
        request_id=stream.label or None,
        finish_reason=stream.finish_reason,
        truncated=truncated,
        prompt_tokens=prompt,
        notes=tuple(notes),
    )
