"""Writing the operator outputs: the Prometheus textfile, the HTML page, the step summary."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from harmony_doctor.errors import OutputError
from harmony_doctor.output.files import _atomic

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry


def check_target(path: Path, suffix: str | None = None) -> None:
    """Refuse a path that cannot be written, before any input is read (as `check_output_path`
    does for tables, whatever the extension), or that lacks the `suffix` a reader needs."""
    if suffix is not None and path.suffix != suffix:
        raise OutputError(f"cannot write {path}: the name must end in {suffix}")
    folder = path.parent if str(path.parent) else Path(".")
    try:
        mode: int | None = path.stat().st_mode
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


def write_text(path: Path, text: str) -> None:
    """Write a whole file atomically (temporary name, then rename), as the table exports are."""
    with _atomic(path) as stream:
        stream.write(text)


def write_textfile(path: Path, registry: CollectorRegistry) -> None:
    """The Prometheus textfile, written by prometheus_client itself: under a temporary name in
    the same folder, then renamed, so node-exporter never reads half a file."""
    from prometheus_client import write_to_textfile

    try:
        write_to_textfile(str(path), registry)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None


def append_text(path: Path, text: str) -> None:
    """Append to a file others write too ($GITHUB_STEP_SUMMARY): one write, never replaced."""
    try:
        with path.open("a", encoding="utf-8") as stream:
            stream.write(text)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
