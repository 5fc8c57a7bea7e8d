"""Memory per failure: what a scan keeps of each failure it finds is what its event needs."""

from __future__ import annotations

import gc
import gzip
import io
import json
import subprocess
import sys
import tracemalloc
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from harmony_doctor.models import LoggedFailure, ScanEvent
from harmony_doctor.scan.findings import completion_diagnosis, source_events
from harmony_doctor.scan.found import Place, SourceScan
from harmony_doctor.scan.records import ScanOptions
from harmony_doctor.scan.source import scan_source
from harmony_doctor.streams.clean import CleanStreams

FAILURES = 2000
REFERENCE = datetime(2026, 11, 30)


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
    # once first: what the first scan of a process builds and keeps for every later one (the
    # catalogue's compiled forms, the reader's caches) is not kept per failure
    scan_source(io.BytesIO(_log(3)), "x.log", datetime(2026, 11, 30), replay=True)
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


def _completions(count: int, size: int = 400) -> bytes:
    """`count` logged completions (vLLM `--enable-log-outputs`), every third one well formed,
    the others failing in their header (ids in the header, as a model that never wrote
    `<|message|>`), each different."""
    lines = []
    for n in range(count):
        body = [(n * 7919 + i * 104_729) % 199_000 + 500 for i in range(size)]
        if n % 3 == 0:
            ids = [200005, 35644, 200008, *body, 200007]
        else:
            ids = [200005, 35644, *body, 200008, 17196, 200002]
        lines.append(
            b"(APIServer pid=7) INFO 11-12 14:00:%02d [logger.py:71] Generated response "
            b"chatcmpl-%d: output: 'x', output_token_ids: %s, finish_reason: stop\n"
            % (n % 60, n, str(ids).encode())
        )
    return b"".join(lines)


def _scanned(data: bytes, vocab: Any, diagnosed: bool) -> tuple[SourceScan, list[ScanEvent]]:
    options = ScanOptions()
    clean = CleanStreams(lambda: vocab, options.role)
    load = lambda: vocab  # noqa: E731
    diagnose = completion_diagnosis(load, options, clean) if diagnosed else None
    found = scan_source(io.BytesIO(data), "x.log", REFERENCE, True, clean, None, diagnose)
    return found, list(source_events(found, load, options, clean))


def test_completions_diagnosed_as_kept_give_the_events_of_completions_kept_whole(
    vocab: Any,
) -> None:
    data = _completions(30)
    kept, later = _scanned(data, vocab, diagnosed=False)
    diagnosed, now = _scanned(data, vocab, diagnosed=True)
    assert len(kept.completions) == 20 and not kept.replayed  # the other 10 are clean
    assert not diagnosed.completions and len(diagnosed.replayed) == len(later) == 20
    assert now == later
    assert {e.file for e in now} == {"x.log"} and {e.source for e in now} == {"replay"}


def test_a_failing_completion_is_kept_as_its_events_not_its_ids(vocab: Any) -> None:
    data = _completions(60, size=2000)
    options = ScanOptions()
    clean = CleanStreams(lambda: vocab, options.role, tokens=1000)  # no failing key remembered
    diagnose = completion_diagnosis(lambda: vocab, options, clean)
    scan_source(io.BytesIO(_completions(3)), "warm.log", REFERENCE, True, clean, None, diagnose)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        found = scan_source(io.BytesIO(data), "x.log", REFERENCE, True, clean, None, diagnose)
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(found.replayed) == 40
    # 2,000 ids held as a TokenInput take about 70 KB; an event under 2 KB
    assert kept / 40 < 4000, f"{kept / 40:.0f} bytes kept per failing completion"


def test_clean_verdicts_remember_a_bounded_number_of_key_tokens(vocab: Any) -> None:
    clean = CleanStreams(vocab, "assistant", size=100, tokens=5000)
    body = list(range(1000, 1600))
    for n in range(40):  # failing streams: the key holds the whole header
        assert not clean([200005, 35644, n + 500, *body, 200008, 200002])
        assert clean.held == sum(map(len, clean.known)) <= 5000
    assert len(clean.known) < 40
    assert clean([200005, 35644, 200008, *body, 200007])  # a clean one: its key is short
    long = [200005, 35644, *range(1000, 7000), 200008, 200002]
    assert not clean(long) and tuple(long) not in clean.known and clean.held <= 5000


def _peak_rss_mib(path: Path) -> tuple[int, dict[str, Any]]:
    """Peak RSS (MiB) of a fresh process that scans `path`, and its file report.

    The peak is the process's own memory map's high-water mark (VmHWM), not getrusage's
    ru_maxrss, which Linux carries across exec from the forked copy of its parent (a test
    worker of several hundred MiB would be measured instead)."""
    if not Path("/proc/self/status").exists():
        pytest.skip("no /proc/self/status here to read a process's peak memory from")
    code = (
        "import json, re, sys, dataclasses; import harmony_doctor as hd; "
        "r = hd.scan_file(sys.argv[1]).report; "
        "hwm = re.search(r'VmHWM:\\s*(\\d+)', open('/proc/self/status').read()); "
        "print(json.dumps([int(hwm[1]) // 1024, dataclasses.asdict(r)]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True
    )
    peak, report = json.loads(done.stdout)
    return peak, report


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
def test_blank_lines_cost_no_memory_per_line(tmp_path: Path, compressed: bool) -> None:
    """A file of blank lines was held whole while its first bytes were to decide whether it is
    one JSON document, then read line by line at its end: about 93 bytes a line (4 Mi blank
    lines: 404 MiB; 16 MiB of them gzipped, 1.5 GB). They pass through as any plain chunk."""
    lines = 4 * 1024 * 1024
    data = b"\n" * lines
    path = tmp_path / ("blank.log.gz" if compressed else "blank.log")
    path.write_bytes(gzip.compress(data, compresslevel=1) if compressed else data)
    peak, report = _peak_rss_mib(path)
    assert report["status"] == "ok" and report["lines"] == lines, report
    assert report["python_lines"] == 0, report  # none read one by one in Python
    assert peak < 150, f"{peak} MiB peak for {lines:,} blank lines"


def test_a_document_of_many_streams_is_diagnosed_and_written_out_as_it_is_read(
    tmp_path: Path, vocab: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A JSONL of 60,000 id lists (4 MB) held a Diagnosis per stream and every event: 344 MiB
    peak (187 MiB now). The streams are diagnosed one at a time, as they are read, and their
    events written out a batch at a time (here batches of 100)."""
    from harmony_doctor.inputs.files import Source
    from harmony_doctor.scan import run as scanning
    from harmony_doctor.scan import spill as spilling
    from harmony_doctor.scan.documents import as_document

    lines = (
        f"{[200005, 35644, 200008, 1000 + n, 200007, 12606 + n % 50, 200008, 525, 200002]}\n"
        for n in range(1_000)
    )
    data = "".join(lines).encode()
    document = as_document(data, "ids.jsonl", lambda: vocab, "assistant")
    assert document is not None and not isinstance(document.diagnoses, tuple | list)
    monkeypatch.setattr(spilling, "BATCH", 100)
    spill = tmp_path / "spill"
    result = scanning._document_result(
        Source("ids.jsonl", None), document, data, lambda: vocab, ScanOptions(), spill
    )
    assert result.events == [] and result.spill is not None
    assert result.spill.count == 1_000 and len(result.spill.files) == 10
