"""A backlog shared out over worker processes counts what the one-stream read counts: the same
metrics, events and state, each failure once however the cuts fall (failures straddle them),
and a backlog stopped midway resumes exactly."""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from harmony_doctor.scan.records import FileScan
from harmony_doctor.watch import backlog
from harmony_doctor.watch import run as watch_run
from harmony_doctor.watch.backlog import Layout, Span, SpanRead, read_backlog, spans
from harmony_doctor.watch.run import WatchOptions
from tests.watch.conftest import Driven, scan_by_code
from tests.watch.vllm_logs import cri, log

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
# Small cuts for small logs: 16 KiB of context each side holds any of these logs' failures.
SMALL = Layout(split=1, margin=16 * 1024, per_job=4, least=1)
FALLS_BACK = {"other-engines.log"}  # its ranges name different servers


def _options(tmp_path: Path, live: Path, jobs: int, name: str) -> WatchOptions:
    return WatchOptions(
        (str(live),),
        from_start=True,
        origin="test",
        state=tmp_path / f"{name}.state.json",
        events=tmp_path / f"{name}.events.jsonl",
        jobs=jobs,
        layout=SMALL,
    )


def _watched(tmp_path: Path, live: Path, jobs: int, name: str, more: bytes = b"") -> Driven:
    """The log watched from its start (its backlog read), then `more` appended and read."""
    driven = Driven(_options(tmp_path, live, jobs, name))
    driven.look()
    if more:
        with live.open("ab") as handle:
            handle.write(more)
        driven.look()
    driven.watcher.save()
    driven.watcher.close()
    return driven


def _seen(tmp_path: Path, driven: Driven, name: str) -> tuple[dict[str, Any], str, Any]:
    """What a watch left: its counts (the clock's time of the last failure aside), its events
    file and the places in its state."""
    counts = driven.watcher.counts.to_json()
    counts.pop("last_failure")
    state = json.loads((tmp_path / f"{name}.state.json").read_text())
    return counts, (tmp_path / f"{name}.events.jsonl").read_text(), state["files"]


@pytest.fixture
def joined(monkeypatch: pytest.MonkeyPatch) -> list[FileScan | None]:
    """What each shared backlog read gave (None: read as one stream after all)."""
    seen: list[FileScan | None] = []

    def recorded(*args: Any, **kwargs: Any) -> FileScan | None:
        seen.append(read_backlog(*args, **kwargs))
        return seen[-1]

    monkeypatch.setattr(watch_run, "read_backlog", recorded)
    return seen


def _both(tmp_path: Path, data: bytes, more: bytes = b"") -> tuple[Any, Any, Driven]:
    live = tmp_path / "vllm.log"
    live.write_bytes(data)
    one = _watched(tmp_path, live, 1, "one", more)
    seen_one = _seen(tmp_path, one, "one")
    live.write_bytes(data)  # the same file, its inode and first bytes: the same state
    shared = _watched(tmp_path, live, 3, "shared", more)
    return seen_one, _seen(tmp_path, shared, "shared"), shared


@pytest.mark.parametrize(("every", "wrapped"), [(7, False), (4, False), (5, True)])
def test_shared_backlog_counts_as_the_one_stream_read(
    tmp_path: Path, every: int, wrapped: bool, joined: list[FileScan | None]
) -> None:
    data, truth = log(0, 5000, every)
    data = cri(data) if wrapped else data
    one, shared, driven = _both(tmp_path, data)
    assert len(_spans(data)) > 3  # the backlog was cut, failures straddling the cuts
    assert len(joined) == 1 and joined[0] is not None  # and read shared, not as one stream
    assert shared == one
    assert driven.by_code() == truth
    assert driven.watcher.counts.lines == data.count(b"\n")


def _spans(data: bytes) -> list[Span]:
    with tempfile.TemporaryFile() as handle:
        handle.write(data)
        handle.flush()
        return spans(handle.fileno(), 0, len(data), 3, SMALL)


