"""Whole inputs that are one token stream (ids, JSON, Harmony text), judged as explain does.

A log is read line by line (scan/source.py). A small file that holds one completion instead (a
JSON list of ids, a `return_token_ids` response, Harmony text) has no log line to find: `scan`
reads it whole and asks explain's own decision (`explain.explain_text`) what it is, so that
`explain FILE` and `scan FILE` report the same failures. Anything explain reads as a log, or
refuses, goes on to the log reader with none of its bytes lost.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harmony_doctor.choices import ParseRole
from harmony_doctor.errors import InputError
from harmony_doctor.inputs.files import CHUNK, Readable
from harmony_doctor.inputs.token_sniff import detect_format, may_hold_tokens

if TYPE_CHECKING:
    from harmony_doctor.harmony.vocab import Vocab
    from harmony_doctor.models import Diagnosis

# Inputs up to this size are looked at whole; one completion of 100,000 ids as JSON is ~0.8 MB.
DOCUMENT_BYTES = 4 * 1024 * 1024
# Text that holds Harmony markup is a completion or a log quoting markup: telling which runs the
# log reader over it whole, so only texts of a completion's size are asked (a larger one is a
# log, read as logs are).
TEXT_BYTES = 256 * 1024


@dataclass(frozen=True)
class Document:
    """A whole input that is one token stream, or a JSON document of several (responses, an
    id list a line), and explain's diagnosis of each, with the line it starts on."""

    diagnoses: Iterable[tuple[Diagnosis, int]]  # made as they are read, once: a JSONL document
    lines: int  # of tens of thousands of streams held a Diagnosis each (344 MiB for 60,000)


class Prefixed:
    """A stream whose first bytes were read already: they come first, then the rest (and a
    read error met while taking them comes where it was met)."""

    def __init__(self, head: bytes, rest: Readable, error: BaseException | None) -> None:
        self.head = head
        self.rest = rest
        self.error = error

    def read(self, size: int = -1, /) -> bytes:
        if self.head:
            cut = len(self.head) if size < 0 else size
            data, self.head = self.head[:cut], self.head[cut:]
            return data
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        return self.rest.read(size)

    def close(self) -> None:
        self.rest.close()


def read_head(stream: Readable, limit: int = DOCUMENT_BYTES) -> tuple[Prefixed, bytes | None]:
    """The stream again (nothing lost), and its whole bytes when it ends within `limit`."""
    parts: list[bytes] = []
    size = 0
    try:
        while size <= limit:
            data = stream.read(CHUNK)
            if not data:
                head = b"".join(parts)
                return Prefixed(head, stream, None), head
            parts.append(data)
            size += len(data)
    except (OSError, EOFError, ValueError, InputError) as exc:
        return Prefixed(b"".join(parts), stream, exc), None
    return Prefixed(b"".join(parts), stream, None), None


# Lines of a larger input looked at to tell whether it is a token-stream document too large to
# read whole (a JSONL of id lists or responses): enough to tell, few enough to be quick.
SAMPLE_LINES = 16


def too_large(head: bytes, label: str, vocab: Callable[[], Vocab], role: ParseRole) -> str | None:
    """Why an input larger than DOCUMENT_BYTES, starting with `head`, cannot be scanned: its
    first lines are a token-stream document (an id list a line, JSONL of responses), which the
    log reader would pass over as "0 failures"; None when they are a log."""
    end = -1
    for _ in range(SAMPLE_LINES):
        found = head.find(b"\n", end + 1, TEXT_BYTES)
        if found < 0:
            break
        end = found
    if end < 0 or as_document(head[: end + 1], label, vocab, role) is None:
        return None
    return (
        f"a token-stream document (ids or responses) larger than the {DOCUMENT_BYTES >> 20} MiB "
        f"scan reads whole: split it (split -C {DOCUMENT_BYTES >> 20}M {label} part.) and scan "
        "the parts"
    )


def as_document(
    data: bytes, label: str, vocab: Callable[[], Vocab], role: ParseRole
) -> Document | None:
    """`data` as explain reads it, when explain reads it as one token stream; else None (a log,
    or an input explain refuses: the log reader takes it)."""
    if not may_hold_tokens(data):
        return None  # a log (most inputs): no need to unwrap and look at it whole
    # explain's reader and decision load only for an input that may be one token stream.
    from harmony_doctor.explain import count_lines, explain_text, log_failures
    from harmony_doctor.inputs.reader import unwrap_whole

    text = unwrap_whole([data], label).text
    if not text.strip():
        return None  # nothing to explain: the log reader reports an empty input as it does
    try:
        shape = detect_format(text.lstrip("\ufeff"))
    except InputError:
        return None
    if shape == "vllm-log":
        return None  # completions inside a log: the log reader replays each one
    if shape == "text" and len(data) > TEXT_BYTES:
        return None
    if shape in ("json", "jsonl"):
        many = _many_streams(text, vocab, role)
        if many is not None:
            return many
    try:
        if log_failures(text) is not None:
            return None  # explain reads it as a log
        result = explain_text(text, vocab(), role=role)
    except InputError:
        return None
    from harmony_doctor.models import Diagnosis as Diagnosed

    if not isinstance(result, Diagnosed):
        return None
    return Document(((result, 1),), count_lines(text))


def _many_streams(text: str, vocab: Callable[[], Vocab], role: ParseRole) -> Document | None:
    """A JSON document holding several token streams (explain asks which one: scan reads
    every one), each diagnosed as explain diagnoses one; None for one stream or none."""
    from harmony_doctor.explain import count_lines
    from harmony_doctor.inputs.tokens import token_streams
    from harmony_doctor.streams.diagnose import diagnose

    try:
        streams = token_streams(text)
    except InputError:
        return None
    if streams.count < 2:
        return None
    found = ((diagnose(inp, vocab(), role), line) for inp, line in streams.each)
    return Document(found, count_lines(text))
