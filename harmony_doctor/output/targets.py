"""Where a run writes, checked in one place before anything is read.

Every file an option names must have a name its reader takes (a table's extension, `.prom`,
`.html`), be writable, and be neither another output of the run nor one of its inputs: two
names are the same file when they reach the same device and inode (`./x`, a symlink, a hard
link), and outputs not yet written are compared by their resolved path. A file found inside a
scanned folder counts as an input unless scan leaves it out as one of its own exports (an
earlier `--events` written into the folder it scans).
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from harmony_doctor.errors import OutputError
from harmony_doctor.scan.own_outputs import export_at

# table: CSV, JSONL or Parquet by extension; prometheus: a node-exporter textfile; html: the
# page; append: a file others write too ($GITHUB_STEP_SUMMARY), appended to, never replaced.
TargetKind = Literal["table", "prometheus", "html", "append"]

# node-exporter's textfile collector reads only `*.prom`; a browser opens a page by its name.
PROMETHEUS_SUFFIX = ".prom"
HTML_SUFFIXES = (".html", ".htm")


@dataclass(frozen=True)
class Target:
    """One file the run writes, and the option that named it."""

    option: str  # as the user gave it: "--events", "$GITHUB_STEP_SUMMARY"
    path: Path
    kind: TargetKind
    # False for a sidecar the run names itself (the request counts beside --events): it may
    # replace only a file of its own kind, recognised by content, never one the user did not
    # name (`check_sidecar`)
    named: bool = True

    def __str__(self) -> str:
        return f"{self.option} {self.path}"


@dataclass(frozen=True)
class InputFile:
    """One input of the run, as the user named it or a folder walk found it."""

    label: str
    path: Path | None  # None: standard input
    in_folder: bool = False  # found by walking a folder, not named


def check_targets(targets: Sequence[Target]) -> None:
    """Refuse, before any input is read, an output that cannot work: a name its reader does
    not take, a path that cannot be written, or two outputs that are the same file."""
    for target in targets:
        _check_name(target)
        if target.kind != "append":  # appended to as it is; its writer made it
            check_writable(target.path)
        if not target.named:
            check_sidecar(target)
    seen: dict[tuple[object, ...], Target] = {}
    for target in targets:
        key = _identity(target.path)
        first = seen.setdefault(key, target)
        if first is not target:
            raise OutputError(f"{first} and {target} are the same file: give each its own")


def check_not_inputs(targets: Sequence[Target], inputs: Sequence[InputFile]) -> None:
    """Refuse an output that is one of the inputs (the same file, however spelled), before any
    input is read: writing it would replace what the run reads."""
    named: dict[tuple[object, ...], InputFile] = {}
    for given in inputs:
        key = _input_identity(given)
        if key is not None:
            named.setdefault(key, given)
    for target in targets:
        found = named.get(_identity(target.path))
        if found is None:
            continue
        if found.in_folder and found.path is not None and export_at(found.path):
            continue  # scan leaves its own exports out: this one is an output, not an input
        raise OutputError(f"{target} is the input {found.label}: write it elsewhere")


def check_sidecar(target: Target) -> None:
    """Refuse a sidecar over a file that is not an earlier one (request tallies scan wrote):
    the user named the events, not this file, and it may be anything of theirs."""
    if not os.path.lexists(target.path):
        return
    why = export_at(target.path)
    if why is None or not why.startswith("request tallies"):
        raise OutputError(
            f"{target} would replace {target.path}, which scan did not write: move it, or give "
            "the events another name"
        )


def check_writable(path: Path) -> None:
    """Refuse an output path before any input is read: a directory, something other than a
    regular file, a folder that is missing or read-only."""
    folder = path.parent if str(path.parent) else Path(".")
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    if mode is not None and stat.S_ISDIR(mode):
        raise OutputError(f"cannot write {path}: it is a directory")
    if mode is not None and not stat.S_ISREG(mode):
        raise OutputError(f"cannot write {path}: it is not a regular file")
    if not folder.is_dir():
        raise OutputError(f"cannot write {path}: no folder {folder}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"cannot write {path}: folder {folder} is not writable")


def _check_name(target: Target) -> None:
    if target.kind == "table":
        from harmony_doctor.output.tables import export_format  # the writers, for a table only

        export_format(target.path)
    elif target.kind == "prometheus" and target.path.suffix != PROMETHEUS_SUFFIX:
        raise OutputError(f"cannot write {target.path}: the name must end in {PROMETHEUS_SUFFIX}")
    elif target.kind == "html" and target.path.suffix.lower() not in HTML_SUFFIXES:
        raise OutputError(f"cannot write {target.path}: the name must end in .html or .htm")


def _identity(path: Path) -> tuple[object, ...]:
    """The file a path reaches: its device and inode, or where it would be made (resolved)."""
    try:
        info = path.stat()
    except OSError:
        return ("path", os.path.normcase(os.path.realpath(path)))
    return ("inode", info.st_dev, info.st_ino)


def _input_identity(given: InputFile) -> tuple[object, ...] | None:
    """The regular file an input reads (standard input included, when it is one); None for
    what no output can be (a pipe, a terminal, a URL, a missing file)."""
    try:
        info = os.fstat(sys.stdin.fileno()) if given.path is None else given.path.stat()
    except (OSError, ValueError, AttributeError):  # no such file; stdin closed or not a file
        return None
    return ("inode", info.st_dev, info.st_ino) if stat.S_ISREG(info.st_mode) else None
