"""The counts stay bounded: failures fold into their labels, request scopes keep recent hours."""

from __future__ import annotations

from harmony_doctor.models import RequestTally, ScanEvent
from harmony_doctor.scan.records import FileReport, FileScan
from harmony_doctor.watch.counts import HOURS_KEPT, Counts


def _event(hour: int, pid: int) -> ScanEvent:
    stamp = f"2026-11-{1 + hour // 24:02d}T{hour % 24:02d}:00:00"
    return ScanEvent(
        "vllm.log", 1, stamp, pid, "vllm", None, "unknown_role", "HD121", "error", "p",
        None, None, None, "Unknown role", origin="node-1",
    )  # fmt: skip


def _read(hour: int, requests: int) -> FileScan:
    iso = f"2026-11-{1 + hour // 24:02d}T{hour % 24:02d}"
    tallies = (RequestTally("vllm.log", 1000, "vllm", iso, requests, "node-1", "access"),)
    events = (_event(hour, 1000), _event(hour, 1001))
    return FileScan(events, tallies, FileReport("vllm.log", "ok", None, 10, 2, 2))


def test_a_week_of_reads_keeps_its_size() -> None:
    counts = Counts()
    for hour in range(24 * 7):
        counts.add(_read(hour, 5), float(hour))
    assert counts.failures == {("HD121", "unknown_role", "vllm", "node-1"): 2 * 24 * 7}
    assert len({key[3] for key in counts.scopes}) == HOURS_KEPT
    assert len(counts.requests) == 1
    # pid 1001 logged no requests in any hour: each of its failures is in no rate
    assert counts.unrated == {"node-1": 24 * 7}
    assert counts.requests_by() == {("vllm", "node-1"): 5 * 24 * 7}
    assert Counts.from_json(counts.to_json()) == counts
