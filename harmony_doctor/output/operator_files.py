"""Writing the operator outputs: the Prometheus textfile, the HTML page, the step summary."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from harmony_doctor.errors import OutputError

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry


def write_textfile(path: Path, registry: CollectorRegistry) -> None:
    """The Prometheus textfile, in the exposition format prometheus_client writes, through the
    one atomic writer (output/tables.py): under a temporary name in the same folder, then
    renamed, so node-exporter never reads half a file, and a signal leaves no temporary file
    (prometheus_client's own writer removes it on errors only)."""
    from harmony_doctor.output.prometheus import exposition
    from harmony_doctor.output.tables import write_text

    write_text(path, exposition(registry))


def append_text(path: Path, text: str) -> None:
    """Append to a file others write too ($GITHUB_STEP_SUMMARY): one write, never replaced."""
    try:
        with path.open("a", encoding="utf-8") as stream:
            stream.write(text)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
