"""Files, folders and stdin -> numbered text lines, decompressed in-process, memory bounded.

Compression is recognised by magic bytes first and by suffix second (gzip, bzip2, xz, zstd).
Lines of any length are safe: a line longer than MAX_LINE is cut (its line number is kept and
the cut is reported), so a 100 MB line without a newline costs MAX_LINE of memory, not 100 MB.
Anything that cannot be read is returned as a `Skipped` record with its reason, never dropped.
`open_binary` also detects the text encoding (encodings.py): what it returns is UTF-8.

Decompressed bytes are handed out as they come, before the check that ends their member (gzip's
CRC-32 and length, a zstd frame's checksum, bzip2's and xz's checks): a damaged member gives
changed bytes first and its error last. `Checks` (checks.py) says how far the data passed its
checks, and `CheckedLines` turns that into lines: a reader counts lines through verified data.
"""

from __future__ import annotations

import bz2
import fnmatch
import io
import lzma
import os
import re
import stat
import sys
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, NamedTuple, Protocol

from harmony_doctor.errors import InputError
from harmony_doctor.inputs.checks import Checks
from harmony_doctor.inputs.encodings import HEAD, Transcoding, decoding, detect
from harmony_doctor.inputs.remote import expand_url, is_url, open_url
from harmony_doctor.inputs.zstd_blocks import ZstdBlocks

MAX_LINE = 4 * 1024 * 1024  # bytes of one line kept for extraction; the rest is skipped
CHUNK = 64 * 1024  # small enough that a damaged compressed tail loses little
STEP_OUTPUT = 1024 * 1024  # most bytes one decompression step makes (bombs stay small)
# zstd cannot cap its output; its worst ratio is about 32,768:1 (RLE blocks). It is fed eight
# whole blocks at a time (at most 1 MiB out, inputs/zstd_blocks.py); where the framing cannot
# be read, 256 bytes at a time (at most about 8 MB out).
ZSTD_PIECE = 256
ZSTD_WINDOW = 1 << 31  # zstd's largest window (--long=31)
ZSTD_BLOCKS = 8

_MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bzip2"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
)
_SUFFIX = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz", ".zst": "zstd", ".zstd": "zstd"}


class Readable(Protocol):
    def read(self, size: int = ..., /) -> bytes: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Source:
    """One input to read: a file, standard input (path None), or an open binary stream.

    `stream` is what the library's `scan_stream` reads; such a source is scanned in the
    calling process (a stream cannot be sent to a worker).
    """

    label: str
    path: Path | None
    stream: IO[bytes] | None = field(default=None, compare=False, repr=False)
    url: bool = False  # the label is a URL (remote.py), opened wherever the source is read

    def __post_init__(self) -> None:
        object.__setattr__(self, "label", shown_name(self.label))


@dataclass(frozen=True)
class Skipped:
    """An input, or part of one, that could not be read, and why."""

    label: str
    reason: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "label", shown_name(self.label))


def shown_name(name: str) -> str:
    """A file name as text every output can hold: the bytes of a name that is not UTF-8 (held
    as surrogates, os.fsdecode's way) shown as `\\xff`; the file is opened by its path."""
    if name.isascii() or not any("\udc80" <= c <= "\udcff" for c in name):
        return name
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


class Line(NamedTuple):
    """One line `read_lines` gives (a NamedTuple: one is made per line)."""

    number: int  # 1-based
    text: str
    cut: bool = False  # longer than MAX_LINE: only its start is here


def discover(
    inputs: Iterable[str], globs: Iterable[str] = (), excludes: Iterable[str] = ()
) -> tuple[list[Source], list[Skipped]]:
    """Expand files and folders (recursively) into sources; `-` is standard input.

    Folders are walked following symlinks to folders, each real folder once (a link back up,
    or to a folder walked already, adds nothing: no loops, no file read twice); FIFOs, devices
    and sockets found inside folders are skipped with a reason. `globs` keep only matching file
    names inside folders; `excludes` drop matching names or relative paths anywhere.
    """
    include, exclude = list(globs), list(excludes)
    sources: list[Source] = []
    skipped: list[Skipped] = []
    stdin = False
    for raw in inputs:
        if raw == "-":
            if not stdin:  # one stream: named twice, it is still read once
                sources.append(Source("<stdin>", None))
            stdin = True
            continue
        if not raw:  # Path("") is ".": an unset variable would read the current folder
            skipped.append(Skipped("''", "No such file or directory"))
            continue
        if is_url(raw):  # an object, a prefix or a glob in object storage (remote.py)
            _list_url(raw, include, exclude, sources, skipped)
            continue
        path = Path(raw)
        try:
            info = path.stat()
        except OSError as exc:
            skipped.append(Skipped(raw, exc.strerror or str(exc)))
            continue
        if stat.S_ISDIR(info.st_mode):
            _walk(path, include, exclude, sources, skipped)
        elif _excluded(path.name, raw, exclude):
            continue
        elif stat.S_ISREG(info.st_mode) or stat.S_ISFIFO(info.st_mode):
            sources.append(Source(raw, path))  # named on the command line: read it as given
        else:
            skipped.append(Skipped(raw, "not a regular file"))
    return sources, skipped


