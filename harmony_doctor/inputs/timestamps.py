"""Timestamps in server log lines, with the year inferred when the log leaves it out.

Recognised: ISO-like `2025-08-07 21:37:03[,.]mmm` and `2025-08-07T21:37:03Z` (SGLang, lmdeploy,
uvicorn, loguru, Ollama's `time=`), and vLLM's `MM-DD HH:MM:SS` without a year.

The year rule, for logs without one: take the year of the reference time (the file's
modification time, or now for standard input); if the date would then fall more than a day
after the reference time, it belongs to the year before (a log written in December and
rotated in January).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

_ISO = re.compile(
    r"(?<!\d)(?P<y>(?:19|20)\d\d)-(?P<m>[01]\d)-(?P<d>[0-3]\d)[ T]"
    r"(?P<H>[0-2]\d):(?P<M>[0-5]\d):(?P<S>[0-6]\d)"
)
_VLLM = re.compile(
    r"(?:(?:INFO|ERROR|WARNING|DEBUG|CRITICAL|WARN)\s+|^\s*)(?P<m>[01]\d)-(?P<d>[0-3]\d)\s+"
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
