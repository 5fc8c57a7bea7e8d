"""Where `harmony-doctor scan` crosses between Python and Rust: calls into the extension and
callbacks from it, counted over one scan of a log (`sys.setprofile` in every thread).

    python benchmarks/seam.py LOG [--jobs 1]

Counts, per name: each call from Python into `harmony_doctor._native` (a function, or a method
of one of its classes), and each Python function the extension calls while it runs (a
callback: its outermost Python frame only). Divided by the failures the scan found, they say
how many crossings a failure window costs. The profile slows the scan tenfold or more: use a
log of a few dozen MiB (`head -c 32M` of benchmarks/make_logs.py's).

A benchmark, not a test: it measures where the seam is, not how fast.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import threading
from collections import Counter
from types import FrameType
from typing import Any

NATIVE = "harmony_doctor._native"


class Crossings:
    """The profile hook: counts calls into the extension and Python calls made inside one."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.callbacks: Counter[str] = Counter()
        self._state = threading.local()

    @staticmethod
    def _native_name(function: Any) -> str | None:
        owner = getattr(function, "__self__", None)
        if type(owner).__module__ == NATIVE:
            return f"{type(owner).__name__}.{function.__name__}"
        if getattr(function, "__module__", None) == NATIVE:
            return str(function.__name__)
        return None

    def hook(self, frame: FrameType, event: str, arg: Any) -> None:
        state = self._state
        inside = getattr(state, "inside", 0)
        if event == "c_call":
            name = self._native_name(arg)
            if name is not None:
                self.calls[name] += 1
                state.inside, state.depth = inside + 1, 0
        elif event in ("c_return", "c_exception"):
            if inside and getattr(state, "depth", 0) == 0 and self._native_name(arg) is not None:
                state.inside = inside - 1
        elif event == "call" and inside:
            if getattr(state, "depth", 0) == 0:
                where = frame.f_code.co_filename.rsplit("harmony_doctor/", 1)[-1]
                self.callbacks[f"{where}:{frame.f_code.co_name}"] += 1
            state.depth = getattr(state, "depth", 0) + 1
        elif event == "return" and inside:
            state.depth = getattr(state, "depth", 1) - 1


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("log")
    parser.add_argument("--jobs", default="1")
    args = parser.parse_args()
    crossings = Crossings()
    sys.setprofile(crossings.hook)
    threading.setprofile(crossings.hook)
    from harmony_doctor.cli.start import main as cli

    sys.argv = ["harmony-doctor", "scan", "-j", args.jobs, "--format", "json", args.log]
    out = io.StringIO()
    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(out):
        cli()
    sys.setprofile(None)
    threading.setprofile(None)
    totals = json.loads(out.getvalue())["totals"]
    failures = max(1, totals["failures"])
    print(f"log {args.log}: {totals['lines']} lines, {totals['failures']} failures")
    print(f"{'calls into Rust':<40} {'count':>9} {'per failure':>12}")
    for name, n in crossings.calls.most_common():
        print(f"  {name:<38} {n:>9} {n / failures:>12.1f}")
    print(f"{'callbacks into Python':<40} {'count':>9} {'per failure':>12}")
    for name, n in crossings.callbacks.most_common():
        print(f"  {name:<38} {n:>9} {n / failures:>12.1f}")


if __name__ == "__main__":
    main()
