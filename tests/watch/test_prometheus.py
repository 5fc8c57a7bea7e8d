"""A real Prometheus scrapes `watch --listen` while a generator writes a vLLM-shaped log with
known failures and rotates it twice; Prometheus' query API then gives the generator's totals
by code. Then the same with the watch killed (SIGKILL) mid-stream and restarted on its state.
Skipped where the Debian `prometheus` package is not installed (.ci/run installs it)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.watch.vllm_logs import log

pytestmark = pytest.mark.skipif(
    shutil.which("prometheus") is None or shutil.which("promtool") is None,
    reason="Prometheus not installed (Debian: apt-get install prometheus)",
)
LIMIT = 40.0  # seconds any one wait may take before the test gives up (a bound, not a check)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as answer:
        return bytes(answer.read())


def _until(check: Callable[[], bool], what: str) -> None:
    ends = time.monotonic() + LIMIT
    while True:
        try:
            if check():
                return
        except OSError:
            pass  # not listening yet
        assert time.monotonic() < ends, f"gave up waiting for {what}"
        time.sleep(0.2)


@contextmanager
def _prometheus(tmp_path: Path, target: int) -> Iterator[str]:
    port = _free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: harmony-doctor-watch\n"
        f"    static_configs:\n      - targets: ['127.0.0.1:{target}']\n"
    )
    with (tmp_path / "prometheus.err").open("wb") as err:
        server = subprocess.Popen(
            [
                "prometheus",
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        _until(lambda: _get(base + "/-/ready").startswith(b"Prometheus"), "Prometheus")
        yield base
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _watch(tmp_path: Path, port: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "harmony_doctor", "watch", "vllm.log", "--from-start"]
    command += ["--listen", f"127.0.0.1:{port}", "--state", "state.json", "--origin", "test"]
    command += ["--events", "events.jsonl"]
    with (tmp_path / "watch.err").open("ab") as err:
        return subprocess.Popen(command, cwd=tmp_path, stderr=err, env={**os.environ})


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _queried(base: str) -> Counter[str]:
    query = urllib.parse.quote("sum by (code) (harmony_doctor_watch_failures_total)")
    answer = json.loads(_get(f"{base}/api/v1/query?query={query}"))
    assert answer["status"] == "success"
    return Counter(
        {r["metric"]["code"]: int(float(r["value"][1])) for r in answer["data"]["result"]}
    )


def _scraped(port: int) -> Counter[str]:
    from prometheus_client.parser import text_string_to_metric_families

    text = _get(f"http://127.0.0.1:{port}/metrics").decode()
    out: Counter[str] = Counter()
    for family in text_string_to_metric_families(text):
        if family.name == "harmony_doctor_watch_failures":
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    out[sample.labels["code"]] += int(sample.value)
    return out


class _Generator:
    """Writes the log a batch of requests at a time, and rotates it (rename, copy-truncate)."""

    def __init__(self, folder: Path) -> None:
        self.live = folder / "vllm.log"
        self.live.write_bytes(b"")
        self.truth: Counter[str] = Counter()
        self.next = 0

    def write(self, requests: int) -> None:
        data, truth = log(self.next, requests)
        self.next += requests
        self.truth += truth
        half = len(data) // 2  # two writes: a read may fall between them
        for piece in (data[:half], data[half:]):
            with self.live.open("ab") as handle:
                handle.write(piece)
            time.sleep(0.05)

    def rename(self) -> None:
        one = self.live.with_name("vllm.log.1")
        if one.exists():
            one.rename(self.live.with_name("vllm.log.2"))
        self.live.rename(one)
        self.live.write_bytes(b"")

    def copy_truncate(self) -> None:
        one = self.live.with_name("vllm.log.1")
        if one.exists():
            one.rename(self.live.with_name("vllm.log.2"))
        shutil.copyfile(self.live, one)
        with self.live.open("r+b") as handle:
            handle.truncate(0)


class _Scraped:
    """A watch on a free port, a Prometheus scraping it and a generator writing its log."""

    def __init__(self, tmp_path: Path) -> None:
        self.folder = tmp_path
        self.port = _free_port()
        self.generator = _Generator(tmp_path)
        self.watch = _watch(tmp_path, self.port)
        self.base = ""

    def restart(self) -> None:
        self.watch = _watch(self.folder, self.port)

    def counted(self) -> None:
        """Until the watch and then Prometheus count what the generator wrote."""
        truth = self.generator.truth
        _until(lambda: _scraped(self.port) == truth, "watch's totals")
        _until(lambda: _queried(self.base) == truth, "Prometheus' totals")


@contextmanager
def _scraped_watch(tmp_path: Path) -> Iterator[_Scraped]:
    run = _Scraped(tmp_path)
    try:
        with _prometheus(tmp_path, run.port) as run.base:
            _until(lambda: _get(f"http://127.0.0.1:{run.port}/healthz") == b"ok\n", "watch")
            yield run
    finally:
        _stop(run.watch)


def test_prometheus_totals_equal_the_truth(tmp_path: Path, loopback_only: str) -> None:
    with _scraped_watch(tmp_path) as run:
        for batch in range(9):
            run.generator.write(30)
            if batch == 2:
                run.generator.rename()
            if batch == 5:
                run.generator.copy_truncate()
            time.sleep(0.1)
        run.counted()
        exposition = _get(f"http://127.0.0.1:{run.port}/metrics")
    assert run.watch.returncode == 0
    checked = subprocess.run(
        ["promtool", "check", "metrics"], input=exposition, capture_output=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert b"Traceback" not in (tmp_path / "watch.err").read_bytes()


def test_killed_and_restarted_totals_equal_the_truth(tmp_path: Path, loopback_only: str) -> None:
    with _scraped_watch(tmp_path) as run:
        for _ in range(3):
            run.generator.write(30)
        _until(lambda: sum(_scraped(run.port).values()) > 0, "a first count")
        run.generator.write(30)
        run.watch.send_signal(signal.SIGKILL)  # mid-stream: nothing saved since its last save
        run.watch.wait()
        run.generator.write(30)
        run.generator.rename()  # rotated while it was down
        run.generator.write(30)
        run.restart()
        run.generator.copy_truncate()
        run.generator.write(30)
        run.counted()
    events = (tmp_path / "events.jsonl").read_text().splitlines()
    assert Counter(json.loads(line)["code"] for line in events) == run.generator.truth
