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
    """The stream's chunks, read (and decompressed) in a thread; a read error comes last."""
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
    Batches come back in the order the chunks went in."""

    def __init__(self, core: CoreLike) -> None:
        self.core = core
        self.todo: queue.Queue[tuple[bytes, Meta | None, int] | None] = queue.Queue(CORE_QUEUE)
        self.done: queue.Queue[Batch | BaseException] = queue.Queue()
        self.pending = 0
        self.thread = threading.Thread(target=self._work, name="harmony-doctor-core", daemon=True)
        self.thread.start()

    def _work(self) -> None:
        failed = False
        while (job := self.todo.get()) is not None:
            if failed:
                continue  # keep taking jobs so that the feeding side never blocks
            try:
                self.done.put(self.core.feed(*job))
            except BaseException as exc:  # handed to the feeding side, which raises it
                self.done.put(exc)
                failed = True

    def submit(self, data: bytes, meta: Meta | None, newlines: int) -> None:
        """Scan `data` (`newlines`: its newlines, counted once by the Unwrapper)."""
        self.todo.put((data, meta, newlines))
        self.pending += 1

    def batches(self, wait: bool) -> Iterator[Batch]:
        """The batches scanned so far (every outstanding one when `wait`), in order."""
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
        self.todo.put(None)
        self.thread.join()
