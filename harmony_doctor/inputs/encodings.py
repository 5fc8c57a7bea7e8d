"""Text encodings of a byte stream detected from its first bytes, and transcoded to UTF-8.

UTF-8 (a byte-order mark is dropped) passes through untouched. UTF-16 and UTF-32 LE/BE, with or
without a byte-order mark, and latin-1 (bytes that are not UTF-8 but clearly 8-bit text) are
transcoded to UTF-8 while streaming, so everything after this layer reads UTF-8 bytes. Data
that is not text at all raises `Undecodable` (an InputError: the source is reported as skipped
with the reason, never read as zero failures). ANSI colour codes and CRLF are left in place: the log
extractor (logs/lines.py) removes them from each line.

The encoding is decided once, from the first HEAD bytes; UTF-8 and latin-1 then follow one rule,
line by line, at any size: a line that is UTF-8 passes as it is, a line that is not is read as
latin-1 (Transcoding, which counts such lines). What turns out not to be text in the encoding
decided (a binary block, UTF-16 appended to UTF-8, UTF-8 after a UTF-16 header) is found as it
is read and kept in `Transcoding.not_text` (not_text.py): the reader says the file is partial.
"""

from __future__ import annotations

import codecs
from typing import Any, Protocol

from harmony_doctor.errors import Undecodable
from harmony_doctor.inputs.not_text import NotText, judge_line, judge_nul_lines, judge_wide
from harmony_doctor.lazy_regex import Pattern

