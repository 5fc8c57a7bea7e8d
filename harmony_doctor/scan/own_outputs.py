"""Files scan wrote (events, tallies, summaries, its HTML report, its Prometheus textfile), told
by their content, compressed or not, renamed or not: read as logs, they would count their
failures again, so `plan` leaves them out with the reason."""

from __future__ import annotations

import os
import re
import stat

from harmony_doctor.errors import InputError
from harmony_doctor.inputs.files import Source, compression_of, open_binary
from harmony_doctor.scan.documents import read_head

# What scan's own pages start with, whatever they were renamed to (output/html_report.py,
# output/prometheus.py write them): read as logs, they would count their failures again.
_OWN_PAGES = (
    (
        re.compile(rb"\A\s*<!DOCTYPE html>\s*<html[^>]*>.{0,2048}?<title>harmony-doctor ", re.S),
        "an HTML report written by harmony-doctor, not a log",
    ),
    (
        re.compile(rb"\A# HELP harmony_doctor_\w+ "),
        "a Prometheus textfile written by harmony-doctor",
    ),
)


def written_by_scan(source: Source) -> str | None:
    """Why a regular file is an output of scan (--events, --summary-csv, --html, --prometheus),
    compressed or not, or None: told by its content, never by its name."""
    if source.path is None or source.stream is not None:
        return None  # a pipe's bytes would be lost to the reader
    from harmony_doctor.scan.event_files import SNIFF, export_of, written_by_scan

    why = written_by_scan(source.path)
    if why is not None:
        return why
    try:
        with open(source.path, "rb", buffering=0) as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return None  # a pipe's bytes would be lost to the reader
            head = handle.read(SNIFF)
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
