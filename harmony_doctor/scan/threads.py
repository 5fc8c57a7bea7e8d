"""The two threads a source's scan runs beside its own: one reads (and decompresses) ahead, one
feeds the scan core; both hand their results back in order, errors included."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator

from harmony_doctor.inputs.files import Readable
from harmony_doctor.scan.core import Batch, CoreLike, Meta

CHUNK = 1024 * 1024  # bytes read (and fed to the core) at a time
QUEUE = 4  # chunks read ahead of the core
CORE_QUEUE = 2  # unwrapped chunks waiting for the core's thread


def read_ahead(stream: Readable, stop: threading.Event) -> Iterator[bytes | BaseException]:
    """The stream's chunks, read (and decompressed) in a thread; a read error comes last.

    A stream that ends within its first two reads (most single files: a read shorter than a
    chunk is a file's end) is read in the caller's thread: a thread's start costs more than
    such a read (0.1 to 4 ms where the other CPU sleeps, as on a virtual machine), and there
    is no next chunk to read while the first is scanned."""
    first: list[bytes] = []
    try:
        while len(first) < 2:
            first.append(stream.read(CHUNK))
            if len(first[-1]) in (0, CHUNK):
                break
    except BaseException as exc:  # handed to the consumer, as the thread hands it
        yield from first
        yield exc
        return
    if not first[-1]:
        yield from first
        return
    chunks: queue.Queue[bytes | BaseException] = queue.Queue(maxsize=QUEUE)

    def put(item: bytes | BaseException) -> bool:
        while not stop.is_set():
            try:
                chunks.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def read() -> None:
        try:
            while True:
                data = stream.read(CHUNK)
                if not put(data) or not data:
                    return
        except BaseException as exc:  # handed to the consumer, which decides
            put(exc)

    yield from first
    reader = threading.Thread(target=read, name="harmony-doctor-reader", daemon=True)
    reader.start()
    try:
        while True:
            item = chunks.get()
            yield item
            if isinstance(item, BaseException) or not item:
                return
    finally:
        stop.set()
        reader.join()


class CoreThread:
    """The core, fed in its own thread: the Rust core releases the GIL, so it scans chunk N
    while this thread unwraps chunk N+1 and reads the windows and id lines of chunk N-1.
    Batches come back in the order the chunks went in.

    The thread starts with the second chunk: a source of one chunk (most single files) has
    nothing to overlap, and its chunk is scanned in the caller's thread when its batch is
    waited for."""

    def __init__(self, core: CoreLike) -> None:
        self.core = core
        self.todo: queue.Queue[tuple[bytes, Meta | None, int] | None] = queue.Queue(CORE_QUEUE)
        self.done: queue.Queue[Batch | BaseException] = queue.Queue()
        self.pending = 0
        self.held: tuple[bytes, Meta | None, int] | None = None  # the first chunk, not fed yet
        self.thread: threading.Thread | None = None
        self.failed = False

    def _work(self) -> None:
        while (job := self.todo.get()) is not None:
            self._scan(job)

    def _scan(self, job: tuple[bytes, Meta | None, int]) -> None:
        if self.failed:
            return  # keep taking jobs so that the feeding side never blocks
        try:
            self.done.put(self.core.feed(*job))
        except BaseException as exc:  # handed to the feeding side, which raises it
            self.done.put(exc)
            self.failed = True

    def submit(self, data: bytes, meta: Meta | None, newlines: int) -> None:
        """Scan `data` (`newlines`: its newlines, counted once by the Unwrapper)."""
        job = (data, meta, newlines)
        self.pending += 1
        if self.thread is None and self.pending == 1:  # nothing outstanding: hold it
            self.held = job
            return
        if self.thread is None:
            self.thread = threading.Thread(
                target=self._work, name="harmony-doctor-core", daemon=True
            )
            self.thread.start()
            if self.held is not None:
                self.todo.put(self.held)
                self.held = None
        self.todo.put(job)

    def batches(self, wait: bool) -> Iterator[Batch]:
        """The batches scanned so far (every outstanding one when `wait`), in order."""
        if wait and self.held is not None:
            job, self.held = self.held, None
            self._scan(job)
        while self.pending:
            try:
                item = self.done.get(block=wait)
            except queue.Empty:
                return
            self.pending -= 1
            if isinstance(item, BaseException):
                raise item
            yield item

    def close(self) -> None:
        if self.thread is not None:
            self.todo.put(None)
            self.thread.join()
