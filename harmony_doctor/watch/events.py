"""--events FILE.jsonl: each failure appended as it is counted, one JSON object a line, in the
columns and order of scan's events (scan/summary.py EVENT_COLUMNS, then day and hour), so that
`report` reads it as it reads scan's."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from harmony_doctor.errors import OutputError
from harmony_doctor.models import ScanEvent
from harmony_doctor.scan.summary import EVENT_COLUMNS


def event_row(event: ScanEvent) -> dict[str, object]:
    row: dict[str, object] = {column: getattr(event, column) for column in EVENT_COLUMNS}
    stamp = event.timestamp
    row["day"] = None if stamp is None else stamp[:10]
    row["hour"] = None if stamp is None else stamp[:13]
    return row


class EventLog:
    """The events file, opened for appending; `size` is its length after the last append.

    Its errors are OutputErrors that name it: a write that failed leaves the file as the last
    save knew it, and every later `sync` fails too, so that no state is saved past failures
    the file does not hold (a restart reads and appends them again)."""

    def __init__(self, path: Path, keep: int | None) -> None:
        """Open `path`; `keep` (the length a saved state knew) cuts off what a run that was
        killed appended after its last save: those failures are read and appended again."""
        self.path = path
        self.failed: str | None = None
        try:
            self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o666)
        except OSError as exc:
            raise self._error(exc) from None
        try:
            size = os.fstat(self.fd).st_size
            if keep is not None and keep < size:
                os.ftruncate(self.fd, keep)
            self.size = os.fstat(self.fd).st_size
        except OSError as exc:
            os.close(self.fd)
            raise self._error(exc) from None

    def append(self, events: Iterable[ScanEvent]) -> None:
        text = "".join(
            json.dumps(event_row(e), ensure_ascii=False, separators=(", ", ": ")) + "\n"
            for e in events
        )
        if text and self.failed is None:
            data = text.encode("utf-8")
            view = memoryview(data)
            try:
                while view:
                    view = view[os.write(self.fd, view) :]
            except OSError as exc:
                error = self._error(exc)
                self.failed = str(error)
                raise error from None
            self.size += len(data)
        if self.failed is not None:
            raise OutputError(self.failed)

    def sync(self) -> None:
        if self.failed is not None:
            raise OutputError(self.failed)
        try:
            os.fsync(self.fd)
        except OSError as exc:
            raise self._error(exc) from None

    def close(self) -> None:
        os.close(self.fd)

    def _error(self, exc: OSError) -> OutputError:
        return OutputError(f"cannot write the events file {self.path}: {exc.strerror or exc}")
