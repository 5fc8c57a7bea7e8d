"""Following one log by its name, as `tail -F` does: the bytes it gained since the last look,
across a rename rotation, a copy-truncate, a file replaced and a file that is not there yet.

Nothing is read here but a file's first bytes (its fingerprint): a follower keeps `pending`,
the byte ranges of open files still to be read, oldest first, and the reader (watch/reading.py)
reads them as one stream, so that a failure cut by a rotation is read whole. A file renamed
away is kept open until its rest is read, as `tail -F` keeps it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

FINGERPRINT = 256  # the first bytes that tell one file from another (with its inode)
Start = Literal["start", "end"]


@dataclass(frozen=True)
class Identity:
    """Which file a name pointed at: its device and inode, and the digest of its first bytes
    (an inode number is reused once a file is removed; its first bytes rarely are)."""

    device: int
    inode: int
    fingerprint: str
    fingerprint_bytes: int

    def same_file(self, other: Identity) -> bool:
        """The same file, grown or not: same inode, and the shorter fingerprint a prefix of the
        longer one's bytes (checked by the caller where both are known)."""
        return (self.device, self.inode) == (other.device, other.inode)


def identity_of(fd: int, size: int) -> Identity:
    """The identity of the open file `fd` (of `size` bytes)."""
    info = os.fstat(fd)
    head = os.pread(fd, min(size, FINGERPRINT), 0)
    return Identity(info.st_dev, info.st_ino, hashlib.sha256(head).hexdigest(), len(head))


def starts_with(fd: int, identity: Identity) -> bool:
    """Whether the open file's first bytes are still the ones `identity` was taken from."""
    head = os.pread(fd, identity.fingerprint_bytes, 0)
    return (
        len(head) == identity.fingerprint_bytes
        and hashlib.sha256(head).hexdigest() == identity.fingerprint
    )


@dataclass
class Piece:
    """Bytes [pos, end) of one open file, still to be read; `live`: the file the name points
    at now (its last line may be still being written, so it is read to its last newline)."""

    fd: int
    identity: Identity
    pos: int
    end: int
    live: bool


