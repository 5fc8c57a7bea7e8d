"""scan/threads.py: a short source is read and scanned without a thread; a long one with both,
chunks and batches in order either way, errors handed to the consumer in their place."""

from __future__ import annotations

import io
import threading

import pytest

from harmony_doctor.scan.core import Batch, Meta
from harmony_doctor.scan.reference_core import Core
from harmony_doctor.scan.threads import CHUNK, CoreThread, read_ahead


def _threads() -> set[str]:
    return {t.name for t in threading.enumerate()}


class _Spy(io.BytesIO):
    """A stream that records the threads its reads ran in, and may fail at its nth read."""

    def __init__(self, data: bytes, fail_at: int = 0) -> None:
        super().__init__(data)
        self.readers: list[str] = []
        self.fail_at = fail_at

    def read(self, size: int | None = -1) -> bytes:
        self.readers.append(threading.current_thread().name)
        if len(self.readers) == self.fail_at:
            raise OSError("disk gone")
        return super().read(size)


@pytest.mark.parametrize("size", [0, 1, CHUNK - 1])
def test_a_stream_that_ends_in_its_first_chunk_is_read_without_a_thread(size: int) -> None:
    stream = _Spy(b"x" * size)
    items = list(read_ahead(stream, threading.Event()))
    assert b"".join(i for i in items if isinstance(i, bytes)) == b"x" * size
    assert items[-1] == b""
    assert set(stream.readers) == {threading.current_thread().name}


@pytest.mark.parametrize("size", [CHUNK, CHUNK + 1, 3 * CHUNK + 5])
def test_a_longer_stream_is_read_ahead_in_a_thread_every_byte_in_order(size: int) -> None:
    data = bytes(range(256)) * (size // 256) + b"e" * (size % 256)
    stream = _Spy(data)
    items = list(read_ahead(stream, threading.Event()))
    assert b"".join(i for i in items if isinstance(i, bytes)) == data
    assert items[-1] == b""
    assert "harmony-doctor-reader" in stream.readers
    assert "harmony-doctor-reader" not in _threads()


def test_a_short_read_that_is_not_the_end_goes_on_in_the_thread() -> None:
    """A pipe may return less than a chunk before its end: a second read decides."""

    class _Trickle(_Spy):
        def read(self, size: int | None = -1) -> bytes:
            return super().read(min(size or CHUNK, 10))

    data = b"y" * 35
    stream = _Trickle(data)
    items = list(read_ahead(stream, threading.Event()))
    assert b"".join(i for i in items if isinstance(i, bytes)) == data
    assert stream.readers[:2] == [threading.current_thread().name] * 2
    assert "harmony-doctor-reader" in stream.readers


@pytest.mark.parametrize("fail_at", [1, 2])
def test_a_read_error_comes_after_the_chunks_read_before_it(fail_at: int) -> None:
    class _Trickle(_Spy):
        def read(self, size: int | None = -1) -> bytes:
            return super().read(min(size or CHUNK, 10))

    items = list(read_ahead(_Trickle(b"z" * 100, fail_at=fail_at), threading.Event()))
    assert [i for i in items if isinstance(i, bytes)] == [b"z" * 10] * (fail_at - 1)
    assert isinstance(items[-1], OSError)


_ERROR = b"openai_harmony.HarmonyError: Unknown role: x\n"


def test_a_source_of_one_chunk_is_scanned_without_a_thread() -> None:
    before = _threads()
    thread = CoreThread(Core())
    try:
        thread.submit(b"INFO\n" + _ERROR, None, 2)
        assert list(thread.batches(wait=False)) == []  # held until waited for
        batches = list(thread.batches(wait=True))
        assert _threads() == before
    finally:
        thread.close()
    hits = [line for b in batches for w in b.windows for line in w.hit_lines]
    hits += [line for w in thread.core.finish().windows for line in w.hit_lines]
    assert hits == [2]
    assert thread.thread is None and thread.pending == 0


def test_the_first_chunk_held_goes_to_the_thread_first_when_a_second_comes() -> None:
    thread = CoreThread(Core())
    try:
        thread.submit(_ERROR, None, 1)
        thread.submit(b"INFO\n" + _ERROR, None, 2)
        assert thread.thread is not None
        batches = list(thread.batches(wait=True))
    finally:
        thread.close()
    hits = [line for b in batches for w in b.windows for line in w.hit_lines]
    hits += [line for w in thread.core.finish().windows for line in w.hit_lines]
    assert hits == [1, 3]
    assert not thread.thread.is_alive()


def test_an_error_on_a_held_chunk_reaches_the_feeder() -> None:
    class _Broken(Core):
        def feed(self, data: bytes, meta: Meta | None = None, newlines: int | None = None) -> Batch:
            raise ValueError("bad meta line")

    thread = CoreThread(_Broken())
    thread.submit(b"x\n", None, 1)
    with pytest.raises(ValueError, match="bad meta"):
        list(thread.batches(wait=True))
    thread.close()
    assert thread.thread is None
