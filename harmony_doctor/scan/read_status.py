"""How one source was read -> its status (ok or partial) and the reason said for it."""

from __future__ import annotations

from harmony_doctor.inputs.files import MAX_LINE
from harmony_doctor.scan.found import SourceScan
from harmony_doctor.scan.records import FileStatus

GREW = "the file grew"


def read_status(found: SourceScan, changed: str | None) -> tuple[FileStatus, str | None, int]:
    """(status, reason, lines counted) of a source read to its end or stopped: `partial` for
    anything not read whole (damage, a cut line, zeroed data, a change while read), each
    thing said in the reason; `changed` is how the file changed while it was read."""
    # A log that only grew while it was read (a live log, appended to) was read as one whole
    # version of itself, to a line: `ok`, and said. Any other change leaves a part of no one
    # version: `partial`.
    grew = changed is not None and changed.startswith(GREW)
    # A line cut at MAX_LINE was not read whole: a failure past the cut is not counted, so the
    # file is `partial` (the run exits 2), as a file that stopped early is.
    cut_short = found.damage or found.cut_lines or found.zeroed or (changed and not grew)
    cut_short = cut_short or found.not_text
    status: FileStatus = "partial" if cut_short else "ok"
    reasons = []
    # Lines read from data that did not pass its check (a damaged gzip member gives changed
    # bytes before its CRC error, or reads as cut) are not the file's lines: the count stops
    # before them, and says so.
    lines = found.lines - found.unchecked_lines
    if found.damage:
        reasons.append(f"stopped after line {lines}: {_reason(found.damage)}")
    if found.unchecked_lines:
        reasons.append(_unchecked(found.unchecked_lines))
    if found.cut_failures:
        failures = "1 failure" if found.cut_failures == 1 else f"{found.cut_failures:,} failures"
        reasons.append(f"{failures} on a line the damage cut short, not diagnosed")
    if grew:
        reasons.append(f"{changed}: read to line {found.lines:,}, the rest is newer")
    elif changed:
        reasons.append(f"{changed}: {found.lines:,} lines read")
    if found.cut_lines:  # read, but not whole: said in every output
        reasons.append(_cut(found.cut_lines))
    if found.latin1_lines:  # read whole, each such line as latin-1: said, the file is ok
        odd = "1 line" if found.latin1_lines == 1 else f"{found.latin1_lines:,} lines"
        reasons.append(f"{odd} {LATIN1}")
    if found.zeroed:
        reasons.append(f"{found.zeroed:,} bytes of zeroed data (runs of NUL bytes), not text")
    if found.not_text:  # read, but not as the text it held: binary, or in another encoding
        reasons.append(found.not_text)
    return status, "; ".join(reasons) or None, lines


LATIN1 = "not UTF-8, read as latin-1"


def _cut(count: int) -> str:
    cap = f"{MAX_LINE // (1024 * 1024)} MiB"  # the per-line cap
    lines = "1 line" if count == 1 else f"{count:,} lines"
    return f"{lines} longer than {cap} read to {cap} only"


def _unchecked(count: int) -> str:
    lines = "1 more line" if count == 1 else f"{count:,} more lines"
    return f"{lines} read from data that did not pass its check (not counted; failures kept)"


def _reason(damage: str) -> str:
    if "ends before" in damage or "end-of-stream" in damage.lower():
        return f"compressed data ends early ({damage})"
    return damage
