"""Memory per failure: what a scan keeps of each failure it finds is what its event needs."""

from __future__ import annotations

import gc
import io
import tracemalloc
from datetime import datetime

from harmony_doctor.models import LoggedFailure, ScanEvent
from harmony_doctor.scan.findings import source_events
from harmony_doctor.scan.found import Place
from harmony_doctor.scan.records import ScanOptions
from harmony_doctor.scan.source import scan_source

FAILURES = 2000


def _log(count: int) -> bytes:
    """`count` distinct failures, one vLLM error line each (no two alike)."""
    return b"".join(
        b"(APIServer pid=3817) ERROR 11-12 14:%02d:%02d [serving.py:1184] openai_harmony."
        b"HarmonyError: unexpected tokens remaining in message header: "
        b'Some("to=functions.tool_%d")\n' % (i // 60 % 60, i % 60, i)
        for i in range(count)
    )


def test_a_source_keeps_little_per_failure() -> None:
    """The evidence, explanation and advice `explain` shows (about 1.3 KB per failure) are not
    kept while the source is scanned: only the fields an event takes."""
    data = _log(FAILURES)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        found = scan_source(io.BytesIO(data), "x.log", datetime(2026, 11, 30), replay=True)
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(found.errors) == FAILURES
    assert all(isinstance(e, LoggedFailure) for e, _ in found.errors)
    assert kept / FAILURES < 900, f"{kept / FAILURES:.0f} bytes kept per failure"


def test_events_are_built_from_what_was_kept(vocab: object) -> None:
    data = _log(3)
    found = scan_source(io.BytesIO(data), "x.log", datetime(2026, 11, 30), replay=True)
    events = list(source_events(found, lambda: vocab, ScanOptions(), None))  # type: ignore[arg-type,return-value]
    assert [e.line for e in events] == [1, 2, 3]
    assert [e.header_remainder for e in events] == [f"to=functions.tool_{i}" for i in range(3)]
    assert {e.code for e in events} == {"HD102"}
    assert events[1].timestamp == "2026-11-12T14:00:01"


def test_records_kept_per_failure_have_no_instance_dict() -> None:
    for record in (ScanEvent, LoggedFailure, Place):
        assert "__dict__" not in dir(record) and hasattr(record, "__slots__")
