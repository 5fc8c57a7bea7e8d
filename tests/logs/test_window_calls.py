"""Calls from Python into the Rust extension per failure window of a scan (issue 35: the
first pass takes a whole window, its runs of ordinary lines and the lines Python reads between
them, in one `FirstPass.absorb_runs`, not one `absorb` a line), counted with
benchmarks/seam.py's profile hook on a generated vLLM log."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from harmony_doctor.native import native_available, use_native
from tests.logs.crossings import scan_crossings
from tests.watch.vllm_logs import log

pytestmark = pytest.mark.skipif(
    not native_available() or not use_native(),
    reason="the Rust extension is not built, or HARMONY_DOCTOR_NATIVE=0: no Rust to count",
)

# What reading a failure window costs today: one `absorb_runs` (from the window's start, with
# the blank line scan feeds for the lines between two windows, through the traceback's QUIET
# lines and the error line, handed back read, to the window's end: the message the error line
# opens has ended on the line after it), and `Hits.find` twice for each distinct error text (at
# its start, and past its message for another; the extractor remembers what Rust settled for a
# text: logs/recall.py). Before the runs: 47 calls (38
# `absorb`, 6 `Anatomy.read`, 2 `Hits.find`, 1 `take`); with one `absorb_run` a run of
# ordinary lines, 8.1; with runs that stopped at the error line, 2.1.
CALLS_PER_WINDOW = 1
WINDOW_CLASSES = ("FirstPass.", "Anatomy.", "Hits.")
ONCE_PER_SCAN = ("FirstPass.fresh", "FirstPass.take", "Anatomy.counts", "Hits.counts")


def _calls(path: Path) -> Counter[str]:
    crossings, result = scan_crossings(path)
    calls: Counter[str] = crossings.calls
    calls["events"] = len(result.events)
    return calls


def test_a_failure_window_costs_a_few_calls_into_rust(tmp_path: Path) -> None:
    data, truth = log(0, 2000, every=25)
    path = tmp_path / "vllm.log"
    path.write_bytes(data)
    calls = _calls(path)
    failures = sum(truth.values())
    assert failures == 80
    assert calls["events"] == failures
    per_window = sum(
        n
        for name, n in calls.items()
        if name.startswith(WINDOW_CLASSES) and name not in ONCE_PER_SCAN
    )
    texts = {line.partition(b"] ")[2] for line in data.splitlines() if b"HarmonyError" in line}
    assert 0 < calls["Hits.find"] <= 2 * len(texts) < failures, (len(texts), dict(calls))
    per_window -= calls["Hits.find"]
    assert per_window <= CALLS_PER_WINDOW * failures, (per_window / failures, dict(calls))
    # the window's ordinary lines are summed in runs, not a call each, and the lines Python
    # reads come back read with them
    assert calls["FirstPass.absorb"] == 0, dict(calls)
    assert calls["FirstPass.absorb_run"] == 0, dict(calls)
    assert calls["Anatomy.read"] == 0, dict(calls)
    assert calls["FirstPass.take"] <= 1, dict(calls)