def _list_url(
    raw: str, include: list[str], exclude: list[str], sources: list[Source], skipped: list[Skipped]
) -> None:
    try:
        objects = expand_url(raw)
    except InputError as exc:
        skipped.append(Skipped(raw, str(exc).removeprefix(f"cannot read {raw}: ")))
        return
    for found in objects:  # --glob and --exclude apply to object names as to file names
        name = found.url.rsplit("/", 1)[-1]
        if _excluded(name, found.url, exclude):
            continue
        if not include or any(fnmatch.fnmatch(name, p) for p in include):
            sources.append(Source(found.url, None, url=True))
    if not objects:
        skipped.append(Skipped(raw, "no object matches"))


def _excluded(name: str, relative: str, excludes: list[str]) -> bool:
    return any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(relative, p) for p in excludes)


def _walk(
    root: Path,
    include: list[str],
    exclude: list[str],
    sources: list[Source],
    skipped: list[Skipped],
) -> None:
    def on_error(exc: OSError) -> None:
        skipped.append(Skipped(str(exc.filename or root), exc.strerror or str(exc)))

    walked: set[tuple[int, int]] = set()  # (device, inode) of every real folder entered
    for folder, dirs, files in os.walk(root, onerror=on_error, followlinks=True):
        here = Path(folder)
        try:
            info = here.stat()
        except OSError as exc:
            on_error(exc)
            dirs.clear()
            continue
        if (info.st_dev, info.st_ino) in walked:
            dirs.clear()  # reached again through a link: walked already
            continue
        walked.add((info.st_dev, info.st_ino))
        dirs.sort()
        for name in list(dirs):
            relative = str((here / name).relative_to(root))
            if _excluded(name, relative, exclude):
                dirs.remove(name)
        for name in sorted(files):
            path = here / name
            relative = str(path.relative_to(root))
            if _excluded(name, relative, exclude):
                continue
            if include and not any(fnmatch.fnmatch(name, p) for p in include):
                continue
            try:
                mode = path.stat().st_mode
            except OSError as exc:
                skipped.append(Skipped(str(path), exc.strerror or "unreadable"))
                continue
            if stat.S_ISREG(mode):
                sources.append(Source(str(path), path))
            else:
                skipped.append(Skipped(str(path), "special file (FIFO, device or socket)"))


def compression_of(head: bytes, name: str) -> str | None:
    """gzip, bzip2, xz, zstd or None, from the first bytes (or the suffix when too short)."""
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    if len(head) < 6:
        return _SUFFIX.get(Path(name).suffix.lower())
    return None


def archive_of(head: bytes, label: str) -> str | None:
    """Why a stream that starts with `head` (decompressed) is not one text, or None: a tar
    archive (`.tar`, `.tar.gz`, `.tgz`, `.tar.zst`...) holds files, and read as one text its
    headers cut the lines at member boundaries. Said with how to read it."""
    if head[257:262] == b"ustar":  # POSIX and GNU tar headers alike
        return (
            "a tar archive (its members are files, not one text): extract it "
            f"(mkdir logs && tar -xf {label} -C logs) and scan the folder"
        )
    return None


def open_binary(source: Source, checks: Checks | None = None) -> Readable:
    """The source's bytes, decompressed and as UTF-8; InputError if it cannot be opened.

    Nothing is ever stat-sized or seeked: a pipe (`<(...)`, /dev/stdin) reads like a file.
    Raises encodings.Undecodable (an InputError) when the data is not text. `checks`, when
    given, follows how far compressed data passed its format's checks.
    """
    stream = _decompressed(source, checks)
    try:
        text = decoding(stream, source.label)
    except BaseException:
        stream.close()
        raise
    if checks is not None and isinstance(text, Transcoding):
        checks.decoded = text
        if text.encoding != "utf-8":
            checks.comparable = False  # transcoded: its offsets are not the decompressed ones
    return LineEnds(text)


_LONE_CR = re.compile(rb"\r(?!\n)")


