"""Which scan core a source is read with: the Rust core (scan/core.py NativeCore) when built,
else the Python reference (scan/reference_core.py), and the Rust core's threads."""

from __future__ import annotations

import os

from harmony_doctor.inputs.files import MAX_LINE
from harmony_doctor.native import native_available
from harmony_doctor.scan.core import AFTER, BEFORE, MAX_WINDOW, CoreLike, NativeCore

# "1" or "2": the Rust core scans a large chunk's lines on that many threads (the results are
# the same); unset: see core_threads.
THREADS_ENV = "HARMONY_DOCTOR_CORE_THREADS"


def core_threads() -> int:
    """The Rust core's threads (see NativeCore): HARMONY_DOCTOR_CORE_THREADS when "1" or "2";
    else 2 where this process may run on 3 CPUs or more, 1 below. On 2 CPUs the scan's Python
    thread and the core's keep both busy: a second core thread measured no faster there
    (benchmarks/scan.py, native1 against native2)."""
    chosen = os.environ.get(THREADS_ENV, "").strip()
    if chosen in ("1", "2"):
        return int(chosen)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return 2 if (cpus or 1) >= 3 else 1


def make_core(
    before: int = BEFORE,
    after: int = AFTER,
    max_line: int = MAX_LINE,
    max_window: int = MAX_WINDOW,
    ids: bool = True,
    native: bool | None = None,
    threads: int | None = None,
) -> CoreLike:
    """The Rust core when built (or when native=True), else the reference (one thread); the
    Rust core's `threads` by default: core_threads()."""
    if native is None:
        native = native_available()
    if native:
        threads = core_threads() if threads is None else threads
        return NativeCore(before, after, max_line, max_window, ids, threads=threads)
    from harmony_doctor.scan.reference_core import Core  # loads only where it is used

    return Core(before, after, max_line, max_window, ids)
