"""The exposition: Prometheus' naming rules (promtool check metrics), bounded and escaped
labels, /metrics and /healthz served, the textfile written whole."""

from __future__ import annotations

import shutil
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from harmony_doctor.watch.counts import Counts
from harmony_doctor.watch.metrics import (
    TEXTFILE,
    MetricsServer,
    Snapshot,
    exposition,
    metrics_registry,
    write_metrics_textfile,
)
from harmony_doctor.watch.run import WatchOptions
from tests.watch.conftest import Driven
from tests.watch.vllm_logs import log

HOSTILE = "host\x1b[31m\nname\u202e" + "x" * 500


def _counted(tmp_path: Path, origin: str = "test") -> Snapshot:
    data, _ = log(0, 60)
    live = tmp_path / "vllm.log"
    live.write_bytes(data)
    driven = Driven(WatchOptions((str(live),), from_start=True, origin=origin))
    driven.look()
    return driven.watcher.snapshot()


def test_counters_by_code_and_requests(tmp_path: Path) -> None:
    shot = _counted(tmp_path)
    text = exposition(metrics_registry(lambda: shot)).decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    failures = families["harmony_doctor_watch_failures"]
    assert failures.type == "counter"
    by_code = {s.labels["code"]: s.value for s in failures.samples if s.name.endswith("_total")}
    assert by_code == {k: float(v) for k, v in shot.counts.failures_by_code().items()}
    requests = [s for s in families["harmony_doctor_watch_requests"].samples]
    assert [s.value for s in requests if s.name.endswith("_total")] == [60.0]
    assert families["harmony_doctor_watch_files_followed"].samples[0].value == 1.0


def test_label_values_are_one_safe_bounded_line(tmp_path: Path) -> None:
    shot = _counted(tmp_path, origin=HOSTILE)
    text = exposition(metrics_registry(lambda: shot)).decode()
    assert "\x1b" not in text
    assert "\u202e" not in text
    origins = {
        s.labels["origin"]
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if "origin" in s.labels
    }
    assert len(origins) == 1
    (origin,) = origins
    assert "\\x1b" in origin
    assert len(origin) <= 120


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_promtool_accepts_the_exposition(tmp_path: Path) -> None:
    shot = _counted(tmp_path)
    text = exposition(metrics_registry(lambda: shot))
    checked = subprocess.run(
        ["promtool", "check", "metrics"], input=text, capture_output=True, check=False
    )
    assert checked.returncode == 0, checked.stderr.decode() + checked.stdout.decode()


def test_textfile_is_written_whole(tmp_path: Path) -> None:
    shot = _counted(tmp_path)
    folder = tmp_path / "textfile"
    folder.mkdir()
    write_metrics_textfile(folder, metrics_registry(lambda: shot))
    assert [p.name for p in folder.iterdir()] == [TEXTFILE]
    text = (folder / TEXTFILE).read_text()
    assert "harmony_doctor_watch_failures_total{" in text


def test_served_on_loopback(loopback_only: str) -> None:
    shot = Snapshot(Counts(), 0, 0.0)
    server = MetricsServer(loopback_only, 0, metrics_registry(lambda: shot))
    server.start()
    try:
        base = f"http://{loopback_only}:{server.port}"
        with urllib.request.urlopen(base + "/healthz", timeout=10) as answer:
            assert answer.read() == b"ok\n"
        with urllib.request.urlopen(base + "/metrics", timeout=10) as answer:
            assert b"harmony_doctor_watch_read_bytes_total 0.0" in answer.read()
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(base + "/other", timeout=10)
        assert refused.value.code == 404
        refused.value.close()
    finally:
        server.stop()
