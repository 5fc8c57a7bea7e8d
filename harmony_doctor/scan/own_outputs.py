"""Files scan wrote (events, tallies, summaries, its HTML report, its Prometheus textfile), told
by their content, compressed or not, renamed or not: read as logs, they would count their
failures again, so `plan` leaves them out with the reason."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from harmony_doctor.errors import InputError
from harmony_doctor.inputs.files import Source, compression_of, open_binary
from harmony_doctor.lazy_regex import Pattern
from harmony_doctor.scan.documents import read_head

# What scan's own pages start with, whatever they were renamed to (output/html_report.py,
# output/prometheus.py write them): read as logs, they would count their failures again.
_OWN_PAGES = (
    (
        Pattern(rb"\A\s*<!DOCTYPE html>\s*<html[^>]*>.{0,2048}?<title>harmony-doctor ", re.S),
        "an HTML report written by harmony-doctor, not a log",
    ),
    (
        Pattern(rb"\A# HELP harmony_doctor_\w+ "),
        "a Prometheus textfile written by harmony-doctor",
    ),
)


def written_by_scan(source: Source) -> str | None:
    """Why a regular file is an output of scan (--events, --summary-csv, --html, --prometheus),
    compressed or not, or None: told by its content, never by its name."""
    if source.path is None or source.stream is not None:
        return None  # a pipe's bytes would be lost to the reader
    ends = _ends(source.path)
    if ends is None:
        return None  # not a regular file, or one the reader says why it cannot read
    head, tail = ends
    why = export_of(head, tail)
    if why is not None:
        return why
    try:
        if compression_of(head, source.label) is not None:  # as the reader sees it: decompressed
            stream = open_binary(source)
            try:
                read, whole = read_head(stream, SNIFF)
            finally:
                stream.close()
            head = whole if whole is not None else read.head[:SNIFF]
            why = export_of(head)
    except (InputError, OSError):
        return None  # the reader says why it cannot read it
    for page, what in _OWN_PAGES:
        if why is None and page.match(head):
            why = what
    return why


SNIFF = 64 * 1024  # bytes read to tell a file scan wrote from a log
# What scan writes (scan/summary.py's columns): an events file's first columns, in order, and
# the summary's; recognised by content, so a renamed or moved export is still not a log.
_EVENTS_HEADER = b"file,line,timestamp,pid,server,harmony_version,kind,code,severity"
_EVENTS_KEYS = Pattern(
    rb'^\{"file": ?"[^\n]*"line": ?[^\n]*"harmony_version": ?[^\n]*"raise_index"'
)
# The request tallies written beside an events file (scan/summary.py's REQUEST_COLUMNS).
_TALLIES_HEADER = b"file,pid,server,hour,count,origin"
# (an empty one's row has `"file": null`: it names its events file's digest only)
_TALLIES_KEYS = Pattern(rb'^\{"file": ?(?:"|null)[^\n]*"pid": ?[^\n]*"hour": ?[^\n]*"count": ?')
_SUMMARY_HEADER = Pattern(
    rb"^[a-z_,]*count,share,requests,rate,(?:rate_note,)?(?:unrated,)?first_seen,last_seen,"
    rb"example\r?\n"
)


def export_at(path: Path) -> str | None:
    """Why a regular file is an export of scan (--events, --summary-csv), or None.

    Only regular files are looked at, by content: a renamed or moved export is still not a log."""
    ends = _ends(path)
    return None if ends is None else export_of(*ends)


def _ends(path: Path) -> tuple[bytes, bytes] | None:
    """A regular file's first SNIFF bytes, and its last ones where it is Parquet (its footer);
    None for anything else, or a file that cannot be read. The file is opened once."""
    try:
        with open(path, "rb", buffering=0) as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return None
            head = handle.read(SNIFF)
            tail = b""
            if head.startswith(b"PAR1"):
                handle.seek(max(0, os.fstat(handle.fileno()).st_size - SNIFF))
                tail = handle.read(SNIFF)
    except OSError:
        return None
    return head, tail


def export_of(head: bytes, tail: bytes = b"") -> str | None:
    """Why data starting with `head` (a file's first SNIFF bytes, decompressed) and ending with
    `tail` (a Parquet file's last ones) is an export of scan, or None."""
    head = head.removeprefix(b"\xef\xbb\xbf")
    if head.startswith(_EVENTS_HEADER) or _EVENTS_KEYS.match(head):
        return "an events file written by scan; use report"
    if tail.endswith(b"PAR1") and b"harmony_version" in tail and b"raise_index" in tail:
        return "an events file written by scan; use report"
    if head.startswith(_TALLIES_HEADER) or _TALLIES_KEYS.match(head):
        return "request tallies written by scan --events; use report"
    if tail.endswith(b"PAR1") and all(w in tail for w in (b"hour", b"count", b"origin")):
        return "request tallies written by scan --events; use report"
    if _SUMMARY_HEADER.match(head):
        return "a summary file written by scan (--summary-csv), not a log"
    return None
