"""The vocabulary's token bytes, parsed once and cached by SHA-256 in the user's cache folder.

Parsing o200k_base.tiktoken in Python (200k base64 lines) costs more than everything else an
`explain` does, so the parsed pieces are kept in one flat file: offsets and bytes, with the
vocabulary's SHA-256 inside and a SHA-256 of the whole file at its end. A cache file that is
missing, cut, corrupt or for another vocabulary is rebuilt; one that cannot be written is
skipped. The cache is only ever read as data (no pickle), so a tampered file can at worst be
refused. The folder is $HARMONY_DOCTOR_CACHE, else $XDG_CACHE_HOME/harmony-doctor, else
~/.cache/harmony-doctor.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import os
import sys
from array import array
from pathlib import Path

from harmony_doctor.errors import VocabError

CACHE_VAR = "HARMONY_DOCTOR_CACHE"
_MAGIC = b"harmony-doctor ranks 1\n"
_DIGEST = 32


class Ranks:
    """Token id -> bytes for the ordinary tokens of one vocabulary: offsets into one blob."""

    def __init__(self, offsets: array[int], blob: bytes) -> None:
        self._offsets = offsets
        self._blob = blob

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, token: int) -> bytes:
        if not 0 <= token < len(self):
            raise IndexError(token)
        return self._blob[self._offsets[token] : self._offsets[token + 1]]

    def pieces(self) -> list[bytes]:
        return [self[t] for t in range(len(self))]


def cache_folder() -> Path:
    """Where parsed vocabularies are kept (see the module docstring for the order)."""
    explicit = os.environ.get(CACHE_VAR)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "harmony-doctor"


def cache_path(sha256: str) -> Path:
    return cache_folder() / f"o200k_base-{sha256}.ranks"


def load_ranks(data: bytes, sha256: str, path: Path, expected: int) -> Ranks:
    """The parsed pieces of `data` (whose SHA-256 the caller verified), from the cache if it
    holds them, else parsed and written to the cache for the next run."""
    cached = _read_cache(cache_path(sha256), sha256, expected)
    if cached is not None:
        return cached
    ranks = parse_ranks(data, path)
    if len(ranks) != expected:
        raise VocabError(f"vocabulary {path} has {len(ranks)} tokens, expected {expected}")
    _write_cache(cache_path(sha256), sha256, ranks)
    return ranks


def parse_ranks(data: bytes, path: Path) -> Ranks:
    """Parse a .tiktoken file (`base64 rank` per line, ranks in order)."""
    offsets = array("I", [0])
    chunks: list[bytes] = []
    size = 0
    try:
        for rank, line in enumerate(data.splitlines()):
            encoded, _, rank_text = line.partition(b" ")
            if int(rank_text) != rank:
                raise ValueError(f"rank {rank_text!r} out of order")
            piece = base64.b64decode(encoded, validate=True)
            chunks.append(piece)
            size += len(piece)
            offsets.append(size)
    except (ValueError, binascii.Error) as exc:
        raise VocabError(f"vocabulary {path} is malformed: {exc}") from None
    return Ranks(offsets, b"".join(chunks))


def _little_endian(values: array[int]) -> bytes:
    if sys.byteorder == "big":
        values = array(values.typecode, values)
        values.byteswap()
    return values.tobytes()


def _read_cache(path: Path, sha256: str, expected: int) -> Ranks | None:
    """The cached ranks, or None when the file is missing or is not exactly what we wrote."""
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    body, trailer = raw[:-_DIGEST], raw[-_DIGEST:]
    header = _MAGIC + bytes.fromhex(sha256)
    table = len(header) + 4 * (expected + 1)
    if (
        len(raw) < table + _DIGEST
        or hashlib.sha256(body).digest() != trailer
        or not body.startswith(header)
    ):
        return None
    offsets = array("I")
    offsets.frombytes(body[len(header) : table])
    if sys.byteorder == "big":
        offsets.byteswap()
    blob = body[table:]
    if offsets[0] != 0 or offsets[-1] != len(blob):
        return None
    return Ranks(offsets, blob)


def _write_cache(path: Path, sha256: str, ranks: Ranks) -> None:
    """Write the cache atomically (temporary file, then rename); a cache that cannot be
    written is only a slower next run, never an error."""
    import tempfile  # only a first run writes the cache

    body = _MAGIC + bytes.fromhex(sha256) + _little_endian(ranks._offsets) + ranks._blob
    temporary: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(handle, "wb") as stream:
            stream.write(body + hashlib.sha256(body).digest())
        os.replace(temporary, path)
        temporary = None
    except OSError:
        pass
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
