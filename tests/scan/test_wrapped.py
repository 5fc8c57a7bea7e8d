"""Wrapped logs: every sample and corpus excerpt, in every wrapper and encoding, gives scan and
explain the findings it gives unwrapped (generated here, never stored)."""

from __future__ import annotations

import codecs
import gzip
import io
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import harmony_doctor
from harmony_doctor.explain import place_in_input
from harmony_doctor.inputs.reader import read_input
from harmony_doctor.inputs.timestamps import parse_timestamp
from harmony_doctor.logs import extract_text
from tests.helpers import SAMPLES, shared_files
from tests.inputs import wrapping

REFERENCE = datetime(2026, 11, 28, 12, 0, 0)
# Wrappers that keep one wrapped line per inner line (no split record, no reordering).
ONE_TO_ONE = {"journal-json", "journal-short", "journal-short-iso", "vector", "promtail"}
ONE_TO_ONE |= {"fluent-log", "logcli-jsonl", "logcli"}
# Line-based wrappers cannot carry a "\r" at the end of a line (it reads as CRLF).
NO_CR = {"cri", "journal-short", "journal-short-iso", "logcli"}

_FILES = [
    *(p for p in sorted(SAMPLES.iterdir()) if p.is_file()),
    *shared_files("corpus"),
]


def _lines(path: Path) -> list[str]:
    text = path.read_bytes().decode("utf-8", errors="replace").lstrip("\ufeff")
    lines = text.split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def _explained(path: Path) -> list[dict[str, Any]]:
    """explain's findings on a file as given (read, unwrapped, placed on the file's lines)."""
    given = read_input(str(path))
    # What explain reports for a log: the extractor's failures over the whole text (explain_text
    # replays token streams instead, which scan reports as replay events).
    errors = place_in_input(extract_text(given.text), given)
    return [
        {
            "line": e.line,
            "code": e.code,
            "kind": e.kind,
            "server": e.server,
            "pid": e.pid,
            "timestamp": parse_timestamp(e.timestamp, REFERENCE) if e.timestamp else None,
            # A stamp parse_timestamp does not read (syslog's `Nov 12 10:41:19`): not compared.
            "unread": bool(e.timestamp and parse_timestamp(e.timestamp, REFERENCE) is None),
        }
        for e in sorted(errors, key=lambda e: (e.line, e.code))
    ]


def _scanned(data: bytes) -> list[dict[str, Any]]:
    result = harmony_doctor.scan_stream(
        io.BytesIO(data), "x.log", harmony_doctor.ScanOptions(replay=False), reference=REFERENCE
    )
    return [
        {
            "line": e.line,
            "code": e.code,
            "kind": e.kind,
            "server": e.server,
            "pid": e.pid,
            "timestamp": datetime.fromisoformat(e.timestamp) if e.timestamp else None,
        }
        for e in sorted(result.events, key=lambda e: (e.line, e.code))
        if e.source == "log"
    ]


def _agree(scanned: list[dict[str, Any]], explained: list[dict[str, Any]], label: str) -> None:
    """scan finds what explain finds: same lines, codes, kinds; the same server, pid and time
    wherever explain knows them (scan may also know them from the file's other lines)."""
    key = ("line", "code", "kind")
    assert [[s[k] for k in key] for s in scanned] == [[e[k] for k in key] for e in explained], label
    for s, e in zip(scanned, explained, strict=True):
        for field in ("server", "pid", "timestamp"):
            if e[field] is not None:
                assert s[field] == e[field], (label, field, s, e)


@pytest.mark.parametrize("path", _FILES, ids=lambda p: p.name)
def test_every_excerpt_gives_the_same_findings_in_every_wrapper_and_encoding(
    path: Path, tmp_path: Path
) -> None:
    lines = _lines(path)
    plain = ("\n".join(lines) + "\n").encode()
    (tmp_path / "plain.log").write_bytes(plain)
    unwrapped = _explained(tmp_path / "plain.log")
    _agree(_scanned(plain), unwrapped, "plain")
    for name, wrap in wrapping.WRAPPERS.items():
        inner = [line.removesuffix("\r") for line in lines] if name in NO_CR else lines
        data = wrap(inner)
        target = tmp_path / f"{name}.log"
        target.write_bytes(data)
        explained = _explained(target)
        _agree(_scanned(data), explained, name)
        # The same failures as unwrapped: codes and kinds always, lines where the wrapper keeps
        # one record per line, and the wrapper's pid and time only where the line has none.
        assert sorted((e["code"], e["kind"]) for e in explained) == sorted(
            (e["code"], e["kind"]) for e in unwrapped
        ), name
        if name == "loki-query-range":
            continue  # newest first in the document: its lines run backwards
        for e, u in zip(explained, unwrapped, strict=True):
            if name in ONE_TO_ONE:
                assert e["line"] == u["line"], name
            if u["timestamp"] is not None and not e["unread"]:
                assert e["timestamp"] == u["timestamp"], name
            if u["pid"] is not None:
                assert e["pid"] == u["pid"], name
    for encoding, data in _encoded(plain).items():
        assert _scanned(data) == _scanned(plain), encoding


def _encoded(plain: bytes) -> dict[str, bytes]:
    text = plain.decode("utf-8")
    return {
        "utf-8-bom": codecs.BOM_UTF8 + plain,
        "utf-16-le-bom": codecs.BOM_UTF16_LE + text.encode("utf-16-le"),
        "utf-16-le": text.encode("utf-16-le"),
        "utf-16-be": text.encode("utf-16-be"),
        "crlf": plain.replace(b"\n", b"\r\n"),
        "gzip": gzip.compress(plain, mtime=0),
    }
