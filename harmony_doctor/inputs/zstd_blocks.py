"""Where whole zstd blocks end in a compressed stream, read from the frame and block headers.

zstd's streaming decompressor cannot cap its output, and one RLE block of 4 bytes makes
128 KiB. Fed whole blocks a few at a time, each step's output stays bounded (no block makes
more than 128 KiB) without the many tiny steps a fixed small input piece needs: a 1 GiB log
read in 256-byte pieces took 3.3 s, read in blocks well under a second.
Format: RFC 8878, 3.1.1 (frames and blocks) and 3.1.2 (skippable frames).
"""

from __future__ import annotations

from typing import NamedTuple

_FRAME_MAGIC = 0xFD2FB528
_SKIPPABLE = 0x184D2A50  # skippable frames use the 16 magic numbers 0x184D2A50..0x184D2A5F
_DICT_ID_SIZE = (0, 1, 2, 4)
_CONTENT_SIZE_SIZE = (0, 2, 4, 8)
_SKIPPED = frozenset({"skip", "content", "checksum"})  # units passed over, not read


class _State(NamedTuple):
    what: str  # the unit being read: magic, skip-size, skip, descriptor, frame-header,
    # header (a block's), content (a block's), checksum
    need: int  # the unit's length in bytes
    unit: bytes  # its bytes read so far (header units only)
    checksum: bool  # the frame ends in a 4-byte checksum
    last: bool  # the block being read is the frame's last


_START = _State("magic", 4, b"", False, False)


class ZstdBlocks:
    """Follows a zstd stream's framing over the bytes fed to the decompressor, in order."""

    def __init__(self, blocks: int = 8) -> None:
        self.blocks = blocks
        self.broken = False  # the framing could not be read: callers fall back
        self._state = _START

    def cut(self, data: bytes) -> int | None:
        """How many leading bytes of `data` (input not fed yet) hold at most `blocks` more
        blocks without crossing a frame's end; None once the framing cannot be read."""
        if self.broken:
            return None
        walked = _walk(self._state, data, self.blocks)
        if walked is None:
            self.broken = True
            return None
        return walked[0]

    def advance(self, data: bytes) -> None:
        """`data` was fed: follow the framing over it."""
        position = 0
        while not self.broken and position < len(data):
            walked = _walk(self._state, data[position:], len(data))
            if walked is None:
                self.broken = True
                return
            position += walked[0]
            self._state = walked[1]

    def at_frame_start(self) -> bool:
        """Whether the bytes fed so far end exactly at a frame's end (or nothing was fed)."""
        return not self.broken and self._state == _START


def _walk(state: _State, data: bytes, limit: int) -> tuple[int, _State] | None:
    """Read `data` from `state` until a frame ends, `limit` blocks have ended, or the data
    does: (bytes read, the state after them); None when a header makes no sense."""
    what, need, unit, checksum, last = state
    position = blocks = 0
    while True:
        if what in _SKIPPED:
            take = min(need, len(data) - position)
            need -= take
            position += take
            if need:
                break  # the data ends inside the unit
            if what == "content":
                blocks += 1
            if what == "content" and not last:
                what, need = "header", 3
            elif what == "content" and checksum:
                what, need = "checksum", 4
            else:
                what, need = "magic", 4
            if what == "magic":
                return position, _START
            if blocks >= limit:
                return position, _State(what, need, b"", checksum, last)
            continue
        if position >= len(data):
            break
        take = min(need - len(unit), len(data) - position)
        unit += data[position : position + take]
        position += take
        if len(unit) < need:
            break
        read = _read_unit(what, int.from_bytes(unit, "little"), checksum)
        if read is None:
            return None
        what, need, checksum, last = read
        unit = b""
    return position, _State(what, need, unit, checksum, last)


def _read_unit(what: str, value: int, checksum: bool) -> tuple[str, int, bool, bool] | None:
    """What follows a complete header unit: (unit, its length, checksum flag, last block)."""
    if what == "magic":
        if value == _FRAME_MAGIC:
            return "descriptor", 1, False, False
        if value & 0xFFFFFFF0 == _SKIPPABLE:
            return "skip-size", 4, False, False
        return None
    if what == "skip-size":
        return "skip", value, False, False
    if what == "descriptor":
        if value & 0x08:  # the reserved bit must be zero
            return None
        single_segment = bool(value & 0x20)
        content_size = _CONTENT_SIZE_SIZE[value >> 6] or (1 if single_segment else 0)
        rest = (0 if single_segment else 1) + _DICT_ID_SIZE[value & 0x03] + content_size
        return (
            ("frame-header", rest, bool(value & 0x04), False)
            if rest
            else (
                "header",
                3,
                bool(value & 0x04),
                False,
            )
        )
    if what == "frame-header":
        return "header", 3, checksum, False
    if what == "header":
        kind, size = (value >> 1) & 3, value >> 3
        if kind == 3:  # the reserved block type
            return None
        return "content", (1 if kind == 1 else size), checksum, bool(value & 1)
    return None
