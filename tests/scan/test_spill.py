"""Events streamed out of a source as they become final (findings.EventStream, the scan's
spill) are the events the whole-list path gives at the end, and memory does not grow with them."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import harmony_doctor as hd
from harmony_doctor.inputs.files import Source
from harmony_doctor.models import LoggedFailure, ScanEvent
from harmony_doctor.scan.findings import (
    EventStream,
    completion_diagnosis,
    merge_duplicates,
    source_events,
)
from harmony_doctor.scan.found import Place, SourceScan
from harmony_doctor.scan.records import ScanOptions
from harmony_doctor.scan.run import scan
from harmony_doctor.scan.source import META_REACH, scan_source
from harmony_doctor.scan.spill import BATCH, EventSink
from harmony_doctor.streams.clean import CleanStreams
from tests.helpers import Trickle

REFERENCE = datetime(2026, 11, 30)
SAMPLES = Path(__file__).parents[2] / "samples"


def _completion(n: int, bad: bool, pid: int) -> str:
    body = [(n * 7919 + i * 104_729) % 199_000 + 500 for i in range(12)]
    ids = (
        [200005, 35644, *body, 200008, 17196, 200002]
        if bad
        else [200005, 35644, 200008, 38, 200007]
    )
    return (
        f"(APIServer pid={pid}) INFO 11-12 14:00:{n % 60:02d} [logger.py:71] Generated response "
        f"chatcmpl-{n}: output: 'x', output_token_ids: {ids}, finish_reason: stop"
    )


def _block(kind: int, n: int, pid: int) -> list[str]:
    """One piece of a generated log: failures of every source (logged, replayed, rejected),
    tracebacks, request lines and filler that moves the lines past the merge window."""
    stamp = f"11-12 14:{n // 60 % 60:02d}:{n % 60:02d}"
    if kind == 0:
        return [_completion(n, bad=True, pid=pid)]
    if kind == 1:
        return [_completion(n, bad=False, pid=pid)]
    if kind == 2:  # the server's report of a header fault (folds into a replay nearby)
        return [
            f"(APIServer pid={pid}) ERROR {stamp} [serving.py:1184] openai_harmony.HarmonyError: "
            f'unexpected tokens remaining in message header: Some("to=functions.tool_{n % 4}")'
        ]
    if kind == 3:
        return (SAMPLES / "vllm-traceback.log").read_text().splitlines()[: 5 + n % 25]
    if kind == 4:
        return [
            f"(APIServer pid={pid}) INFO {stamp} [logger.py:71] Received request chatcmpl-{n}: "
            "params: SamplingParams(n=1), prompt_token_ids: None, lora_request: None."
        ]
    if kind == 5:
        return [f"(APIServer pid={pid}) INFO {stamp} [loggers.py:127] filler {i}" for i in range(n)]
    if kind == 7:  # a summary, a gap, and the traceback it sums up: one failure
        return [
            f"[2026-11-12 14:00:{n % 60:02d}] Error in request: Expected 2 output messages "
            f"(reasoning and final), but got {n % 3 + 3}.",
            "--",
            "Traceback (most recent call last):",
            '  File "/x/sglang/srt/entrypoints/openai/serving_chat.py", line 785, in build',
            "    raise ValueError(",
            f"ValueError: Expected 2 output messages (reasoning and final), but got {n % 3 + 3}.",
        ]
    if kind == 8:  # a parse failure, over another family's markup or Harmony's, and a copy
        payload = "<tool_call>\\n<function=f>" if n % 3 else "<|channel|>analysis<|message|>"
        return [
            f'{{"error":{{"code":500,"message":"Failed to parse input at pos {n}"}}}}',
            f'srv    operator(): got exception: {{"error":{{"code":500,"message":"Failed to '
            f'parse input at pos {n}: {payload}","type":"server_error"}}}}',
        ]
    if kind == 6:  # ids openai-harmony rejects
        return [
            f"(APIServer pid={pid}) INFO {stamp} [logger.py:71] Generated response chatcmpl-r{n}: "
            "output: 'x', output_token_ids: [200005, 999999999], finish_reason: stop"
        ]
    return [""]


def _whole(data: bytes, vocab: Any, size: int) -> list[ScanEvent]:
    """The events as the whole-list path gives them: every finding held to the end."""
    options = ScanOptions()
    clean = CleanStreams(lambda: vocab, options.role)
    diagnose = completion_diagnosis(lambda: vocab, options, clean)
    found = scan_source(Trickle(data, size), "x.log", REFERENCE, True, clean, None, diagnose)
    return merge_duplicates(list(source_events(found, lambda: vocab, options, clean)))


def _streamed(data: bytes, vocab: Any, size: int) -> tuple[list[ScanEvent], int]:
    """The events as the scan streams them; and how many left before the source's end."""
    options = ScanOptions()
    clean = CleanStreams(lambda: vocab, options.role)
    diagnose = completion_diagnosis(lambda: vocab, options, clean)
    out: list[ScanEvent] = []
    streams: list[EventStream] = []

    def settled(found: SourceScan, floor: int) -> None:
        if not streams:
            streams.append(EventStream(found, lambda: vocab, options, clean))
        out.extend(streams[0].advance(floor))

    found = scan_source(
        Trickle(data, size), "x.log", REFERENCE, True, clean, None, diagnose, settled
    )
    early = len(out)
    out.extend((streams or [EventStream(found, lambda: vocab, options, clean)])[0].close())
    server = found.server
    return [replace(e, server=server) if e.server is None else e for e in out], early


