"""How much a Parquet file's row groups hold once decoded, read from its footer alone.

A Parquet reader decodes a row group's column chunks whole: an 18 KB file can hold one 300 MB
string, and reading it takes several times that in memory, whatever is kept of it afterwards.
The footer (the file's last bytes: Thrift's compact protocol, then its length and `PAR1`) says
each column chunk's decoded size before anything is decoded, so a file past the limit is
refused with the limit named, not read. The footer is the writer's word: a file that lies in it
is not caught here (its reader then reports it corrupt or decodes it).

Only the fields read below are decoded; the rest of the footer is skipped by its types.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_ROW_GROUP = 256 * 1024 * 1024  # decoded bytes of one row group that `report` will read
MAX_FOOTER = 64 * 1024 * 1024  # a footer longer than this is not read (a schema of ~1M columns)
_MAGIC = b"PAR1"
_DEPTH = 64  # nesting of structs and lists; Parquet's own footer uses a handful

# Compact protocol type codes.
_TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY = 1, 2, 3, 4, 5, 6, 7, 8
_LIST, _SET, _MAP, _STRUCT = 9, 10, 11, 12


class FooterError(ValueError):
    """The footer cannot be read as Parquet's (the file is cut, or is not Parquet)."""


@dataclass(frozen=True)
class RowGroupSize:
    """One row group's decoded size, and its largest column chunk."""

    index: int
    decoded: int
    column: str
    column_decoded: int


def row_group_sizes(path: Path) -> list[RowGroupSize]:
    """Each row group's decoded size, from the footer (FileMetaData.row_groups: RowGroup
    total_byte_size, and each ColumnChunk's ColumnMetaData total_uncompressed_size)."""
    with open(path, "rb") as file:
        size = file.seek(0, os.SEEK_END)
        if size < 12:
            raise FooterError("too short for Parquet")
        file.seek(size - 8)
        tail = file.read(8)
        length = struct.unpack("<I", tail[:4])[0]
        if tail[4:] != _MAGIC:
            raise FooterError("no Parquet footer (the file does not end with PAR1)")
        if length > min(MAX_FOOTER, size - 12):
            raise FooterError(f"a footer of {length:,} bytes")
        file.seek(size - 8 - length)
        footer = file.read(length)
    meta = _Reader(footer).struct(0)
    sizes = []
    for index, group in enumerate(_list(meta.get(4))):
        if not isinstance(group, dict):
            raise FooterError("a row group that is not a struct")
        columns = [_column(chunk) for chunk in _list(group.get(1))]
        column, largest = max(columns, key=lambda c: c[1], default=("", 0))
        decoded = max(_int(group.get(2)), sum(c[1] for c in columns))
        sizes.append(RowGroupSize(index, decoded, column, largest))
    return sizes


def too_large(path: Path, limit: int | None = None) -> str | None:
    """Why `path` is not read (a row group past `limit`, by default MAX_ROW_GROUP, once
    decoded), or None."""
    limit = MAX_ROW_GROUP if limit is None else limit
    try:
        sizes = row_group_sizes(path)
    except (OSError, FooterError):
        return None  # the reader says what is wrong with it, in its own words
    for group in sizes:
        if group.decoded > limit:
            return (
                f"row group {group.index} holds {group.decoded:,} bytes once decoded (column "
                f"{group.column!r}: {group.column_decoded:,}); Parquet is read in row groups of "
                f"at most {_size(limit)} decoded: write it with smaller row groups"
            )
    return None


def _size(limit: int) -> str:
    mib = 1024 * 1024
    return f"{limit // mib} MiB" if limit % mib == 0 else f"{limit:,} bytes"


def _column(chunk: Any) -> tuple[str, int]:
    """(dotted column path, decoded bytes) of a ColumnChunk (field 3: ColumnMetaData)."""
    meta = chunk.get(3) if isinstance(chunk, dict) else None
    if not isinstance(meta, dict):
        return "", 0
    names = [n.decode(errors="replace") for n in _list(meta.get(3)) if isinstance(n, bytes)]
    return ".".join(names), _int(meta.get(6))


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class _Reader:
    """Thrift's compact protocol, read into dicts of field id -> value."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def struct(self, depth: int) -> dict[int, Any]:
        if depth > _DEPTH:
            raise FooterError("nested too deep")
        fields: dict[int, Any] = {}
        last = 0
        while True:
            head = self._byte()
            kind = head & 0x0F
            if kind == 0:  # STOP
                return fields
            delta = head >> 4
            last = last + delta if delta else _zigzag(self._varint())
            if kind in (_TRUE, _FALSE):
                fields[last] = kind == _TRUE
            else:
                fields[last] = self._value(kind, depth)

    def _value(self, kind: int, depth: int) -> Any:
        if kind in (_TRUE, _FALSE):  # inside a list: one byte each
            return self._byte() == _TRUE
        if kind == _BYTE:
            return self._take(1)[0]
        if kind in (_I16, _I32, _I64):
            return _zigzag(self._varint())
        if kind == _DOUBLE:
            return struct.unpack("<d", self._take(8))[0]
        if kind == _BINARY:
            return self._take(self._varint())
        if kind in (_LIST, _SET):
            head = self._byte()
            count = head >> 4
            if count == 15:
                count = self._varint()
            self._fits(count)
            return [self._value(head & 0x0F, depth + 1) for _ in range(count)]
        if kind == _MAP:
            count = self._varint()
            if count == 0:
                return {}
            self._fits(2 * count)
            types = self._byte()
            return [
                (self._value(types >> 4, depth + 1), self._value(types & 0x0F, depth + 1))
                for _ in range(count)
            ]
        if kind == _STRUCT:
            return self.struct(depth + 1)
        raise FooterError(f"unknown Thrift type {kind}")

    def _varint(self) -> int:
        value = shift = 0
        while True:
            byte = self._byte()
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 63:
                raise FooterError("a varint longer than 64 bits")

    def _byte(self) -> int:
        return self._take(1)[0]

    def _take(self, count: int) -> bytes:
        end = self.at + count
        if end > len(self.data):
            raise FooterError("the footer ends inside a value")
        piece = self.data[self.at : end]
        self.at = end
        return piece

    def _fits(self, count: int) -> None:
        """Each element takes at least a byte: a count past the bytes left is a lie."""
        if count > len(self.data) - self.at:
            raise FooterError("a list longer than the footer")


def _zigzag(value: int) -> int:
    return (value >> 1) ^ -(value & 1)