@pytest.mark.parametrize(
    "sample", sorted(p.name for p in SAMPLES.glob("*") if p.suffix in {".log", ".txt", ".md"})
)
def test_shared_backlog_of_a_sample_counts_as_the_one_stream_read(
    tmp_path: Path, sample: str, joined: list[FileScan | None]
) -> None:
    text = (SAMPLES / sample).read_bytes()
    text = text if text.endswith(b"\n") else text + b"\n"
    data = text * (200_000 // len(text) + 1)  # the sample over and over: cut many times
    one, shared, _ = _both(tmp_path, data)
    assert shared == one
    # Read shared, unless the ranges named different servers.
    assert (joined[0] is None) == (sample in FALLS_BACK)


def test_a_failure_cut_by_the_backlogs_end_is_counted_once(
    tmp_path: Path, joined: list[FileScan | None]
) -> None:
    data, _ = log(0, 4000, every=4)
    rest, _ = log(4000, 400, every=4)
    whole = data + rest
    # The backlog ends in the middle of a failure's traceback; the follower reads the rest.
    cut = whole.index(b"Traceback", len(data) - 2000)
    cut = whole.index(b"\n", cut) + 1
    one, shared, driven = _both(tmp_path, whole[:cut], whole[cut:])
    assert joined and joined[0] is not None
    assert shared == one
    live = tmp_path / "whole.log"
    live.write_bytes(whole)
    assert driven.by_code() == scan_by_code([live])


def test_a_backlog_stopped_midway_resumes_exactly(tmp_path: Path) -> None:
    data, truth = log(0, 5000, every=5)
    live = tmp_path / "vllm.log"
    live.write_bytes(data)
    stopped = Driven(_options(tmp_path, live, 2, "run"))
    asked = iter(range(10**9))
    stopped.watcher.stopped = lambda: next(asked) > 2  # SIGTERM while the workers read
    stopped.look()
    stopped.watcher.save()
    stopped.watcher.close()
    assert stopped.watcher.counts.lines == 0  # nothing folded
    assert (tmp_path / "run.events.jsonl").read_text() == ""
    saved = json.loads((tmp_path / "run.state.json").read_text())
    assert saved["files"][str(live)]["offset"] == 0
    again = _watched(tmp_path, live, 2, "run")
    assert again.by_code() == truth
    assert again.watcher.counts.lines == data.count(b"\n")
    events = (tmp_path / "run.events.jsonl").read_text().splitlines()
    assert Counter(json.loads(row)["code"] for row in events) == truth


def test_spans_share_the_backlog_out_once(tmp_path: Path) -> None:
    data, _ = log(0, 5000, every=7)
    planned = _spans(data)
    ranges = [s for s in planned if s.counted]
    seams = [s for s in planned if not s.counted]
    assert [r.start for r in ranges[1:]] == [r.end for r in ranges[:-1]]
    assert (ranges[0].start, ranges[-1].end) == (0, len(data))
    assert len(seams) == len(ranges) - 1
    kept = sorted((s.keep_from, s.keep_to) for s in planned)
    assert kept[0][0] == 0 and kept[-1][1] == len(data)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(kept))
    for seam in seams:  # every kept failure has a margin of context in its read
        assert seam.keep_from - seam.start >= SMALL.margin
        assert seam.end - seam.keep_to >= SMALL.margin
    for cut in (r.start for r in ranges[1:]):
        assert data[cut - 1 : cut] == b"\n"
        assert b" 11-01 " in data[cut : data.index(b"\n", cut)]  # a line with its own stamp


def test_one_job_or_a_small_backlog_is_not_cut(tmp_path: Path) -> None:
    data, _ = log(0, 500)
    live = tmp_path / "small.log"
    live.write_bytes(data)
    fd = os.open(live, os.O_RDONLY)
    try:
        assert spans(fd, 0, len(data), 1, SMALL) == []
        assert spans(fd, 0, len(data), 4, Layout(split=len(data) + 1)) == []
        assert spans(fd, 0, len(data), 4, Layout(split=1)) == []  # ranges under `least`
    finally:
        os.close(fd)


_READ_SPAN = backlog.read_span
_READ_HERE: list[Span] = []  # the spans the watch's own process read (not its workers)


def _read_once(*args: Any, **kwargs: Any) -> SpanRead:
    """read_span (in a worker too: it is pickled by name), noting the spans the watch's process
    reads itself, and failing when it takes one a second time."""
    if multiprocessing.parent_process() is None:
        span = args[2]
        assert span not in _READ_HERE, f"{span} read twice"
        _READ_HERE.append(span)
    return _READ_SPAN(*args, **kwargs)


def test_the_watchs_own_process_reads_each_span_it_takes_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, joined: list[FileScan | None]
) -> None:
    # It once took the spans no worker had taken by cancelling their futures; a future it had
    # cancelled cancels again, so it took the same span for ever (the 95-minute test run).
    # Now a flag each in shared memory says who took a span.
    monkeypatch.setattr(backlog, "read_span", _read_once)
    _READ_HERE.clear()
    data, truth = log(0, 5000, every=6)
    live = tmp_path / "vllm.log"
    live.write_bytes(data)
    driven = _watched(tmp_path, live, 3, "shared")
    assert joined and joined[0] is not None
    assert _READ_HERE  # it read some itself
    assert len(_READ_HERE) < len(_spans(data))  # and its workers the others
    assert driven.by_code() == truth


def test_one_job_reads_the_backlog_as_one_stream(
    tmp_path: Path, joined: list[FileScan | None]
) -> None:
    data, truth = log(0, 5000, every=7)
    live = tmp_path / "vllm.log"
    live.write_bytes(data)
    driven = _watched(tmp_path, live, 1, "one")
    assert joined == []  # not shared out: the one-stream read, as before -j
    assert driven.by_code() == truth
    assert driven.watcher.counts.lines == data.count(b"\n")
