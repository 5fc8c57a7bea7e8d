"""A Loki query API response (`{"status": ..., "data": {"result": [{"stream": ..., "values":
[[ns, line], ...]}]}}`, or any pretty-printed JSON document): its log lines in time order, each
with the line of the document it came from. The unwrapper (inputs/wrappers.py) parses such a
document whole, up to its DOCUMENT_LIMIT."""

from __future__ import annotations

import json
from typing import Any


def utf8(text: str) -> bytes:
    """A JSON string as UTF-8 bytes."""
    return text.encode("utf-8", errors="replace")  # lone surrogates from JSON escapes


def document_start(data: bytes) -> bool:
    """The input opens like one JSON document (pretty-printed, or a Loki API response)."""
    head = data.lstrip()
    first_line = head.split(b"\n", 1)[0].strip()
    return first_line == b"{" or first_line.replace(b" ", b"").startswith(
        (b'{"status"', b'{"data"')
    )


def loki_lines(document: bytes) -> list[tuple[int, bytes, int, dict[str, Any]]] | None:
    """(ns time, line, line of the document, stream labels) of each value, in time order."""
    if b'"result"' not in document or not document.lstrip().startswith(b"{"):
        return None  # no Loki answer: not parsed (a list of millions of ids took 200 MB)
    try:
        parsed = json.loads(document)
    except (ValueError, RecursionError):
        return None
    data = parsed.get("data") if isinstance(parsed, dict) else None
    result = data.get("result") if isinstance(data, dict) else None
    if not isinstance(result, list):
        return None
    values: list[tuple[int, int, int, bytes, int, dict[str, Any]]] = []
    position, line_number = 0, 1  # where the last value was found in the document
    for number, stream in enumerate(result):
        if not isinstance(stream, dict) or not isinstance(stream.get("values"), list):
            return None
        found_labels = stream.get("stream")
        labels: dict[str, Any] = found_labels if isinstance(found_labels, dict) else {}
        rows: list[tuple[int, bytes, int]] = []
        for value in stream["values"]:
            if not _is_value(value):
                continue
            found = document.find(b'"' + value[0].encode() + b'"', position)
            if found >= 0:
                line_number += document.count(b"\n", position, found)
                position = found
            text = value[1][:-1] if value[1].endswith("\n") else value[1]
            rows.append((int(value[0]), utf8(text), line_number))
        # Loki answers newest first unless asked otherwise; the log reads oldest first.
        if len(rows) > 1 and rows[0][0] > rows[-1][0]:
            rows.reverse()
        for index, (ts, text, source_line) in enumerate(rows):
            values.append((ts, number, index, text, source_line, labels))
    values.sort(key=lambda v: (v[0], v[1], v[2]))
    return [(ts, text, line, labels) for ts, _, _, text, line, labels in values]


def _is_value(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) >= 2
        and isinstance(value[0], str)
        and value[0].isdigit()
        and isinstance(value[1], str)
    )
