"""Where a scan crosses between Python and Rust, counted with benchmarks/seam.py's profile hook
on a generated vLLM log: the extension calls no Python back (issue 35: no callback per failure
window; `Hits.find` settles the form it finds itself)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harmony_doctor.native import native_available
from tests.logs.crossings import scan_crossings
from tests.watch.vllm_logs import log

pytestmark = pytest.mark.skipif(not native_available(), reason="the Rust extension is not built")


def test_a_scan_calls_no_python_back_from_rust(tmp_path: Path) -> None:
    data, truth = log(0, 2000, every=25)
    path = tmp_path / "vllm.log"
    path.write_bytes(data)
    crossings, result = scan_crossings(path)
    failures = sum(truth.values())
    assert failures == 80
    assert len(result.events) == failures
    # the forms are searched in Rust, each recurring error line once (logs/recall.py)
    assert 0 < crossings.calls["Hits.find"] < failures
    assert dict(crossings.callbacks) == {}