def _wrapped(lines: list[str], wrap: str) -> list[str]:
    """Lines as a container runtime logs them: Docker's JSON, or CRI's (with partial lines,
    which join the next: two lines of the log, one line read, its failures on one line)."""
    if wrap == "docker":
        return [
            json.dumps(
                {"log": line + "\n", "stream": "stdout", "time": f"2026-11-12T14:00:{i % 60:02d}Z"}
            )
            for i, line in enumerate(lines)
        ]
    if wrap == "cri":
        return [
            f"2026-11-12T14:00:{i % 60:02d}.0Z stdout {'P' if i % 7 == 3 else 'F'} {line}"
            for i, line in enumerate(lines)
        ]
    return lines


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    blocks=st.lists(
        st.tuples(st.integers(0, 9), st.integers(0, 260), st.sampled_from([7, 8, 3817])),
        min_size=1,
        max_size=60,
    ),
    size=st.sampled_from([97, 512, 4096, 65_536]),
    wrap=st.sampled_from(["", "docker", "cri"]),
)
def test_streamed_events_are_the_whole_lists_events(
    vocab: Any, blocks: list[tuple[int, int, int]], size: int, wrap: str
) -> None:
    lines = _wrapped([line for kind, n, pid in blocks for line in _block(kind, n, pid)], wrap)
    data = ("\n".join(lines) + "\n").encode()
    streamed, _ = _streamed(data, vocab, size)
    assert streamed == _whole(data, vocab, size)


def test_failures_on_one_line_keep_the_whole_lists_order_whenever_they_arrive(
    vocab: Any,
) -> None:
    """Two failures on one line (a CRI partial line joins a logged error and a completion whose
    ids openai-harmony rejects): the rejected ids are found as their line is read, the error
    when the extractor lets it go, later; the whole list has the error first, and so must the
    stream."""
    found = SourceScan("x.log", REFERENCE)
    stream = EventStream(found, lambda: vocab, ScanOptions(), None)
    found.rejected.append(("id 999999999 out of range", "r1", Place(5, None, 7)))
    assert stream.advance(3) == []
    error = LoggedFailure(
        5, None, 7, None, None, "header_leftover", "HD102", "error", None, "x", "unexpected x"
    )
    found.errors.append((error, Place(5, None, 7)))
    streamed = stream.advance(10_000)
    whole = SourceScan("x.log", REFERENCE)
    whole.errors.append((error, Place(5, None, 7)))
    whole.rejected.append(("id 999999999 out of range", "r1", Place(5, None, 7)))
    expected = merge_duplicates(list(source_events(whole, lambda: vocab, ScanOptions(), None)))
    assert [e.code for e in streamed] == [e.code for e in expected] == ["HD102", "HD177"]
    assert streamed == expected


def test_events_leave_before_the_source_ends_and_merges_hold(vocab: Any) -> None:
    """A log much longer than the scan core's reach back (source.META_REACH: a window of hits
    can be handed back that far behind the read position, so nothing above it is final):
    most events are final, and handed on, long before its end; the logged reports of
    replayed faults still fold into them."""
    pad = "x" * 900
    lines = []
    for n in range(2000):
        lines += _block(0, n, 7) + _block(5, 3, 7) + _block(2, n, 7)
        lines += [f"(APIServer pid=7) INFO 11-12 14:00:00 [loggers.py:127] {pad}"] * 8
    data = ("\n".join(lines) + "\n").encode()
    assert len(data) > 2 * META_REACH
    streamed, early = _streamed(data, vocab, 65_536)
    assert streamed == _whole(data, vocab, 65_536)
    assert early > len(streamed) * 0.3, f"only {early} of {len(streamed)} before the end"
    assert any(e.source == "replay" and e.message.startswith("unexpected tokens") for e in streamed)


