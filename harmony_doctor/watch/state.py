"""The state file: where each followed log was read to (the file by inode and fingerprint, the
offset), the counters so far and the length of the events file, saved atomically.

It is saved only between reads, where no failure window is open: every read ends at a pause
in the log (watch/reading.py), so the extractor's open state at a saved place is empty and the
offset is a line end. A restart resumes at the saved place: no failure counted twice, none lost.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harmony_doctor.errors import InputError, OutputError
from harmony_doctor.watch.counts import Counts
from harmony_doctor.watch.follow import Identity

VERSION = 1


@dataclass(frozen=True)
class Saved:
    """What a state file holds."""

    places: dict[str, tuple[Identity, int]]  # label -> (file, offset read to)
    counts: Counts
    events_bytes: int | None  # the events file's length when the state was saved


def load_state(path: Path) -> Saved | None:
    """The saved state, None when there is none yet; InputError for a file that is not one."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(f"cannot read the state file {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
        if data.get("version") != VERSION:
            raise ValueError(f"version {data.get('version')!r}, not {VERSION}")
        places = {
            label: (Identity(*place["file"]), int(place["offset"]))
            for label, place in data["files"].items()
        }
        counts = Counts.from_json(data["counts"])
        events = data.get("events_bytes")
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(f"{path} is not a watch state file ({exc})") from None
    return Saved(places, counts, None if events is None else int(events))


def save_state(path: Path, saved: Saved) -> None:
    """Write the state atomically (a temporary file in the same folder, synced, renamed);
    OutputError naming it when it cannot be."""
    data: dict[str, Any] = {
        "version": VERSION,
        "files": {
            label: {
                "file": [i.device, i.inode, i.fingerprint, i.fingerprint_bytes],
                "offset": offset,
            }
            for label, (i, offset) in sorted(saved.places.items())
        },
        "counts": saved.counts.to_json(),
        "events_bytes": saved.events_bytes,
    }
    folder = path.parent if str(path.parent) else Path(".")
    try:
        _write(path, folder, data)
    except OSError as exc:
        raise OutputError(f"cannot save the state {path}: {exc.strerror or exc}") from None


def _write(path: Path, folder: Path, data: dict[str, Any]) -> None:
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            json.dump(data, stream, separators=(",", ":"))
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