class LineEnds:
    """A stream whose lone CRs (old Mac line ends, `\r`-only progress output) are line ends:
    each becomes LF, byte for byte (offsets and sizes do not move), so every reader after
    this one, the Python reference and the Rust core alike, cuts lines at LF only. CRLF stays.
    A CR that ends a read waits for the next byte (LF or not); the end of data decides the last.
    """

    def __init__(self, raw: Readable) -> None:
        self._raw = raw
        self._cr = False  # a CR held back from the end of the last read

    def read(self, size: int = -1, /) -> bytes:
        data = self._raw.read(size)
        held, self._cr = self._cr, False
        if not data:
            return b"\n" if held else b""  # the data ended on a lone CR
        if held:
            data = b"\r" + data
        elif b"\r" not in data:
            return data  # most logs: no CR at all, no copy
        if data.endswith(b"\r"):
            data, self._cr = data[:-1], True
            if not data:
                return self.read(size)
        return _LONE_CR.sub(b"\n", data)

    def close(self) -> None:
        self._raw.close()


def open_checked(source: Source) -> tuple[Readable, Checks]:
    """`open_binary` with the `Checks` of its data."""
    checks = Checks()
    return open_binary(source, checks), checks


def plain_size(source: Source) -> int | None:
    """The size of a regular, uncompressed UTF-8 file, or None (stdin, pipes, compressed data,
    UTF-16, latin-1 or binary data): only such a file can be cut into byte ranges.

    A pipe is never read here (its first bytes would be lost to the reader that follows):
    the file is fstat-ed before anything is read from it.
    """
    if source.path is None:
        return None
    try:
        with open(source.path, "rb", buffering=0) as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                return None
            head = handle.read(HEAD)
    except OSError:
        return None
    if compression_of(head, source.label) is not None:
        return None
    try:
        encoding, _ = detect(head)
    except InputError:
        return None
    return info.st_size if encoding == "utf-8" else None


def _decompressed(source: Source, checks: Checks | None = None) -> Readable:
    if source.stream is not None:
        raw: IO[bytes] = source.stream
    elif source.url:
        raw = open_url(source.label)[0]
    elif source.path is None:
        raw = getattr(sys.stdin, "buffer", None) or io.BytesIO()
    else:
        try:
            raw = open(source.path, "rb")  # noqa: SIM115 - returned to the caller
        except OSError as exc:
            raise InputError(f"cannot read {source.label}: {exc.strerror or exc}") from None
    head = raw.read(8)
    kind = compression_of(head, source.label)
    if kind is None:
        return io.BufferedReader(_Replayed(raw, head), CHUNK)
    return _Decompressing(raw, head, kind, checks or Checks())


def _decompressor(kind: str) -> Any:
    if kind == "gzip":
        try:  # ISA-L inflates about 3.5x faster than zlib (0.47 s against 1.7 s per GiB)
            from isal import isal_zlib
        except ImportError:  # a platform without its wheels: zlib gives the same bytes
            return zlib.decompressobj(wbits=31)
        return isal_zlib.decompressobj(wbits=31)
    if kind == "bzip2":
        return bz2.BZ2Decompressor()
    if kind == "xz":
        return lzma.LZMADecompressor()
    import zstandard

    # Frames written with a long window (`zstd --long=31`: 2 GiB) are valid; the default limit
    # (128 MiB) would call them corrupt. Memory grows with the data, up to the window.
    return zstandard.ZstdDecompressor(max_window_size=ZSTD_WINDOW).decompressobj()


