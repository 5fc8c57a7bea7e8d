"""The files a watch writes (--state, --events, node-exporter's textfile): checked before it
starts, so that a path it cannot write is refused at once rather than at its first save, and
known, so that a folder or glob it follows never reads them back as logs."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from harmony_doctor.errors import OutputError
from harmony_doctor.output.targets import check_writable
from harmony_doctor.scan.event_files import table_format
from harmony_doctor.watch.metrics import TEXTFILE

EVENTS_FORMAT = "jsonl"  # what watch appends: one JSON object a line (watch/events.py)


def check_outputs(
    paths: Sequence[str], state: Path | None, events: Path | None, textfile: Path | None
) -> None:
    """Refuse, before anything is read, a state or events file that cannot be written (its
    folder missing or read-only, a folder or special file in its place), an events file whose
    name says another format than the JSON lines watch appends (`report` reads by the name),
    the two being one file, and an output that is a log named in `paths` (it would follow
    what it writes)."""
    written = [("--events", events), ("--state", state)]
    if textfile is not None:
        written.append(("--textfile", textfile / TEXTFILE))
    for option, output in written:
        followed = next((p for p in paths if output is not None and _same_file(p, output)), None)
        if followed is not None:
            raise OutputError(
                f"{option} {output} is the followed log {followed}: write it elsewhere"
            )
    if events is not None:
        if table_format(events) != EVENTS_FORMAT:
            raise OutputError(
                f"--events {events}: watch appends JSON lines: give a name ending in .jsonl "
                "(or .ndjson)"
            )
        _writable("--events", events)
    if state is not None:
        _writable("--state", state)
        _probe(state)
    if state is not None and events is not None and _resolved(state) == _resolved(events):
        raise OutputError(f"--state {state} and --events {events} are the same file")


def own_outputs(state: Path | None, events: Path | None, textfile: Path | None) -> set[Path]:
    """The resolved paths of the files the watch writes (the textfile in its folder)."""
    named = [state, events, None if textfile is None else textfile / TEXTFILE]
    return {_resolved(path) for path in named if path is not None}


def _writable(option: str, path: Path) -> None:
    try:
        check_writable(path)
    except OutputError as exc:
        why = str(exc).removeprefix(f"cannot write {path}: ")
        raise OutputError(f"{option} {path}: {why}") from None


def _probe(state: Path) -> None:
    """Make and remove a file beside the state, as its saves do (a temporary file renamed):
    a folder that looks writable and is not (/proc, a read-only mount for root) is refused
    now, not at the first save."""
    folder = state.parent if str(state.parent) else Path(".")
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{state.name}.", suffix=".part", dir=folder)
    except OSError as exc:
        raise OutputError(f"--state {state}: cannot write in {folder}: {exc.strerror}") from None
    os.close(handle)
    with contextlib.suppress(OSError):
        os.unlink(temporary)


def _same_file(path: str, other: Path) -> bool:
    """Whether `path` names the file `other` is (however spelled: links too), both existing."""
    try:
        return Path(path).samefile(other)
    except OSError:
        return False


def _resolved(path: Path) -> Path:
    with contextlib.suppress(OSError, RuntimeError):
        return path.resolve()
    return path
