"""inputs/zstd_blocks.py: zstd is fed whole blocks, bytes come out as zstd makes them."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from harmony_doctor.inputs.files import Source, open_binary
from harmony_doctor.inputs.zstd_blocks import ZstdBlocks

BLOCK_OUTPUT = 128 * 1024  # the most one zstd block makes


def _frame(data: bytes, level: int, checksum: bool, size: bool) -> bytes:
    packer = zstandard.ZstdCompressor(level=level, write_checksum=checksum, write_content_size=size)
    if size:
        return packer.compress(data)
    stream = io.BytesIO()
    with packer.stream_writer(stream, closefd=False) as writer:  # no size in the header
        writer.write(data)
    return stream.getvalue()


def _skippable(payload: bytes) -> bytes:
    return struct.pack("<II", 0x184D2A53, len(payload)) + payload


payloads = st.binary(max_size=3000).map(lambda b: b * 97) | st.sampled_from(
    [b"", b"\0" * 600_000, b"".join(b"line %d\n" % i for i in range(40_000))]
)
frames = st.tuples(
    payloads, st.sampled_from([1, 3, 19]), st.booleans(), st.booleans(), st.booleans()
)


@settings(max_examples=60, deadline=None)
@given(st.lists(frames, min_size=1, max_size=4), st.integers(1, 9))
def test_blocks_cut_where_zstd_ends_them(
    parts: list[tuple[bytes, int, bool, bool, bool]], blocks: int
) -> None:
    """Fed as `cut` says, every step holds at most `blocks` blocks, never crosses a frame's
    end, and the bytes out are zstd's own, skippable frames included."""
    data = b"".join(
        (_skippable(b"meta") if skip else b"") + _frame(p, level, checksum, size)
        for p, level, checksum, size, skip in parts
    )
    framing = ZstdBlocks(blocks)
    engine = zstandard.ZstdDecompressor().decompressobj()
    out: list[bytes] = []
    position = 0
    while position < len(data):
        cut = framing.cut(data[position:])
        assert cut is not None and cut > 0
        piece = data[position : position + cut]
        framing.advance(piece)
        made = engine.decompress(piece)
        assert len(made) <= blocks * BLOCK_OUTPUT
        out.append(made)
        position += cut
        if engine.eof:
            assert not engine.unused_data  # never fed past a frame's end
            assert framing.at_frame_start()
            engine = zstandard.ZstdDecompressor().decompressobj()
    assert b"".join(out) == b"".join(p for p, *_ in parts)
    assert not framing.broken


def test_unreadable_framing_falls_back_and_damage_is_still_reported(tmp_path: Path) -> None:
    good = _frame(b"line\n" * 50_000, 3, True, True)
    framing = ZstdBlocks()
    assert framing.cut(b"\x28\xb5\x2f\xfd\x08") is None  # reserved descriptor bit
    assert framing.broken and framing.cut(good) is None
    path = tmp_path / "bad.log.zst"
    path.write_bytes(good[:20] + b"\xff" * 200 + good[220:])
    stream = open_binary(Source(str(path), path))
    try:
        with pytest.raises(OSError, match="corrupt zstd"):
            while stream.read(65536):
                pass
    finally:
        stream.close()


def test_a_cut_zstd_file_reads_what_it_holds_then_says_so(tmp_path: Path) -> None:
    text = b"".join(b"(APIServer pid=1) INFO line %d\n" % i for i in range(200_000))
    data = _frame(text, 3, True, True)
    path = tmp_path / "cut.log.zst"
    path.write_bytes(data[: len(data) // 2])
    stream = open_binary(Source(str(path), path))
    got: list[bytes] = []
    try:
        with pytest.raises(EOFError):
            while chunk := stream.read(65536):
                got.append(chunk)
    finally:
        stream.close()
    read = b"".join(got)
    assert len(read) > len(text) // 4 and text.startswith(read)