HEAD = 8 * 1024  # bytes looked at to decide
CHUNK = 64 * 1024
_BOMS = (  # UTF-32's marks first: UTF-32-LE's starts with UTF-16-LE's
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# A file truncated while a writer still held it (logrotate copytruncate) starts with a run of
# NUL bytes; such runs are holes, not a sign of binary data.
_NUL_RUN = Pattern(rb"\x00{16,}")
_CONTROL = Pattern(rb"[\x00-\x06\x0e-\x1a\x1c-\x1f\x7f]")


class Readable(Protocol):  # sources.Readable (sources imports this module)
    def read(self, size: int = ..., /) -> bytes: ...

    def close(self) -> None: ...


def detect(head: bytes) -> tuple[str, int]:
    """(encoding, length of its byte-order mark) of a stream starting with `head`.

    The encoding is one of utf-8, utf-16-le, utf-16-be, utf-32-le, utf-32-be, latin-1; raises
    Undecodable for binary data. `head` should hold the first HEAD bytes (fewer only when the
    stream is shorter). A head that starts as text and turns binary is text (the binary part
    is found and reported as the stream is read: not_text.py).
    """
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name, len(bom)
    wide = _utf32_without_bom(head) or _utf16_without_bom(head)
    if wide is not None:
        return wide, 0
    sample = _NUL_RUN.sub(b"", head)
    controls = len(_CONTROL.findall(sample))
    # Valid UTF-8 is text unless it is mostly control bytes (a log may quote a few NULs or
    # escapes); bytes that are not UTF-8 are latin-1 text only when control bytes are rare.
    utf8 = _is_utf8(sample)
    if controls > len(sample) // (3 if utf8 else 20) and not _text_first(head):
        raise Undecodable(f"binary data, not text ({_describe(sample)})")
    return ("utf-8" if utf8 or controls > len(sample) // 20 else "latin-1"), 0


TEXT_FIRST = 256  # bytes of text lines before binary data that make a stream text


def _text_first(head: bytes) -> bool:
    """Whether the head starts with at least TEXT_FIRST bytes of text lines before its first
    line that is not text: a log with a binary block, read as text with the block reported
    (the head of an executable or an image has a few bytes of text at most)."""
    start = 0
    while (end := head.find(b"\n", start)) >= 0 and start < TEXT_FIRST:
        line = head[start:end]
        if judge_line(line, _valid(line)) is not None:
            return False
        start = end + 1
    return start >= TEXT_FIRST


def _utf32_without_bom(head: bytes) -> str | None:
    """UTF-32 without a mark: every character below U+10000 has two NUL bytes of four."""
    quads = len(head) // 4
    if quads < 2:
        return None
    nuls = [head[i : quads * 4 : 4].count(0) for i in range(4)]
    if nuls[2] == nuls[3] == quads and nuls[0] <= quads * 0.02:
        return "utf-32-le"
    if nuls[0] == nuls[1] == quads and nuls[3] <= quads * 0.02:
        return "utf-32-be"
    return None


def _utf16_without_bom(head: bytes) -> str | None:
    """UTF-16 without a mark: text mostly below U+0100 has a NUL in every other byte."""
    pairs = len(head) // 2
    if pairs < 2:
        return None
    even = head[0 : pairs * 2 : 2].count(0)  # high bytes of UTF-16-BE ASCII
    odd = head[1 : pairs * 2 : 2].count(0)  # high bytes of UTF-16-LE ASCII
    if odd >= pairs * 0.6 and even <= pairs * 0.02:
        return "utf-16-le"
    if even >= pairs * 0.6 and odd <= pairs * 0.02:
        return "utf-16-be"
    return None


def _is_utf8(sample: bytes) -> bool:
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        decoder.decode(sample, final=False)  # a character cut by the end of the sample is fine
    except UnicodeDecodeError:
        return False
    return True


def _describe(sample: bytes) -> str:
    shown = sample[:8].hex(" ")
    return f"starts with bytes {shown}"


def decoding(stream: Readable, label: str) -> Readable:
    """The stream as UTF-8 bytes: the encoding is detected, then transcoded while read.

    Raises Undecodable (with the label) when the stream is not text.
    """
    head, damage = _read_head(stream)
    try:
        encoding, mark = detect(head)
    except Undecodable as exc:
        raise Undecodable(f"cannot read {label}: {exc}") from None
    if damage is not None:  # the bytes before the damage are read first, then it is raised
        stream = _Failing(damage)
    return Transcoding(stream, head[mark:], encoding, mark)


def _read_head(stream: Readable) -> tuple[bytes, Exception | None]:
    parts: list[bytes] = []
    size = 0
    while size < HEAD:
        try:
            data = stream.read(HEAD - size)
        except (OSError, EOFError) as exc:  # damaged compressed data: keep what came before
            stream.close()
            return b"".join(parts), exc
        if not data:
            break
        parts.append(data)
        size += len(data)
    return b"".join(parts), None


class _Failing:
    """The rest of a stream that broke while its head was read."""

    def __init__(self, error: Exception) -> None:
        self._error: Exception | None = error

    def read(self, size: int = -1, /) -> bytes:
        error, self._error = self._error, None
        if error is not None:
            raise error
        return b""

    def close(self) -> None:
        pass


CARRY = 1024 * 1024  # bytes of an unended line held to be judged whole; past this, judged as is


class Transcoding:
    """A Readable giving UTF-8 bytes for a stream in `encoding`, starting with `head`.

    UTF-8 and 8-bit text follow one rule, whatever the size of the input or where its first
    odd byte is: each line that is valid UTF-8 passes untouched, and a line that is not is
    read as latin-1 (every byte a character: no mojibake in the lines around it, no U+FFFD),
    counted in `latin1_lines`. Whole chunks of valid UTF-8 (most logs) pass without a copy.
    """

    def __init__(self, raw: Readable, head: bytes, encoding: str, start: int = 0) -> None:
        self._raw, self._pending, self.encoding = raw, head, encoding
        self._offset = start  # bytes of the stream read before `head` (its byte-order mark)
        self.not_text = NotText(encoding)  # parts that are not text in this encoding
        self._decoder: Any = None
        if encoding not in ("utf-8", "latin-1"):
            self._decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
        self._output = b""
        self._done = False
        self._carry = b""  # the start of a line not ended yet (8-bit text)
        self.latin1_lines = 0  # lines that were not UTF-8, read as latin-1

    def read(self, size: int = -1, /) -> bytes:
        if self._decoder is None:
            return self._eight_bit(size)
        while not self._done and (size < 0 or len(self._output) < size):
            data, self._pending = (self._pending or self._raw.read(CHUNK)), b""
            final = not data
            self._done = final
            text: str = self._decoder.decode(data, final=final)
            out = text.encode("utf-8", errors="replace")
            judge_wide(data, text, self._offset, self.encoding, self.not_text)
            if b"\x00" in out:  # U+0000 characters: UTF-32 read as UTF-16, or binary data
                self._nul_lines(data, out)
            self._offset += len(data)
            self._output += out
        if size < 0 or size >= len(self._output):
            data, self._output = self._output, b""
        else:
            data, self._output = self._output[:size], self._output[size:]
        return data

    def _eight_bit(self, size: int) -> bytes:
        """UTF-8 lines as they are, others as latin-1: see the class docstring."""
        while True:
            if self._pending:
                cut = len(self._pending) if size < 0 else size
                data, self._pending = self._pending[:cut], self._pending[cut:]
            else:
                data = self._raw.read(size)
            if not data:
                carry, self._carry = self._carry, b""
                return self._lines(carry) if carry else b""
            data = self._carry + data if self._carry else data
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as exc:
                if exc.reason == "unexpected end of data" and exc.end == len(data):
                    end = data.rfind(b"\n", 0, exc.start) + 1  # a character cut by the read
                else:
                    end = data.rfind(b"\n") + 1
                if not end and len(data) > CARRY:
                    end = len(data)  # a line without end: judged by its first CARRY bytes
                data, self._carry = data[:end], data[end:]
                if not data:
                    continue
                return self._lines(data)
            self._carry = b""
            if b"\x00" in data:  # a memchr: most chunks have none
                judge_nul_lines(data, self._offset, self.not_text)
            self._offset += len(data)
            return data

    def _nul_lines(self, data: bytes, out: bytes) -> None:
        """NULs in wide text: judged on its UTF-8 lines, placed at the chunk's start."""
        found = NotText(self.encoding)
        judge_nul_lines(out, 0, found)
        if found.first is not None:
            self.not_text.add(self._offset, data[: found.bytes], found.kind)

    def _lines(self, data: bytes) -> bytes:
        """Lines not UTF-8 as latin-1 (counted), or as binary data (not_text); each judged."""
        lines = data.split(b"\n")
        offset = self._offset
        for index, line in enumerate(lines):
            valid = _valid(line)
            kind = judge_line(line, valid) if not valid or b"\x00" in line else None
            if kind is not None:
                self.not_text.add(offset, line + b"\n", kind)
            if not valid:
                lines[index] = line.decode("latin-1").encode("utf-8")
                self.latin1_lines += kind is None
            offset += len(line) + 1
        self._offset += len(data)
        return b"\n".join(lines)

    def close(self) -> None:
        self._raw.close()


def _valid(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
