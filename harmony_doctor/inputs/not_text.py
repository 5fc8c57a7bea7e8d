"""Data inside a text stream that is not text in the stream's encoding, found while it is read.

The encoding is decided once, from the first bytes (encodings.py), and a log can change under
it: PowerShell 5's `>>` appends UTF-16LE to a UTF-8 log, a UTF-16 header comes before UTF-8
lines, a crash writes a binary block into the middle of a log. Read as the head decided, such
parts give lines of NULs or of wide characters, and no failure: the file would be called clean.
`NotText` keeps what was found (how many bytes, where the first part starts, what it looks
like) so that the reader reports the file partial, never clean.

The checks cost nothing on ordinary text: an 8-bit chunk is looked at line by line only when
it holds a NUL byte (a memchr) or is not UTF-8 (already read line by line, as latin-1); a wide
(UTF-16/32) chunk is judged by counts of its line-feed bytes and replacement characters.
"""

from __future__ import annotations

from harmony_doctor.lazy_regex import Pattern

# A run of NULs this long is a hole (zeroed data, reported apart: scan/source.py), not text.
_NUL_RUN = Pattern(rb"\x00{16,}")
_CONTROL = Pattern(rb"[\x00-\x06\x0e-\x1a\x1c-\x1f\x7f]")
SHORTEST = 4  # bytes of a line judged (a log may quote a NUL or two on a short line)
BINARY = "binary data"
WIDE = "UTF-16 text"
NARROW = "8-bit text"


class NotText:
    """What a stream held that was not text in its encoding: bytes in all, and where the first
    such part starts (a byte offset of the decompressed data) with its first bytes."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self.bytes = 0
        self.first: int | None = None
        self.kind = ""
        self.sample = b""

    def add(self, offset: int, data: bytes, kind: str) -> None:
        """`data`, at `offset`, is not text: a line of binary data counts from its first byte
        that is not text (a log line a binary block was written into starts as text)."""
        skip = _first_odd(data) if kind == BINARY else 0
        self.bytes += len(data) - skip
        if self.first is None:
            self.first, self.kind, self.sample = offset + skip, kind, data[skip : skip + 8]

    def reason(self) -> str | None:
        """One line for the file's reason, or None when everything was text."""
        if self.first is None:
            return None
        shown = self.sample.hex(" ")
        encoding = "UTF-8" if self.encoding in ("utf-8", "latin-1") else self.encoding.upper()
        if self.kind == BINARY:
            what = "binary data, not text"
        elif self.kind == WIDE:
            what = f"UTF-16 text inside {encoding}"
        elif self.kind == NARROW:
            what = f"8-bit text (UTF-8?) inside {encoding}"
        else:
            what = f"not valid {encoding} ({self.kind})"
        return f"{self.bytes:,} bytes from byte {self.first:,} are {what} (bytes {shown})"


def _first_odd(data: bytes) -> int:
    """Where the first byte that is not text is: a control byte, or one that is not UTF-8."""
    control = _CONTROL.search(data)
    at = control.start() if control is not None else len(data)
    try:
        data[:at].decode("utf-8")
    except UnicodeDecodeError as exc:
        at = exc.start
    return at if at < len(data) else 0


def judge_line(line: bytes, utf8: bool) -> str | None:
    """BINARY or WIDE for an 8-bit line that is not text, else None. A line that is UTF-8 is
    text unless a quarter of it is NULs or a third control bytes (detect's rule for a head);
    one that is not UTF-8 is latin-1 text unless more than 1 in 20 bytes are controls."""
    sample = _NUL_RUN.sub(b"", line) if b"\x00" * 16 in line else line
    size = len(sample)
    if size < SHORTEST:
        return None
    nuls = sample.count(0)
    if nuls * 4 >= size:
        return WIDE if _alternating(sample) else BINARY
    if utf8 and not nuls:
        return None
    controls = len(_CONTROL.findall(sample))
    if controls * (3 if utf8 else 20) > size:
        return BINARY
    return None


def _alternating(sample: bytes) -> bool:
    """NULs in every other byte (UTF-16 text mostly below U+0100), and hardly elsewhere."""
    half = len(sample) // 2
    even, odd = sample[0::2].count(0), sample[1::2].count(0)
    return max(even, odd) >= half * 0.8 and min(even, odd) <= half * 0.1


def judge_nul_lines(data: bytes, offset: int, found: NotText) -> None:
    """The lines of an 8-bit chunk (UTF-8 already) that hold NULs, judged; `offset` is where
    `data` starts in the stream."""
    start = 0
    while (nul := data.find(b"\x00", start)) >= 0:
        begin = data.rfind(b"\n", 0, nul) + 1
        end = data.find(b"\n", nul)
        end = len(data) if end < 0 else end
        kind = judge_line(data[begin:end], utf8=True)
        if kind is not None:
            found.add(offset + begin, data[begin : end + 1], kind)
        start = end + 1


def judge_wide(data: bytes, text: str, offset: int, encoding: str, found: NotText) -> None:
    """A chunk of a UTF-16 or UTF-32 stream, and its text: 8-bit text read as wide characters
    (its line feeds pair with no NUL: they end no line), or code units that are not valid (lone
    surrogates: replacement characters the data did not hold)."""
    feeds = data.count(b"\n")
    if feeds >= 8 and text.count("\n") * 4 < feeds:
        big = encoding.endswith("be")
        at = _lone_feed(data, big)
        # the line the first lone line feed is on starts after the last line end before it
        end = data.rfind(b"\x00\n" if big else b"\n\x00", 0, at)
        begin = 0 if end < 0 else end + 2
        found.add(offset + begin, data[begin:], NARROW)
        return
    if "\ufffd" in text:
        mark = "\ufffd".encode(encoding)
        replaced = text.count("\ufffd") - data.count(mark)
        if replaced > 0:
            found.add(offset, data, f"{replaced:,} code units not valid")


def _lone_feed(data: bytes, big: bool) -> int:
    """The first line-feed byte that ends no wide line (no NUL beside it where it should be)."""
    at = data.find(b"\n")
    while at >= 0:
        paired = at > 0 and data[at - 1] == 0 if big else data[at + 1 : at + 2] == b"\x00"
        if not paired:
            return at
        at = data.find(b"\n", at + 1)
    return 0
