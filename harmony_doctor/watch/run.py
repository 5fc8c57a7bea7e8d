"""The watch: followers looked at every `interval`, what they noted read through scan when the
log pauses (or has been growing for `longest`), the counts folded, events appended, the state
saved between reads. Core code: it never prints (notices go to `say`) and never exits."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harmony_doctor.scan.names import rotation_rank
from harmony_doctor.scan.records import FileScan, ScanOptions, host_name
from harmony_doctor.watch.backlog import DEFAULT_LAYOUT, Layout, read_backlog
from harmony_doctor.watch.counts import Counts
from harmony_doctor.watch.events import EventLog
from harmony_doctor.watch.follow import Followed, Identity, Start, adopt, starts_with
from harmony_doctor.watch.metrics import Snapshot
from harmony_doctor.watch.outputs import check_outputs, own_outputs
from harmony_doctor.watch.paths import SPECIAL, STDIN, expand, parts_of
from harmony_doctor.watch.reading import read_bytes, read_pieces, whole_lines_end
from harmony_doctor.watch.state import Saved, load_state, save_state

PIPE_HELD = 8 * 1024 * 1024  # bytes of a pipe held before they are read, paused or not


@dataclass(frozen=True)
class WatchOptions:
    paths: tuple[str, ...]
    from_start: bool = False
    origin: str | None = None
    state: Path | None = None
    events: Path | None = None
    textfile: Path | None = None  # the folder of node-exporter's textfile (not followed)
    interval: float = 0.25  # seconds between looks at the files
    quiet: float = 0.2  # a pause this long ends a read
    longest: float = 2.0  # a log growing without a pause is read at least this often
    save_every: float = 5.0  # seconds between state saves while bytes are read
    rescan_every: float = 2.0  # seconds between looks for new files (globs, folders)
    jobs: int = 1  # worker processes for a large backlog (watch/backlog.py)
    layout: Layout = DEFAULT_LAYOUT  # how a large backlog is cut for them


class _Pipe:
    """Standard input, read as it comes without blocking: whole lines are read through scan,
    the line still being written is held."""

    def __init__(self) -> None:
        self.fd = 0
        os.set_blocking(self.fd, False)
        self.held = b""
        self.ended = False
        self.grew_at = 0.0
        self.since: float | None = None

    def poll(self, now: float) -> None:
        while not self.ended and len(self.held) < PIPE_HELD:
            try:
                data = os.read(self.fd, 1 << 20)
            except BlockingIOError:
                return
            if not data:
                self.ended = True
                return
            self.held += data
            self.grew_at = now
            self.since = now if self.since is None else self.since

    def take(self) -> bytes:
        """The whole lines held (everything once the pipe ended)."""
        cut = len(self.held) if self.ended else self.held.rfind(b"\n") + 1
        data, self.held = self.held[:cut], self.held[cut:]
        self.since = None
        return data


class Watcher:
    """One watch: its followers, counts, events file and state."""

    def __init__(self, options: WatchOptions, say: Callable[[str], None]) -> None:
        check_outputs(options.paths, options.state, options.events, options.textfile)
        self.options = options
        self.say = say
        origin = options.origin or host_name()
        self.scan_options = ScanOptions(origin=origin, jobs=max(1, options.jobs))
        saved = load_state(options.state) if options.state is not None else None
        self.counts = saved.counts if saved is not None else Counts()
        self.places: dict[str, tuple[Identity, int]] = dict(saved.places) if saved else {}
        self.events = None
        if options.events is not None:
            self.events = EventLog(options.events, saved.events_bytes if saved else None)
        self.followed: dict[str, Followed] = {}
        self.pipe = _Pipe() if STDIN in options.paths else None
        self.lock = threading.Lock()
        self.started = time.time()
        self.shown = Snapshot(self.counts.copy(), 0, self.started)
        self.own = own_outputs(options.state, options.events, options.textfile)
        self.unfollowed: set[str] = set()  # what expand left out and was said (until SIGHUP)
        self.not_text: set[str] = set()  # inputs whose last read was skipped as not text
        self.looked = False  # files found at the first look start at their end
        self.rescanned = -1e9
        self.saved_at = time.monotonic()
        self.unsaved = False
        self.saves = 0
        self.stopped: Callable[[], bool] = lambda: False

    # -- the loop ---------------------------------------------------------------------------

    def run(
        self,
        stopped: Callable[[], bool],
        reopen: Callable[[], bool] = lambda: False,
        publish: Callable[[], None] | None = None,
    ) -> None:
        """Watch until `stopped()`; `reopen()` true: every file is looked for again now;
        `publish` is called when the counts changed (at most once a second) and at the end."""
        self.stopped = stopped
        published, unpublished = 0.0, True
        try:
            while not stopped():
                if reopen():
                    self.reopen()
                changed = self.step(time.monotonic())
                unpublished = unpublished or changed
                if unpublished and publish is not None and time.monotonic() - published >= 1:
                    publish()
                    published, unpublished = time.monotonic(), False
                if self.pipe is not None and self.pipe.ended and not self.followed:
                    break  # only a pipe, and it ended
                if not changed:
                    time.sleep(self.options.interval)
        finally:
            self.save()
            if publish is not None:
                publish()

    def step(self, now: float) -> bool:
        """One look at every input; whether anything was read."""
        if now - self.rescanned >= self.options.rescan_every:
            self.discover()
            self.rescanned = now
        read = False
        for followed in list(self.followed.values()):
            if self.stopped():
                break
            read = self._step_file(followed, now) or read
        if self.pipe is not None:
            read = self._step_pipe(now) or read
        files = self._files()
        if files != self.shown.files:
            with self.lock:
                self.shown = Snapshot(self.shown.counts, files, self.started)
            read = True  # a change to publish
        # The first read is saved at once: a watch killed before its next save still resumes
        # from a place, not from nothing.
        due = self.saves == 0 or time.monotonic() - self.saved_at >= self.options.save_every
        if self.unsaved and due:
            self.save()
        return read

    def discover(self) -> None:
        """Follow what the arguments name now and is not followed yet; forget files found in a
        folder or by a glob that are gone and read to their end (a deleted pod's log), so that
        memory and the state do not grow with every file ever followed. What is left out is
        said once (again after SIGHUP): a glob that matches no log, a FIFO or device found."""
        found, unfollowed = expand(self.options.paths)
        for name, why in unfollowed:
            if name not in self.unfollowed:
                again = "" if why == SPECIAL else f" (looked for again every {_secs(self)})"
                self.say(f"{name}: {why}{again}")
                self.unfollowed.add(name)
        now = {label for label, _, _ in found}
        for label, followed in list(self.followed.items()):
            if label not in now and not followed.named and not followed.waiting:
                followed.close()
                del self.followed[label]
                self.places.pop(label, None)
        for label, path, named in found:
            if label in self.followed or _resolved(path) in self.own:
                continue
            start = self.places.get(label)
            begin: Start = "start" if self.options.from_start or self.looked else "end"
            self.followed[label] = Followed(label, path, start or begin, named)
        self.looked = True

    def reopen(self) -> None:
        """SIGHUP: look for every file again now, and say again what is still wrong."""
        self.rescanned = -1e9
        self.unfollowed.clear()
        for followed in self.followed.values():
            followed.problem = None

    def _step_file(self, followed: Followed, now: float) -> bool:
        notice = followed.poll(now)
        failed, followed.errors = followed.errors, 0
        if notice is not None and (followed.named or failed):
            self.say(f"{followed.label}: {notice} (looked for again every {_secs(self)})")
            if failed:  # counted once a problem, as it is said
                self.counts.read_errors += 1
                self.unsaved = True
        if followed.lost_place is not None:
            self._find_old_part(followed)
        if followed.truncated:
            self._find_copy(followed)
            self._read(followed)
            followed.restart()
            return True
        waited = now - followed.grew_at >= self.options.quiet
        long = followed.since is not None and now - followed.since >= self.options.longest
        left = any(not piece.live for piece in followed.pending)  # a part renamed away
        if (followed.fresh or left) and (waited or long):
            self._read(followed)
            return True
        return False

    def _step_pipe(self, now: float) -> bool:
        pipe = self.pipe
        assert pipe is not None
        pipe.poll(now)
        waited = now - pipe.grew_at >= self.options.quiet
        long = pipe.since is not None and now - pipe.since >= self.options.longest
        if pipe.held and (waited or long or pipe.ended or len(pipe.held) >= PIPE_HELD):
            data = pipe.take()
            if data:
                found = read_bytes(data, "(stdin)", self.scan_options)
                self._lost(found, len(data))
                self._fold(found, pipe_only=True)
                return True
        return False

    # -- reading -----------------------------------------------------------------------------

    def _read(self, followed: Followed) -> None:
        if self._shared(followed):
            found = self._read_backlog(followed)
            if found is not None:
                followed.read_done()
                self._lost(found, 0)
                self._fold(found)
                return
            if self.stopped():
                return  # stopped in a backlog: nothing read, the place stays at its start
        begun = [(piece, piece.pos) for piece in followed.pending]
        found, failed = read_pieces(
            followed.pending, followed.label, self.scan_options, self.stopped
        )
        if failed is not None:
            self.counts.read_errors += 1
            self.say(f"{followed.label}: {failed}")
        if found.report.status == "skipped" and failed is None:
            for piece, _ in begun:  # not text: what was noted is skipped whole, as scan skips it
                piece.pos = max(piece.pos, piece.end)
        self._lost(found, sum(piece.pos - pos for piece, pos in begun))
        followed.read_done()
        self._fold(found)

    def _lost(self, found: FileScan, size: int) -> None:
        """A read that did not take its bytes whole, by scan's own facts (the status and reason
        it gives a file: a line cut at MAX_LINE, data that is not text), said on one line and
        counted. Data still not text on the next reads is counted, not said again."""
        report = found.report
        if report.status == "ok":
            self.not_text.discard(report.path)
            return
        self.counts.read_errors += 1
        self.counts.cut_lines += report.cut_lines
        self.unsaved = True
        if report.status != "skipped":
            self.say(f"{report.path}: {report.reason}")
        elif report.path not in self.not_text:
            self.not_text.add(report.path)
            self.say(
                f"{report.reason}: {size:,} bytes skipped (said once until it reads as text again)"
            )

    def _shared(self, followed: Followed) -> bool:
        """Whether what is to read is a large backlog of the live file alone (a first read from
        its start, or a place far behind), to be shared out over the jobs."""
        pending = followed.pending
        return (
            self.options.jobs > 1
            and len(pending) == 1
            and pending[0].live
            and pending[0].end - pending[0].pos >= self.options.layout.split
        )

    def _read_backlog(self, followed: Followed) -> FileScan | None:
        """The live file's backlog read on every core (watch/backlog.py), up to its last whole
        line; None when it is read as one stream after all (a read failed, or every cut would
        fall in one long line) or the watch was stopped meanwhile."""
        piece = followed.pending[0]
        try:
            end = whole_lines_end(piece)
        except OSError:
            return None  # the one-stream read says what is wrong
        full, piece.end = piece.end, end
        try:
            return read_backlog(
                piece,
                followed.path,
                followed.label,
                self.scan_options,
                self.stopped,
                self.options.layout,
            )
        finally:
            piece.end = full

    def _fold(self, found: FileScan, pipe_only: bool = False) -> None:
        self.counts.add(found, time.time())
        if self.events is not None and found.events:
            self.events.append(found.events)
        with self.lock:
            self.shown = Snapshot(self.counts.copy(), self._files(), self.started)  # this thread
        self.unsaved = self.unsaved or not pipe_only

    def _files(self) -> int:
        return sum(1 for f in self.followed.values() if f.live is not None) + (
            1 if self.pipe is not None and not self.pipe.ended else 0
        )

    def snapshot(self) -> Snapshot:
        """The counts as last folded (for the metrics server's thread)."""
        with self.lock:
            return self.shown

    # -- rotation ----------------------------------------------------------------------------

    def _find_old_part(self, followed: Followed) -> None:
        """The log rotated while the watch was down: its saved place is in a rotated part
        (found by inode, or by first bytes for a copy); that part's rest is read first, then
        every newer part, then the live file."""
        saved, offset = followed.lost_place or (None, 0)
        followed.lost_place = None
        if saved is None:
            return
        parts = sorted(parts_of(followed.path), key=lambda p: rotation_rank(p.name))
        for index, part in enumerate(parts):
            fd = _open(part)
            if fd is None:
                continue
            info = os.fstat(fd)
            same = (info.st_dev, info.st_ino) == (saved.device, saved.inode)
            if (same or info.st_size >= offset) and starts_with(fd, saved):
                live = followed.live
                adopt(followed, fd, offset, before=live)
                for newer in parts[index + 1 :]:
                    more = _open(newer)
                    if more is not None:
                        adopt(followed, more, 0, before=live)
                followed.fresh += followed.waiting
                return
            os.close(fd)
        self.say(
            f"{followed.label}: replaced while the watch was stopped, and the part it was read "
            "to is gone: read from the start of the new file"
        )

    def _find_copy(self, followed: Followed) -> None:
        """Copy-truncate: the copy holds the bytes not read yet; read them from it."""
        live = followed.live
        if live is None:
            return
        for part in parts_of(followed.path):
            fd = _open(part)
            if fd is None:
                continue
            if os.fstat(fd).st_size >= live.pos and starts_with(fd, live.identity):
                adopt(followed, fd, live.pos, before=live)
                live.end = live.pos  # the truncated file has nothing left to give
                return
            os.close(fd)

    # -- state -------------------------------------------------------------------------------

    def save(self) -> None:
        """Save the state (between reads: no window is open) and sync the events file."""
        if self.events is not None:
            self.events.sync()
        self.saved_at = time.monotonic()
        self.unsaved = False
        self.saves += 1
        if self.options.state is None:
            return
        for label, followed in self.followed.items():
            place = followed.place()
            if place is not None:
                self.places[label] = place
        events = self.events.size if self.events is not None else None
        save_state(self.options.state, Saved(dict(self.places), self.counts, events))

    def close(self) -> None:
        for followed in self.followed.values():
            followed.close()
        if self.events is not None:
            self.events.close()


def _secs(watcher: Watcher) -> str:
    return f"{watcher.options.rescan_every:g} s"


def _open(path: Path) -> int | None:
    try:
        return os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None


def _resolved(path: Path) -> Path:
    with contextlib.suppress(OSError):
        return path.resolve()
    return path
