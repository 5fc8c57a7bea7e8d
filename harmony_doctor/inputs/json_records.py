"""Wrapped lines that are JSON records (Docker, journald -o json, Vector, Promtail, Fluent Bit,
logcli --output=jsonl), read into a Record: the inner text and what the wrapper said of it.
The line-by-line reader of inputs/wrappers.py (the reference the Rust path is tested against)
classifies each line; this reads those that start with `{`."""

from __future__ import annotations

import json
import math
from typing import Any, NamedTuple

from harmony_doctor.inputs.log_words import (
    DOCKER_ATTRS,
    DOCKER_LOG,
    DOCKER_STREAM,
    DOCKER_TIME,
    JOURNAL_MARKS,
    JOURNAL_MESSAGE,
    JOURNAL_PID,
    JSON_FIELDS,
    META_KEYS,
    PID_KEYS,
    TIME_KEYS,
)
from harmony_doctor.inputs.loki import utf8
from harmony_doctor.inputs.timestamps import canonical_epoch, canonical_utc


class Record(NamedTuple):
    """One wrapped line, read: its inner text and what the wrapper said about it (a NamedTuple:
    one is made per line of a wrapped log)."""

    text: bytes  # inner text (may hold several lines)
    complete: bool  # False: the first piece of a split line (more follows)
    key: str | None  # pieces of one split line share it (the stream)
    stamp: bytes | None
    pid: int | None
    host: str | None
    wrapper: str


def json_record(line: bytes) -> Record | None:
    if not line.rstrip().endswith(b"}"):
        return None
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):  # also UnicodeDecodeError; JSON nested too deep
        return None
    if not isinstance(record, dict):
        return None
    if JOURNAL_MESSAGE in record and any(mark in record for mark in JOURNAL_MARKS):
        return _journal_json(record)
    log = record.get(DOCKER_LOG)
    if (
        isinstance(log, str)
        and DOCKER_STREAM in record
        and (DOCKER_TIME in record or DOCKER_ATTRS in record)
    ):
        complete = log.endswith("\n")  # the engine splits lines at 16 KiB: no "\n" = more follows
        text = utf8(log[:-1] if complete else log)
        stream = record.get(DOCKER_STREAM)
        stamp = _stamp(record.get(DOCKER_TIME))
        return Record(text, complete, f"docker:{stream}", stamp, None, None, "docker")
    for field in JSON_FIELDS:
        value = record.get(field)
        if isinstance(value, str) and any(k in record for k in META_KEYS if k != field):
            inner = value[:-1] if value.endswith("\n") else value
            stamp = next((_stamp(record[k]) for k in TIME_KEYS if k in record), None)
            labels = record.get("labels")
            labels = labels if isinstance(labels, dict) else record
            host = record.get("host") or record.get("hostname") or labels.get("host")
            return Record(
                utf8(inner), True, None, stamp, pid_of(record), text_or_none(host), "json"
            )
    return None


def _journal_json(record: dict[str, Any]) -> Record | None:
    message = record.get(JOURNAL_MESSAGE)
    if isinstance(message, str):
        text = utf8(message)
    elif isinstance(message, list) and all(isinstance(b, int) and 0 <= b < 256 for b in message):
        text = bytes(message)  # journald's form for messages with control or non-UTF-8 bytes
    else:
        return None  # null: the field was too large for journalctl to print
    if text.endswith(b"\n"):
        text = text[:-1]
    stamp = None
    realtime = record.get("__REALTIME_TIMESTAMP")
    if isinstance(realtime, str) and realtime.isdigit():
        stamp = canonical_epoch(int(realtime), 1_000_000)
    pid = pid_of({JOURNAL_PID: record.get(JOURNAL_PID)})
    return Record(text, True, None, stamp, pid, text_or_none(record.get("_HOSTNAME")), "journal")


def _stamp(value: Any) -> bytes | None:
    if isinstance(value, str):
        if value.isdigit():
            return _epoch(int(value))
        return canonical_utc(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return _epoch(value)
    if isinstance(value, float) and math.isfinite(value):  # JSON may say NaN or 1e400
        return _epoch(int(value))
    return None


def _epoch(value: int) -> bytes | None:
    """Seconds, ms, µs or ns since 1970, told apart by size (2001-2286 in each unit)."""
    for per_second in (1, 1_000, 1_000_000, 1_000_000_000):
        if value < 10_000_000_000 * per_second:
            return canonical_epoch(value, per_second)
    return None


def pid_of(record: dict[str, Any]) -> int | None:
    first, second = PID_KEYS
    value = record.get(first, record.get(second))
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**18:
        return value
    if isinstance(value, str) and value.isdigit() and len(value) <= 18:
        return int(value)
    return None


def text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
