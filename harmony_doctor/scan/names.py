"""What a log file's name says: the stream it is a part of, the process it belongs to, and
where the part stands in its rotation (oldest first)."""

from __future__ import annotations

import re

from harmony_doctor.lazy_regex import Pattern

_COMPRESSED = Pattern(r"\.(?:gz|bz2|xz|zst|zstd|lz4)$", re.I)
_ROTATED = Pattern(
    r"(?:\.\d{1,3}|[._-]\d{8}(?:[_T-]?\d{4,6})?|[._-]\d{4}-\d\d-\d\d(?:[_T-]\d\d(?::?\d\d){0,2})?)$"
)
_STREAM = Pattern(
    r"(?i)(?:[._-](?:stdout|stderr|out|err)(?=[._-]|$)|^(?:stdout|stderr)(?=[._-]|$))"
)


def stream_of(file: str) -> str:
    """The log stream a file is a part of: rotated and compressed parts (`vllm.log.1`,
    `vllm.log-20261127.gz`) of `vllm.log` name `vllm.log`, in the same folder. The parts of one
    stream follow each other in time (`rotation_rank`), so they are read as one stream."""
    folder, slash, name = file.rpartition("/")
    while True:
        shorter = _ROTATED.sub("", _COMPRESSED.sub("", name))
        if shorter == name or not shorter:
            break
        name = shorter
    return folder + slash + name


def process_of(file: str) -> str:
    """The process a log file belongs to, by its name: the parts of its stream, and the
    stdout/stderr splits (`vllm.stdout.log`, `vllm.err`) of one server, name the same one.
    Splits run side by side in time: they join one rate's scope, but are read apart."""
    folder, slash, name = stream_of(file).rpartition("/")
    name = _STREAM.sub("", name) or name
    return folder + slash + name


def rotation_rank(file: str) -> tuple[int, int, str]:
    """Oldest first: `name.3` before `name.2` before `name.1`, dated parts in date order, the
    live file last."""
    name = _COMPRESSED.sub("", file.rpartition("/")[2])
    numbered = re.search(r"\.(\d{1,3})$", name)
    if numbered is not None:
        return (0, -int(numbered.group(1)), "")
    dated = re.search(r"[._-](\d{4}-?\d\d-?\d\d\S*)$", name)
    if dated is not None:
        return (1, 0, dated.group(1).replace("-", ""))
    return (2, 0, "")
