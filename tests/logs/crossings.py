"""A scan with benchmarks/seam.py's profile hook on: the calls it made into the Rust
extension and the callbacks from it (tests/logs/test_window_calls.py, tests/test_native_seam.py)."""

from __future__ import annotations

import importlib.util
import sys
import threading
from pathlib import Path
from typing import Any

import harmony_doctor
from harmony_doctor import ScanResult


def scan_crossings(path: Path) -> tuple[Any, ScanResult]:
    """`harmony_doctor.scan([path])` counted: (its `Crossings`, the result)."""
    seam = Path(__file__).parents[2] / "benchmarks" / "seam.py"
    spec = importlib.util.spec_from_file_location("seam_benchmark", seam)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    crossings = module.Crossings()
    sys.setprofile(crossings.hook)
    threading.setprofile(crossings.hook)
    try:
        result = harmony_doctor.scan([path])
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return crossings, result
