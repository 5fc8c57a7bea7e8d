"""Where a scan crosses between Python and Rust, counted with benchmarks/seam.py's profile hook
on a generated vLLM log: the extension calls no Python back (issue 35: no callback per failure
window; `Hits.find` settles the form it finds itself)."""

from __future__ import annotations

import importlib.util
import sys
import threading
from pathlib import Path
from types import ModuleType

import pytest

import harmony_doctor
from harmony_doctor.native import native_available
from tests.watch.vllm_logs import log

pytestmark = pytest.mark.skipif(not native_available(), reason="the Rust extension is not built")


def _seam() -> ModuleType:
    path = Path(__file__).parents[1] / "benchmarks" / "seam.py"
    spec = importlib.util.spec_from_file_location("seam_benchmark", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_scan_calls_no_python_back_from_rust(tmp_path: Path) -> None:
    data, truth = log(0, 2000, every=25)
    path = tmp_path / "vllm.log"
    path.write_bytes(data)
    crossings = _seam().Crossings()
    sys.setprofile(crossings.hook)
    threading.setprofile(crossings.hook)
    try:
        result = harmony_doctor.scan([path])
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    failures = sum(truth.values())
    assert failures == 80
    assert len(result.events) == failures
    assert crossings.calls["Hits.find"] >= failures  # the forms are searched in Rust
    assert dict(crossings.callbacks) == {}