class _Decompressing:
    """Incremental decompression that hands out every byte it can, even from a damaged file.

    Concatenated members (rotated gzip files appended together, multi-frame zstd) are read
    through; when the data ends before the last member does, the bytes decompressed so far
    are returned first and EOFError is raised afterwards. One step never produces more than
    about STEP_OUTPUT bytes, so a decompression bomb costs time, not memory. `checks`
    follows where members ended whole and whether one failed.
    """

    def __init__(self, raw: IO[bytes], head: bytes, kind: str, checks: Checks) -> None:
        self._raw, self._kind, self._checks = raw, kind, checks
        self._produced = 0  # bytes decompressed
        self._engine = _decompressor(kind)
        self._blocks = ZstdBlocks(ZSTD_BLOCKS) if kind == "zstd" else None
        self._input = head
        self._output = b""
        self._offset = 0  # bytes of _output already handed out (no copy per read)
        self._finished = False
        # why the data stopped (it ended inside a member, or could not be decoded): raised
        # once the output decompressed before it is out (members that passed come whole)
        self._damage: Exception | None = None

    def read(self, size: int = -1, /) -> bytes:
        """At most `size` bytes (everything when `size` < 0): what one decompression step
        made, without filling the read from the next (that would copy every byte once more,
        holding the GIL the scanning thread needs); b"" only at the end."""
        while not self._finished and (size < 0 or len(self._output) == self._offset):
            try:
                self._step()
            except OSError as exc:
                self._finished, self._damage = True, exc
        available = len(self._output) - self._offset
        if not available and self._damage is not None:
            damage, self._damage = self._damage, None
            raise damage
        if size < 0 or size > available:
            size = available
        data = self._output[self._offset : self._offset + size]
        self._offset += size
        return data

    def _step(self) -> None:
        data, self._input = self._input, b""
        if not data and not self._backlog():
            data = self._raw.read(CHUNK)
            if not data:
                self._finished = True
                if not self._at_member_end():  # a cut, or a flipped bit that reads like one
                    self._checks.failed = True
                    self._damage = EOFError(f"{self._kind} data ends before the end of its stream")
                return
        if data and self._at_member_end():
            self._engine = _decompressor(self._kind)  # the next concatenated member
        try:
            out = self._decompress(data)
        except Exception as exc:  # zlib.error, lzma.LZMAError, zstandard.ZstdError, OSError...
            self._checks.failed = True
            if isinstance(exc, MemoryError) or "memory" in str(exc).lower():
                raise OSError(  # valid data this host cannot hold the window of: not corrupt
                    f"{self._kind} data needs more memory to decode than could be had ({exc}): "
                    "decompress it first (zstd -d --long=31)"
                ) from None
            raise OSError(f"corrupt {self._kind} data: {exc}") from None
        self._produced += len(out)
        if len(self._checks.head) < 3:
            self._checks.head += out[: 3 - len(self._checks.head)]
        if self._at_member_end():
            self._checks.passed = self._produced  # before any byte after it is handed out
            unused = getattr(self._engine, "unused_data", b"")
            if unused and self._blocks is not None:
                self._blocks.broken = True  # fed past a frame's end: the framing was misread
            self._input = unused + self._input
        self._output = self._output[self._offset :] + out
        self._offset = 0

    def _decompress(self, data: bytes) -> bytes:
        """At most about STEP_OUTPUT bytes; input not used yet goes back to `_input`."""
        if self._blocks is not None:  # no output limit: feed little enough input instead
            cut = self._blocks.cut(data)
            cut = ZSTD_PIECE if cut is None else max(cut, 1)
            data, self._input = data[:cut], data[cut:] + self._input
            self._blocks.advance(data)
            out: bytes = self._engine.decompress(data)
            return out
        out = self._engine.decompress(data, STEP_OUTPUT)
        if self._kind == "gzip":
            self._input = self._engine.unconsumed_tail + self._input
        return out

    def _backlog(self) -> bool:
        """bz2 and xz keep output they could not hand out yet; it comes with empty input."""
        if self._kind not in ("bzip2", "xz") or self._at_member_end():
            return False
        return not self._engine.needs_input

    def _at_member_end(self) -> bool:
        return bool(getattr(self._engine, "eof", False))

    def close(self) -> None:
        if self._raw is not getattr(sys.stdin, "buffer", None):
            self._raw.close()


class _Replayed(io.RawIOBase):
    """A binary stream whose first bytes were read to sniff compression, then given back."""

    def __init__(self, raw: IO[bytes], head: bytes) -> None:
        self._raw, self._pending = raw, head

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._pending:
            n = min(len(buffer), len(self._pending))
            buffer[:n] = self._pending[:n]
            self._pending = self._pending[n:]
            return n
        readinto = getattr(self._raw, "readinto", None)
        if readinto is not None:  # straight into the caller's buffer: no bytes in between
            return int(readinto(buffer) or 0)
        data = self._raw.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if self._raw is not getattr(sys.stdin, "buffer", None):
            self._raw.close()
        super().close()


def read_lines(stream: Readable) -> Iterator[Line]:
    """Numbered lines (UTF-8, invalid bytes replaced), each at most MAX_LINE bytes long."""
    number = 0
    pending = b""
    cutting = False  # inside a line already longer than MAX_LINE
    while True:
        chunk = stream.read(CHUNK)
        if not chunk:
            break
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                if not cutting:
                    pending += chunk[start:]
                    if len(pending) > MAX_LINE:
                        number += 1
                        yield Line(number, _text(pending[:MAX_LINE]), cut=True)
                        pending, cutting = b"", True
                break
            if cutting:
                cutting = False
            else:
                piece = pending + chunk[start:end]
                pending = b""
                number += 1
                if len(piece) > MAX_LINE:
                    yield Line(number, _text(piece[:MAX_LINE]), cut=True)
                else:
                    yield Line(number, _text(piece))
            start = end + 1
    if pending and not cutting:
        number += 1
        yield Line(number, _text(pending))


def _text(piece: bytes) -> str:
    return piece.decode("utf-8", errors="replace").rstrip("\r")
