"""How far decompressed data passed its format's checks (`Checks`), and the lines read through
it (`CheckedLines`): a reader counts lines only through verified data (files.py hands out
decompressed bytes before the check that ends their member)."""

from __future__ import annotations

import codecs
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harmony_doctor.inputs.encodings import Transcoding


class Checks:
    """How far a compressed stream's data passed its format's checks: `passed` decompressed
    bytes end the last member (gzip member, zstd frame, bzip2 or xz stream) that ended whole,
    its check passed (a zstd frame without a checksum: decoded to its end without an error);
    `failed` once data after it did not pass: it failed its check, could not be decoded, or
    ended before its check (a cut cannot be told from a flipped bit that reads like one).
    Written by the decompressing thread, read by the scanning one, one value at a time. Plain
    data is never checked: its reader has no Checks."""

    def __init__(self) -> None:
        self.passed = 0
        self.failed = False
        self.comparable = True  # False: the text is transcoded (UTF-16, latin-1)
        self.head = b""  # the first decompressed bytes (does a byte-order mark start them?)
        self.decoded: Transcoding | None = None  # the text's decoder, once opened

    @property
    def not_text(self) -> str | None:
        """Why part of the text so far was not text in its encoding (not_text.py), or None."""
        return self.decoded.not_text.reason() if self.decoded is not None else None

    @property
    def latin1_lines(self) -> int:
        """Lines so far that were not UTF-8, read as latin-1 (encodings.Transcoding)."""
        return self.decoded.latin1_lines if self.decoded is not None else 0

    def through(self) -> int | None:
        """Bytes of the text handed out (a UTF-8 byte-order mark dropped) through the last
        member that passed, or None when the text's bytes are not the decompressed ones."""
        if not self.comparable:
            return None
        mark = len(codecs.BOM_UTF8) if self.head.startswith(codecs.BOM_UTF8) else 0
        return max(0, self.passed - mark)


class CheckedLines:
    """The newlines of a stream read through the end of its last checked member.

    Fed each chunk as it is read with the reader's own running count of newlines, it counts
    none again but in the one chunk a member ends inside. A member's end is known (its check
    passed) before any byte after it is handed out, so at any chunk the last passing end is
    inside that chunk, at its start, at or past its end, or seen already: O(1) state."""

    def __init__(self, checks: Checks | None, newlines: int) -> None:
        self.checks = checks
        self.offset = 0  # bytes read
        self.newlines = newlines  # the reader's count of newlines through them
        self.checked = (0, newlines)  # (offset, newlines) through the last checked member

    def read(self, data: bytes, newlines: int) -> None:
        """`data` was read; the reader counts `newlines` through its end."""
        start, before = self.offset, self.newlines
        self.offset += len(data)
        self.newlines = newlines
        self._follow(data, start, before)

    def _follow(self, data: bytes, start: int, before: int) -> None:
        through = self.checks.through() if self.checks is not None else None
        if through is None or through <= self.checked[0]:
            return
        if through >= self.offset:
            self.checked = (self.offset, self.newlines)
        elif through > start:
            self.checked = (through, before + data.count(b"\n", 0, through - start))
        elif through == start:
            self.checked = (start, before)

    def unchecked(self, lines: int) -> int:
        """Of the `lines` read (the reader's count, an unended last line included), how many
        came from data that did not pass its check: 0 unless one did not."""
        if self.checks is None or not self.checks.failed:
            return 0
        self._follow(b"", self.offset, self.newlines)
        if self.checks.through() is not None and self.checked[0] >= self.offset:
            return 0  # every byte read passed: the damage came after it
        return max(0, lines - self.checked[1])
