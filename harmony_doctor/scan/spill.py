"""A unit's final events on their way out of the scan, in bounded memory: placed in their part,
marked with their origin (and redacted), gathered in batches of BATCH, and each batch written
to a spill directory as an Arrow IPC file (scan/summary.py's events frame), or, without a
directory, kept as records (library calls that want `ScanResult.events`).

The spill directory belongs to the caller; an EventSpill only names its files, so it crosses
processes cheaply. The CLI's scan holds one (`held_spill`) and removes it on every way out a
process can answer; one that SIGKILL or the out-of-memory killer left is removed by the next
scan (`sweep`). A spill is owned by a lock, not by a pid: `.lock` inside it, locked (flock)
from before the directory has its name until the scan ends, so a scan in another pid
namespace sharing the temporary folder and the hostname (containers) is never taken for a
dead one; the sweep removes only a spill whose lock it can take.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import uuid
import zlib
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from harmony_doctor.errors import OutputError
from harmony_doctor.lazy_regex import Pattern
from harmony_doctor.scan.found import SourceScan
from harmony_doctor.scan.records import EventSpill, ScanOptions, host_name

if TYPE_CHECKING:
    import polars as pl

    from harmony_doctor.harmony.vocab import Vocab
    from harmony_doctor.models import ScanEvent
    from harmony_doctor.scan.findings import EventStream
    from harmony_doctor.streams.clean import CleanStreams

BATCH = 4096  # final events held before a batch is written out


class EventSink:
    """The events of one unit (one source, or the parts of one rotated log read as one
    stream): `settled` is scan_parts' hook, `close` takes the rest once the unit is read."""

    def __init__(
        self,
        labels: Sequence[str],
        options: ScanOptions,
        directory: Path | None,
        vocab: Callable[[], Vocab],
        clean: CleanStreams | None,
    ) -> None:
        self.labels = list(labels)
        self.options = options
        self.origin = options.origin_name()
        self.directory = directory
        self.vocab = vocab
        self.clean = clean
        self.stream: EventStream | None = None
        self.held: list[list[ScanEvent]] = [[] for _ in labels]  # per part, not written yet
        self.files: list[list[str]] = [[] for _ in labels]
        self.counts = [0 for _ in labels]

    def settled(self, found: SourceScan, floor: int) -> None:
        if self.stream is not None or _found_any(found):
            self._put(found, self._stream(found).advance(floor))

    def close(self, found: SourceScan) -> list[tuple[list[ScanEvent], EventSpill | None]]:
        """Per part: its events held (with no directory, all of them) and its spill."""
        if self.stream is not None or _found_any(found):
            self._put(found, self._stream(found).close())
        results: list[tuple[list[ScanEvent], EventSpill | None]] = []
        for part, held in enumerate(self.held):
            if found.server is not None:  # events final before the source named its server
                held = [replace(e, server=found.server) if e.server is None else e for e in held]
            if self.directory is None:
                results.append((held, None))
                continue
            if held:
                self._write(part, held)
            files = tuple((path, found.server) for path in self.files[part])
            results.append(([], EventSpill(files, self.counts[part])))
        return results

    def final(self, events: Iterable[ScanEvent]) -> list[ScanEvent]:
        """Events as they leave the scan: marked with their origin, redacted if asked."""
        marked = [replace(e, origin=self.origin) for e in events]
        if self.options.redact:
            from harmony_doctor.scan.findings import redact

            marked = [redact(e) for e in marked]
        return marked

    def _stream(self, found: SourceScan) -> EventStream:
        if self.stream is None:
            from harmony_doctor.scan.findings import EventStream

            self.stream = EventStream(found, self.vocab, self.options, self.clean)
        return self.stream

    def _put(self, found: SourceScan, events: list[ScanEvent]) -> None:
        """Final events, each placed in the part its line is in (its line counted there)."""
        starts = found.starts
        for event in self.final(events):
            part = 0
            if len(self.labels) > 1:
                part = bisect_right(starts, event.line - 1) - 1
                line = event.line - starts[part]
                event = replace(event, file=self.labels[part], line=line)
            self.held[part].append(event)
            self.counts[part] += 1
            if self.directory is not None and len(self.held[part]) >= BATCH:
                self._write(part, self.held[part])
                self.held[part] = []

    def _write(self, part: int, events: list[ScanEvent]) -> None:
        assert self.directory is not None
        self.files[part].append(write_batch(events, self.directory))


def write_batch(events: list[ScanEvent], directory: Path) -> str:
    """Final events written to `directory` as one IPC file of the events frame: its path.
    OutputError when it cannot be (a full disk): the scan cannot hold what it found."""
    from harmony_doctor.scan.summary import events_frame

    return write_frame(events_frame(events), directory)


