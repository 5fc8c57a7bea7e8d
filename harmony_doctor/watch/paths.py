"""What the PATH arguments name, looked at again as the watch runs: files, folders (every log
under them, Kubernetes' /var/log/pods and /var/log/containers included), globs, `-` for
standard input. A rotated or compressed part (`vllm.log.1`, `0.log.20261204-101500.gz`) is
not followed: it is an older part of a live file that is (scan/names.py)."""

from __future__ import annotations

import glob
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

from harmony_doctor.inputs.files import Source
from harmony_doctor.scan.names import stream_of
from harmony_doctor.scan.own_outputs import written_by_scan

STDIN = "-"
_COMPRESSED = (".gz", ".bz2", ".xz", ".zst", ".zstd", ".lz4")
_WILD = set("*?[")


def is_glob(arg: str) -> bool:
    return any(ch in _WILD for ch in arg)


SPECIAL = "special file (FIFO, device or socket), not followed"  # scan's words for them


def expand(args: Sequence[str]) -> tuple[list[tuple[str, Path, bool]], list[tuple[str, str]]]:
    """(label, path, named) of each live log the arguments name now, in order, each file once
    (by device and inode: /var/log/containers' links name /var/log/pods' files); `named`: a
    path given as it is, kept even where nothing is there yet (followed once it appears),
    where a file found in a folder or by a glob is followed only while it is there. Then what
    is not followed and is said: (name, why) of a glob that matches no log (as a missing path
    is said), and of a FIFO, device or socket a folder or glob holds."""
    seen: set[tuple[int, int]] = set()
    out: list[tuple[str, Path, bool]] = []
    unfollowed: list[tuple[str, str]] = []
    for arg in args:
        if arg == STDIN:
            continue
        if is_glob(arg):
            names = _logs(sorted(glob.glob(arg, recursive=True)), unfollowed)
            if not names:
                unfollowed.append((arg, "no log matches"))
        elif os.path.isdir(arg):
            names = _logs(sorted(_under(arg)), unfollowed)  # none yet is usual (no pod yet)
        else:
            names = [arg]
        for name in names:
            try:
                info = os.stat(name)
            except OSError:
                if not is_glob(arg):
                    out.append((name, Path(name), True))  # said once, followed once there
                continue
            if (info.st_dev, info.st_ino) in seen:
                continue
            seen.add((info.st_dev, info.st_ino))
            out.append((name, Path(name), name == arg))
    return out, unfollowed


def _under(folder: str) -> Iterator[str]:
    """Every file under a folder (links followed: /var/log/containers holds links)."""
    for root, dirs, files in os.walk(folder, followlinks=True):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in files:
            yield os.path.join(root, name)


def _logs(names: list[str], unfollowed: list[tuple[str, str]]) -> list[str]:
    """The live logs among `names`; a FIFO, device or socket among them is noted."""
    kept = []
    for name in names:
        kind = _live_log(name)
        if kind is True:
            kept.append(name)
        elif kind is not False:
            unfollowed.append((name, kind))
    return kept


def _live_log(name: str) -> bool | str:
    """A regular file that is neither hidden, compressed, a rotated part, nor scan's export
    (True), what is left out without a word (False: a folder, a file gone), or why a special
    file is not followed."""
    base = os.path.basename(name)
    if base.startswith(".") or base.lower().endswith(_COMPRESSED) or stream_of(base) != base:
        return False
    try:
        mode = os.stat(name).st_mode
    except OSError:
        return False
    if stat.S_ISDIR(mode):
        return False
    if not stat.S_ISREG(mode):
        return SPECIAL
    return written_by_scan(Source(name, Path(name))) is None


def parts_of(path: Path) -> Iterator[Path]:
    """The uncompressed rotated parts of a live log beside it (`vllm.log.1`, dated ones): where
    its older bytes went, found again by inode (a rename) or by first bytes (a copy)."""
    folder = path.parent
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in sorted(names):
        compressed = name.lower().endswith(_COMPRESSED)
        if name != path.name and not compressed and stream_of(name) == path.name:
            yield folder / name
