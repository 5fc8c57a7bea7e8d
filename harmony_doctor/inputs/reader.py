"""The one reader of commands that take one input (explain, decode, recover, repro, render, ...).

A path, `-` (standard input; "" names no file), /dev/stdin or a process substitution `<(...)`
(a pipe: never stat-sized, never seeked), compressed or not (gzip, bzip2, xz, zstd by magic
bytes: files.py), in any encoding encodings.py detects, inside any wrapper wrappers.py removes.
Memory is bounded: an input larger than `limit` bytes once decompressed and decoded
(DEFAULT_LIMIT, 32 MiB) ends with one InputError; `scan` reads logs of any size.
"""

from __future__ import annotations

import codecs
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from harmony_doctor.errors import InputError
from harmony_doctor.inputs.checks import Checks
from harmony_doctor.inputs.files import CHUNK, Readable, Source, open_checked
from harmony_doctor.inputs.wrappers import LineMeta, Unwrapper

DEFAULT_LIMIT = 32 * 1024 * 1024  # bytes of decoded text one input may hold (issue 34: 200 MiB)


@dataclass(frozen=True)
class TextInput:
    """One input read whole: its unwrapped text and what the wrapper said about its lines."""

    text: str
    label: str
    wrappers: tuple[str, ...] = ()  # wrappers removed (empty for a plain input)
    meta: tuple[LineMeta, ...] = ()  # wrapper stamp, pid, host per wrapped line
    unwrapper: Unwrapper | None = field(default=None, compare=False, repr=False)
    # why part of the input was not text in its encoding (inputs/not_text.py): read, but not
    # as the text it held, so the input was not read whole
    not_text: str | None = None

    def source_line(self, line: int) -> int:
        """The line of the input as given (wrapped) where unwrapped line `line` starts."""
        return line if self.unwrapper is None else self.unwrapper.source_line(line)


def read_text(source: str, limit: int = DEFAULT_LIMIT) -> tuple[str, str]:
    """(text, label) of one input: decompressed, decoded, unwrapped. Raises InputError."""
    found = read_input(source, limit)
    if found.not_text:
        raise InputError(f"cannot read {found.label}: {found.not_text}")
    return found.text, found.label


def read_input(source: str, limit: int = DEFAULT_LIMIT) -> TextInput:
    """One input read whole, with its wrapper metadata; see the module docstring."""
    stream, checks, label = _open(source)
    size = 0

    def chunks() -> Iterator[bytes]:
        nonlocal size
        while data := stream.read(CHUNK):
            size += len(data)
            if size > limit:
                raise InputError(
                    f"{label} is larger than {_size(limit)}, the most one input is read for this "
                    "command (scan reads logs of any size)"
                )
            yield data

    try:
        found = unwrap_whole(chunks(), label)
    except (OSError, EOFError, ValueError) as exc:
        raise InputError(f"cannot read {label} after {size} bytes: {exc}") from None
    finally:
        stream.close()
    return replace(found, not_text=checks.not_text) if checks.not_text else found


def unwrap_whole(chunks: Iterable[bytes], label: str) -> TextInput:
    """An input's bytes (UTF-8, as open_binary gives them) as one text, its wrappers removed.

    Decoded a chunk at a time onto the text, which CPython grows in place while it is the only
    reference (a realloc): the unwrapped bytes and their text were held whole at once (a 100 MB
    log: 221 MiB). A chunk that widens the text's kind (the first non-ASCII character of an
    ASCII text, the first beyond Latin-1) copies it once."""
    unwrapper = Unwrapper()
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    text = ""
    meta: list[LineMeta] = []
    for data in chunks:
        out = unwrapper.feed(data)
        text += decoder.decode(out.data)
        meta.extend(out.meta)
    out = unwrapper.finish()
    text += decoder.decode(out.data, final=True)
    meta.extend(out.meta)
    wrappers = tuple(sorted(unwrapper.wrappers))
    return TextInput(text, label, wrappers, tuple(meta), unwrapper if wrappers else None)


def _open(source: str) -> tuple[Readable, Checks, str]:
    if not source:  # not standard input: an unset variable names nothing to read
        raise InputError("cannot read '': No such file or directory")
    if source == "-":
        if sys.stdin is None or sys.stdin.isatty():
            raise InputError("no input: give a file, or pipe text to standard input")
        return *open_checked(Source("<stdin>", None)), "<stdin>"
    path = Path(source)
    if path.is_dir():
        raise InputError(f"{source} is a directory; this command reads one file")
    return *open_checked(Source(source, path)), source


def _size(limit: int) -> str:
    if limit % (1024 * 1024) == 0:
        return f"{limit // (1024 * 1024)} MiB"
    return f"{limit} bytes"
