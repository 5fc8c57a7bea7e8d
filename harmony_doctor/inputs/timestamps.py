"""Timestamps in server log lines, with the year inferred when the log leaves it out.

Recognised: ISO-like `2025-08-07 21:37:03[,.]mmm` and `2025-08-07T21:37:03Z` (SGLang, lmdeploy,
uvicorn, loguru, Ollama's `time=`), and vLLM's `MM-DD HH:MM:SS` without a year; a line's own
stamp (`own_stamp`, the scan cores') also Go gin's `2025/08/07 - 21:37:03` (Ollama's [GIN]
request lines). A full date beats a time without a year in the same line.

The year rule, for logs without one: take the year of the reference time (the file's
modification time, or now for standard input); if the date would then fall more than a day
after the reference time, it belongs to the year before (a log written in December and
rotated in January).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from harmony_doctor.inputs.log_words import LEVELS, either
from harmony_doctor.lazy_regex import Pattern

HEAD = 200  # stamps and pids are looked for in a line's first HEAD bytes
_WS = rb"[ \t\n\r\f\v]"

_ISO = Pattern(
    r"(?<!\d)(?P<y>(?:19|20)\d\d)-(?P<m>[01]\d)-(?P<d>[0-3]\d)[ T]"
    r"(?P<H>[0-2]\d):(?P<M>[0-5]\d):(?P<S>[0-6]\d)"
)
_VLLM = Pattern(
    r"(?:(?:" + either(LEVELS) + r")\s+|^\s*)(?P<m>[01]\d)-(?P<d>[0-3]\d)\s+"
    r"(?P<H>[0-2]\d):(?P<M>[0-5]\d):(?P<S>[0-6]\d)"
)


def parse_timestamp(text: str, reference: datetime) -> datetime | None:
    """The first timestamp in a log line, or None; see the module docstring for the year."""
    head = text[:200]
    match = _ISO.search(head)
    if match is not None:
        return _build(int(match["y"]), match)
    match = _VLLM.search(head)
    if match is None:
        return None
    stamp = _build(reference.year, match)
    if stamp is not None and stamp > reference + timedelta(days=1):
        stamp = _build(reference.year - 1, match)
    return stamp


def _build(year: int, match: re.Match[str]) -> datetime | None:
    try:
        return datetime(
            year,
            int(match["m"]),
            int(match["d"]),
            int(match["H"]),
            int(match["M"]),
            int(match["S"]),
        )
    except ValueError:  # 02-30, 25:00 and other impossible stamps
        return None


# Canonical stamps (the scan core's forms): b"YYYY-MM-DD HH:MM:SS", or b"MM-DD HH:MM:SS" for a
# log that gives no year. Wrapper times are absolute, so they are turned into UTC.
_RFC3339 = Pattern(
    r"^\s*(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,]\d+)?\s*(Z|z|[+-]\d\d:?\d\d)?"
)
_MONTHS = {
    name: number
    for number, name in enumerate(
        ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1
    )
}


def canonical_utc(text: str) -> bytes | None:
    """An RFC 3339 / ISO time (`2026-11-27T10:00:01.5+01:00`) as a canonical UTC stamp.

    Without an offset the time is taken as written (it may be local: nothing says otherwise).
    """
    match = _RFC3339.match(text)
    if match is None:
        return None
    try:
        y, mo, d, h, mi, s = (int(match[i]) for i in range(1, 7))
        moment = datetime(y, mo, d, h, mi, s)
    except ValueError:
        return None
    offset = match[7]
    if offset and offset not in ("Z", "z"):
        sign = -1 if offset[0] == "-" else 1
        digits = offset[1:].replace(":", "")
        moment -= sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    return _format(moment)


def canonical_epoch(value: int, per_second: int) -> bytes | None:
    """A time counted from 1970-01-01 UTC in units of 1/per_second s (journald: µs, Loki: ns)."""
    try:
        moment = datetime(1970, 1, 1) + timedelta(seconds=value // per_second)
    except OverflowError:
        return None
    return _format(moment)


def canonical_syslog(month: str, day: str, clock: str) -> bytes | None:
    """`Nov 27 10:00:01` (journalctl -o short, syslog: no year) as b"11-27 10:00:01"."""
    number = _MONTHS.get(month)
    if number is None or not day.strip().isdigit() or not 1 <= int(day) <= 31:
        return None
    return f"{number:02d}-{int(day):02d} {clock[:8]}".encode()


def _format(moment: datetime) -> bytes | None:
    if not 1900 <= moment.year <= 2099:  # the forms the scan core recognises
        return None
    return moment.strftime("%Y-%m-%d %H:%M:%S").encode()


# -- the scan core's stamps (both cores, byte for byte: native/src/stamps.rs) ---------------

# A full date, with its year: ISO's `2025-08-20 09:38:05` (or `T`) and Go gin's
# `2025/08/20 - 09:38:05` (Ollama's [GIN] request lines). The spec's `(?<!\d)((?:19|20)\d\d)`,
# with the look-behind moved past the first two bytes (same matches; lets the regex engine skip
# to the bytes 1 and 2).
_FULL_STAMP = Pattern(
    rb"((?:19|20)(?<!\d..)\d\d)(?:-([01]\d)-([0-3]\d)[ T]|/([01]\d)/([0-3]\d) - )"
    rb"([0-2]\d):([0-5]\d):([0-6]\d)"
)
_VLLM_STAMP = Pattern(
    rb"(?:(?:"
    + either(LEVELS).encode()
    + rb")"
    + _WS
    + rb"+|^"
    + _WS
    + rb"*)([01]\d)-([0-3]\d)"
    + _WS
    + rb"+([0-2]\d):([0-5]\d):([0-6]\d)"
)


def own_stamp(head: bytes) -> bytes | None:
    """The canonical stamp a line carries in `head` (its first HEAD bytes), if a valid one.

    A full date beats a stamp without a year wherever either stands (a journald or syslog
    prefix's time is the wrapper's, read apart: inputs/wrappers.py): the leftmost full date
    decides, even when out of range; else the leftmost vLLM stamp."""
    m = _FULL_STAMP.search(head)
    if m is not None:
        return _full_date(m)
    m = _VLLM_STAMP.search(head)
    if m is not None:
        mo, d, h, mi, s = m.groups()
        if _valid(mo, d, h, mi, s):
            return b"%s-%s %s:%s:%s" % (mo, d, h, mi, s)
    return None


def dated(text: str) -> bool:
    """Whether a time read from a line's prefix (logs/lines.py) is a full date, with its year,
    as `own_stamp` reads one: such a time beats one without a year."""
    m = _FULL_STAMP.search(text[:HEAD].encode(errors="replace"))
    return m is not None and _full_date(m) is not None


def _full_date(m: re.Match[bytes]) -> bytes | None:
    y, mo, d, h, mi, s = m[1], m[2] or m[4], m[3] or m[5], m[6], m[7], m[8]
    if _valid(mo, d, h, mi, s):
        return b"%s-%s-%s %s:%s:%s" % (y, mo, d, h, mi, s)
    return None


def _valid(mo: bytes, d: bytes, h: bytes, mi: bytes, s: bytes) -> bool:
    in_range = 1 <= int(mo) <= 12 and 1 <= int(d) <= 31 and int(h) <= 23
    return in_range and int(mi) <= 59 and int(s) <= 59