class Followed:
    """One name followed. `poll` looks at the name and notes what the file gained; a problem
    (missing, unreadable) is returned once as a notice until it is mended."""

    def __init__(
        self, label: str, path: Path, start: Start | tuple[Identity, int], named: bool = True
    ) -> None:
        self.label = label
        self.path = path
        self.named = named  # given as a path (not found in a folder or by a glob)
        self.start = start  # where reading begins: a saved place, or the file's start or end
        self.pending: list[Piece] = []
        self.problem: str | None = None  # the last problem said, until it is mended
        self.truncated = False  # the file shrank: what is pending is read, then it starts over
        self.gained = 0  # bytes noted by the last poll
        self.fresh = 0  # bytes noted since the last read
        self.grew_at = 0.0  # monotonic seconds of the last poll that noted bytes
        self.since: float | None = None  # when the oldest fresh bytes were noted
        self.unchanged = 0.0  # seconds the file just opened had not been written (its mtime)
        self.errors = 0  # read errors met (open, stat, read)
        self.lost_place: tuple[Identity, int] | None = None  # a saved place the name lost

    @property
    def live(self) -> Piece | None:
        return self.pending[-1] if self.pending and self.pending[-1].live else None

    @property
    def waiting(self) -> int:
        """Bytes noted and not read yet."""
        return sum(p.end - p.pos for p in self.pending)

    def poll(self, now: float) -> str | None:
        """Look at the name once; a notice when a problem is new."""
        self.gained = 0
        notice = self._look()
        if self.gained:
            self.fresh += self.gained
            # A file found already at rest (a backlog) has paused: read at once, not a look later.
            self.grew_at, self.unchanged = now - self.unchanged, 0.0
            self.since = now if self.since is None else self.since
        return notice

    def read_done(self) -> None:
        """What was noted has been read (the line still being written stays noted)."""
        self.fresh = 0
        self.since = None
        self.settle()

    def _look(self) -> str | None:
        try:
            info = os.stat(self.path)
        except OSError as exc:
            self._unlive()  # renamed away or removed: its rest is still read
            if self.start == "end":
                self.start = "start"  # not there at the start: all of it is new once it is
            return self._said(_why(exc))
        if not stat.S_ISREG(info.st_mode):
            return self._said("not a regular file")
        live = self.live
        if live is None or (info.st_dev, info.st_ino) != (
            live.identity.device,
            live.identity.inode,
        ):
            self._unlive()
            problem = self._open(info.st_size)
            if problem is not None:
                return self._said(problem)
        else:
            self._grown(live, info.st_size)
        self.problem = None
        return None

    def _grown(self, live: Piece, size: int) -> None:
        if size < live.end or (
            size != live.end
            and live.identity.fingerprint_bytes
            and not _same_head(live.fd, live.identity)
        ):
            self.truncated = True  # copy-truncate: what was noted before is read first
            return
        if live.identity.fingerprint_bytes < FINGERPRINT and size > live.identity.fingerprint_bytes:
            live.identity = identity_of(live.fd, size)
        self.gained += size - live.end
        live.end = size

    def restart(self) -> None:
        """After a truncation was read: the file from its start."""
        self.truncated = False
        live = self.live
        if live is not None:
            size = os.fstat(live.fd).st_size
            live.identity = identity_of(live.fd, size)
            live.pos, live.end = 0, size
            self.fresh += size
            self.since = self.grew_at if self.since is None else self.since

    def _open(self, size: int) -> str | None:
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            self.errors += 1
            return _why(exc)
        info = os.fstat(fd)
        size = info.st_size
        self.unchanged = max(0.0, time.time() - info.st_mtime)
        identity = identity_of(fd, size)
        pos = 0 if self.pending or self.start == "start" else last_line_end(fd, size)
        if isinstance(self.start, tuple):
            saved, offset = self.start
            if saved.same_file(identity) and offset <= size and starts_with(fd, saved):
                pos = offset
            else:
                pos = 0  # rotated while we were away: its old part is placed by the caller
                self.lost_place = (saved, offset)
        self.start = "start"  # a file that appears later is new: read from its start
        self.pending.append(Piece(fd, identity, pos, size, live=True))
        self.gained += size - pos
        return None

    def _unlive(self) -> None:
        live = self.live
        if live is not None:
            with contextlib.suppress(OSError):
                live.end = max(live.end, os.fstat(live.fd).st_size)
            live.live = False

    def _said(self, problem: str) -> str | None:
        if problem == self.problem:
            return None
        self.problem = problem
        return problem

    def settle(self) -> None:
        """After a read: pieces read to their end are closed (the live one stays open)."""
        kept = []
        for piece in self.pending:
            if piece.live or piece.pos < piece.end:
                kept.append(piece)
            else:
                os.close(piece.fd)
        self.pending = kept

    def place(self) -> tuple[Identity, int] | None:
        """Where reading would start again: the first unread byte of the oldest open file."""
        if not self.pending:
            return None
        first = self.pending[0]
        return first.identity, first.pos

    def close(self) -> None:
        for piece in self.pending:
            with contextlib.suppress(OSError):
                os.close(piece.fd)
        self.pending = []


def adopt(followed: Followed, fd: int, offset: int, before: Piece | None = None) -> None:
    """Put an older part (a rotated file, or a copy) before `before` (default: first)."""
    size = os.fstat(fd).st_size
    identity = identity_of(fd, size)
    at = 0 if before is None else next(i for i, p in enumerate(followed.pending) if p is before)
    followed.pending.insert(at, Piece(fd, identity, offset, size, live=False))


def _same_head(fd: int, identity: Identity) -> bool:
    try:
        return starts_with(fd, identity)
    except OSError:
        return True


def last_line_end(fd: int, size: int, start: int = 0) -> int:
    """The offset just past the last newline of the file's bytes [start, size) (`start` if
    there is none): where following from the end starts, so that a line being written is read
    whole; where reading the live file stops."""
    step = 64 * 1024
    end = size
    while end > start:
        begin = max(start, end - step)
        data = os.pread(fd, end - begin, begin)
        at = data.rfind(b"\n")
        if at >= 0:
            return begin + at + 1
        end = begin
    return start


def _why(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__