def write_frame(frame: pl.DataFrame, directory: Path) -> str:
    """An events frame written to `directory` as one IPC file: its path (OutputError as
    write_batch's)."""
    from polars.exceptions import PolarsError

    path = directory / f"{uuid.uuid4().hex}.arrow"
    try:
        directory.mkdir(mode=0o700, exist_ok=True)  # made by the first batch: most scans have none
        frame.write_ipc(path)
    except (OSError, PolarsError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise OutputError(
            f"cannot write the failures found to {directory} ({why}): "
            "free space there, or name another place with TMPDIR"
        ) from None
    return str(path)


def spilled(events: list[ScanEvent], directory: Path) -> EventSpill:
    """Events held (a token-stream document's, which are few) written out: in a scan with a
    spill, every input's events are there, in the order of the inputs."""
    return EventSpill(((write_batch(events, directory), None),), len(events))


def _found_any(found: SourceScan) -> bool:
    """Whether a source found anything yet (one that finds nothing loads no diagnosis)."""
    return bool(found.errors or found.completions or found.replayed or found.rejected)


_SPILL = Pattern(r"harmony-doctor-spill-([0-9a-f]{8})-([0-9]{1,10})-[0-9a-f]{32}")


def spill_path(parent: Path) -> Path:
    """A new spill directory's path under `parent` (not made): this host's and this process's
    marks in its name, so that `sweep` can tell one whose scan was killed."""
    return parent / f"harmony-doctor-spill-{_host()}-{os.getpid()}-{uuid.uuid4().hex}"


LOCK = ".lock"  # the file inside a spill whose lock its scan holds while it runs


@contextlib.contextmanager
def held_spill(parent: Path) -> Iterator[Path]:
    """A spill directory under `parent` for one scan, locked for its life and removed after
    (the spills killed scans left there are removed first: `sweep`). An error raised in the
    body while the directory is gone (removed under the running scan) is an OutputError of one
    line. Where no directory can be made, the path is given unmade: the first batch written
    says why it cannot be."""
    sweep(parent)
    path = spill_path(parent)
    lock = _locked(path)
    try:
        made = os.stat(path) if lock is not None else None
    except OSError:
        made = None
    try:
        yield path
    except Exception:
        if made is not None and _moved(path, made):
            raise OutputError(
                f"the scan's temporary folder {path} was removed while the scan ran (another "
                "process cleaning the temporary folder?): run it again, or name another place "
                "with TMPDIR"
            ) from None
        raise
    finally:
        shutil.rmtree(path, ignore_errors=True)
        if lock is not None:
            os.close(lock)


def _locked(path: Path) -> int | None:
    """Make the spill at `path` with its `.lock` locked, under a name no sweep takes, then
    give it its name (a rename: no sweep ever sees it unlocked). The lock's descriptor, held
    until the scan ends; None where it cannot be made."""
    import fcntl
    import tempfile

    try:
        making = Path(tempfile.mkdtemp(prefix=".making-", dir=path.parent))  # 0700
    except OSError:
        return None
    try:
        lock = os.open(making / LOCK, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError:
        shutil.rmtree(making, ignore_errors=True)
        return None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.rename(making, path)
    except OSError:
        os.close(lock)
        shutil.rmtree(making, ignore_errors=True)
        return None
    return lock


def _moved(path: Path, made: os.stat_result) -> bool:
    """Whether the directory made at `path` is gone (or another now has its name)."""
    try:
        now = os.stat(path)
    except OSError:
        return True
    return (now.st_dev, now.st_ino) != (made.st_dev, made.st_ino)


def sweep(parent: Path) -> list[Path]:
    """Remove the spill directories under `parent` that killed scans left (SIGKILL, the
    out-of-memory killer): named by this host, owned by this user, and their lock free (one
    made before spills had a lock: its process gone). Another host's (a shared temporary
    directory) and a running scan's, in whatever pid namespace, are left. The paths removed."""
    if not hasattr(os, "getuid"):
        return []
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return []
    removed = []
    for entry in entries:
        name = _SPILL.fullmatch(entry.name)
        if name is None or name[1] != _host():
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            continue
        if _remove_unlocked(Path(entry.path), int(name[2])):
            removed.append(Path(entry.path))
    return removed


def _remove_unlocked(path: Path, pid: int) -> bool:
    """Remove a spill whose lock no scan holds (taken, then removed with it); without a lock
    file, one whose process is gone. Whether it was removed."""
    import fcntl

    try:
        lock = os.open(path / LOCK, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        if not _gone(pid):
            return False
        shutil.rmtree(path, ignore_errors=True)
        return True
    except OSError:
        return False
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # held: its scan is running
        return False
    else:
        shutil.rmtree(path, ignore_errors=True)
        return True
    finally:
        os.close(lock)


def _host() -> str:
    """This host's mark in a spill's name: its name's CRC-32 (a mark, not a secret; zlib is
    loaded already, hashlib's OpenSSL is not: 3 ms of a scan's start)."""
    return f"{zlib.crc32(host_name().encode(errors='surrogateescape')):08x}"


def _gone(pid: int) -> bool:
    """Whether no process has this pid (0 and pids past the system's range count as running:
    nothing is removed on a doubt)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (OSError, OverflowError):
        return False
    return False