def _failures(count: int, pad: int = 0) -> bytes:
    """`count` distinct logged failures, a request line (`pad` bytes longer) before each."""
    return b"".join(
        b"(APIServer pid=4121) INFO 11-28 10:%02d:%02d [logger.py:71] Received request r%d: %s\n"
        b"(APIServer pid=4121) ERROR 11-28 10:%02d:%02d [serving_chat.py:1145] "
        b"openai_harmony.HarmonyError: unexpected tokens remaining in message header: [%d, %d]\n"
        % (i // 60 % 60, i % 60, i, b"x" * pad, i // 60 % 60, i % 60, i, i * 7)
        for i in range(count)
    )


def _most_held(path: Path, spill: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int, int]:
    """The most failures held in Python at once while `path` is scanned with a spill: found,
    not yet events, or events not final yet; and final events not written yet (a batch); and
    the events written."""
    most = [0, 0]
    settled, close = EventSink.settled, EventSink.close

    def measured(sink: EventSink, found: SourceScan, floor: int) -> None:
        before = len(found.errors) + len(found.replayed) + len(found.rejected)
        settled(sink, found, floor)
        stream = sink.stream
        waiting = 0 if stream is None else len(stream.logged) + len(stream.replays)
        waiting += 0 if stream is None else len(stream.ready)
        most[0] = max(most[0], before, waiting)
        most[1] = max(most[1], sum(map(len, sink.held)))

    def closed(sink: EventSink, found: SourceScan) -> Any:
        most[0] = max(most[0], len(found.errors) + len(found.replayed) + len(found.rejected))
        return close(sink, found)

    monkeypatch.setattr(EventSink, "settled", measured)
    monkeypatch.setattr(EventSink, "close", closed)
    result = scan([Source(str(path), path)], ScanOptions(jobs=1, origin="h"), spill=spill)
    assert not result.held and result.spill is not None  # nothing held once scanned
    return most[0], most[1], result.failures


def test_failures_held_in_python_do_not_grow_with_the_failures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scanning 5,000 or 15,000 failures (2 KB of log each) holds about as many findings at
    most: those in the megabytes of log the scan core hands back at once (its windows of merged
    hits, the chunks it has not settled), not one per failure; and final events up to a batch
    (BATCH) before they are written: the rest are on disk. (Held to the end, 10,000 more would
    be held, about 1 KB each.)"""
    held = []
    for count in (5000, 15_000):
        log = tmp_path / f"f{count}.log.gz"
        log.write_bytes(gzip.compress(_failures(count, pad=2000)))
        spill = tmp_path / f"spill{count}"
        spill.mkdir()
        findings, batch, written = _most_held(log, spill, monkeypatch)
        assert written == count and list(spill.iterdir())
        assert batch <= BATCH
        held.append(findings)
    assert held[0] <= 5000 and held[1] - held[0] < 1000, held


def test_spilled_result_reads_back_the_events_of_a_held_one(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(_failures(50) + (SAMPLES / "vllm-requests.log").read_bytes())
    options = ScanOptions(jobs=1, origin="h", redact=True)
    held = scan([Source(str(log), log)], options)
    spilled = scan([Source(str(log), log)], options, spill=tmp_path)
    assert held.spill is None and not spilled.held and spilled.spill is not None
    assert spilled.failures == held.failures == len(held.events) > 50
    assert spilled.events == held.events and spilled == held
    assert {e.origin for e in spilled.events} == {"h"}
    one, two = hd.summarize_scan(held), hd.summarize_scan(spilled)
    assert one.totals == two.totals and one.table.equals(two.table)
    assert one.events.lazy().collect().equals(two.events.lazy().collect())
    assert one.folded.equals(two.folded) and one.first.equals(two.first)
    assert len(list(two.events.batches())) == len(spilled.spill.files) >= 1  # a file at a time


def test_a_lone_error_does_not_hold_the_events_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One logged error, then 8,000 failing completions and no other error: no later window
    would repeat the error once the core has read far past it, so it is final then, and the
    replays after it leave in batches (before, every one waited for the source's end)."""
    error = (
        "(APIServer pid=7) ERROR 11-12 13:59:59 [serving_chat.py:1145] openai_harmony."
        "HarmonyError: unexpected tokens remaining in message header: [1, 2]"
    )
    filler = "(APIServer pid=7) INFO 11-12 14:00:00 [loggers.py:123] Engine 000: Avg prompt"
    lines = [error, *[filler] * 100]
    for n in range(8000):
        lines += [_completion(n, bad=True, pid=7), *[filler] * 30]
    log = tmp_path / "lone.log.gz"
    log.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    spill = tmp_path / "spill"
    spill.mkdir()
    findings, batch, written = _most_held(log, spill, monkeypatch)
    assert written > 7900 and 0 < batch <= BATCH  # a few replays merge as repeats
    # about 3,200 at most (the megabytes of log the core hands back at once; 12,000 replays
    # hold as many); before, about 7,000 waited for the end, and no batch left before it
    assert findings < 4500, findings
