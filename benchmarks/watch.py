"""`harmony-doctor watch` measured: a 1 GiB backlog against mtail, the latency from a line
written to its count in /metrics, and the CPU it takes while the logs are idle.

    python benchmarks/watch.py [--mb 1024] [--dir DIR] [--jobs 1 2] [--repeat 3] [--latency 20]
                               [--idle 30] [--no-live] [--json]

The log is benchmarks/make_logs.py's (a failure per 500 requests, its truth beside it, cached
in --dir). Side by side, in one run:
- backlog: `watch LOG --from-start --listen 127.0.0.1:PORT` until /metrics says every byte is
  read (wall, CPU user+sys of the process and of the backlog's workers, the process's peak
  RSS, from /proc), against `mtail --one_shot` (Debian's mtail) with a program counting the
  same lines (one counter by code, a regex per message, and the access lines) under
  `/usr/bin/time -v`. Both counts are checked against
  the truth: a difference prints MISMATCH. Watch runs once per --jobs value (its -j; none
  given: its default, all cores), and `scan -j 1 LOG` beside them (what one core reads).
  The log is read once before any of them (so none pays for filling the page cache: the first
  run used to, 0.6-1.6 s of a 2-3 s backlog), and the tools run --repeat times in turn (each
  round runs every tool once, so load falls on all alike); each row is the median of its runs,
  and the ratios are of medians.
- latency: with watch following the log from its end, a failure's lines are appended, and
  /metrics is read every 10 ms until its count shows (median and worst of N).
- idle: the CPU watch takes over --idle seconds while nothing is written (percent of a core).

A benchmark, not a test: wall times depend on the machine and its load (printed).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from make_logs import MESSAGES, write

TICK = os.sysconf("SC_CLK_TCK")
TIME = "/usr/bin/time"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def metrics(port: int) -> dict[str, float]:
    """Sums of /metrics' samples by metric name (`failures_total` by code as `...{HD111}`)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, _, value = line.rpartition(" ")
        base = name.split("{", 1)[0]
        out[base] = out.get(base, 0.0) + float(value)
        code = re.search(r'code="([^"]+)"', name)
        if code is not None:
            key = f"{base}{{{code.group(1)}}}"
            out[key] = out.get(key, 0.0) + float(value)
    return out


def cpu_seconds(pid: int) -> float:
    """User and system CPU of the process and of its children it has waited for (the backlog's
    worker processes, waited for when their pool shuts down, before the counts are shown)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(fields[i]) for i in (11, 12, 13, 14)) / TICK


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def start_watch(log: Path, port: int, *extra: str) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "harmony_doctor", "watch", str(log)]
    command += ["--listen", f"127.0.0.1:{port}", "--origin", "bench", *extra]
    process = subprocess.Popen(command, stderr=subprocess.DEVNULL)
    wait_for(lambda: "harmony_doctor_watch_read_bytes_total" in metrics(port), 60)
    return process


def wait_for(check: Any, limit: float, step: float = 0.05) -> float:
    started = time.monotonic()
    while time.monotonic() - started < limit:
        try:
            if check():
                return time.monotonic() - started
        except OSError:
            pass
        time.sleep(step)
    raise SystemExit(f"gave up after {limit} s")


def stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)


def backlog_watch(log: Path, truth: dict[str, Any], jobs: int | None) -> dict[str, Any]:
    port = free_port()
    started = time.monotonic()
    process = start_watch(log, port, "--from-start", *(("-j", str(jobs)) if jobs else ()))
    size = log.stat().st_size
    # polled every 0.1 s (the wall is late by at most that): each scrape costs watch CPU, and
    # at every 0.02 s the scrapes took ~0.2 s of a 1 GiB backlog's 3.4 s (Prometheus scrapes
    # every 15 s or more)
    wait_for(lambda: metrics(port)["harmony_doctor_watch_read_bytes_total"] >= size, 3600, 0.1)
    wall = time.monotonic() - started
    cpu, rss = cpu_seconds(process.pid), peak_rss_mb(process.pid)
    seen = metrics(port)
    stop(process)
    counts = {
        code: int(seen.get(f"harmony_doctor_watch_failures_total{{{code}}}", 0))
        for code in truth["failures_by_code"]
    }
    requests = int(seen.get("harmony_doctor_watch_requests_total", 0))
    return {
        "tool": f"watch -j {jobs}" if jobs else "watch",
        "wall": wall,
        "cpu": cpu,
        "rss_mb": rss,
        "failures": counts,
        "requests": requests,
    }


def timed(command: list[str]) -> tuple[subprocess.CompletedProcess[str], float, float, float]:
    """The command run under `/usr/bin/time -v`: what it gave, its wall, CPU (user + sys, its
    children included) and peak RSS (MiB)."""
    started = time.monotonic()
    done = subprocess.run([TIME, "-v", *command], capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    numbers = dict(re.findall(r"^\s*([^:\n]+):\s*(.+)$", done.stderr, re.M))
    cpu = float(numbers.get("User time (seconds)", 0)) + float(
        numbers.get("System time (seconds)", 0)
    )
    return done, wall, cpu, int(numbers.get("Maximum resident set size (kbytes)", 0)) / 1024


def backlog_scan(log: Path, folder: Path) -> dict[str, Any]:
    """`harmony-doctor scan -j 1 LOG --events FILE`: the same reading on one core, no watch."""
    events = folder / "scan-events.jsonl"
    command = [sys.executable, "-m", "harmony_doctor", "scan", "-j", "1", str(log)]
    done, wall, cpu, rss = timed([*command, "--events", str(events), "--origin", "bench"])
    counts: dict[str, int] = {}
    with events.open() as rows:
        for row in rows:
            code = json.loads(row)["code"]
            counts[code] = counts.get(code, 0) + 1
    events.unlink()
    events.with_suffix(".requests.jsonl").unlink(missing_ok=True)  # its requests sidecar
    requests = re.search(r"([\d,]+) requests", done.stdout)
    return {
        "tool": "scan -j 1",
        "wall": wall,
        "cpu": cpu,
        "rss_mb": rss,
        "failures": counts,
        "requests": int(requests.group(1).replace(",", "")) if requests else 0,
    }


def mtail_program() -> str:
    lines = ["counter harmony_failures by code", "counter requests", ""]
    lines += ['/"POST \\/v1\\/chat\\/completions/ {', "  requests++", "}"]
    for message, code in MESSAGES:
        pattern = re.escape("openai_harmony.HarmonyError: " + message).replace("/", "\\/")
        lines += [f"/{pattern}/ {{", f'  harmony_failures["{code}"]++', "}"]
    return "\n".join(lines) + "\n"


def backlog_mtail(log: Path, folder: Path) -> dict[str, Any]:
    progs = folder / "mtail"
    progs.mkdir(exist_ok=True)
    (progs / "harmony.mtail").write_text(mtail_program())
    command = [
        "mtail",
        "--progs",
        str(progs),
        "--logs",
        str(log),
        "--one_shot",
        "--one_shot_format",
        "prometheus",
        "--port",
        str(free_port()),
        "--address",
        "127.0.0.1",
        "--logtostderr",
    ]
    done, wall, cpu, rss = timed(command)
    counts = {
        code: int(float(n))
        for code, n in re.findall(r'harmony_failures\{code="(\w+)"[^}]*\} (\S+)', done.stdout)
    }
    requests = re.search(r"^requests(?:\{[^}]*\})? (\S+)", done.stdout, re.M)
    return {
        "tool": "mtail",
        "wall": wall,
        "cpu": cpu,
        "rss_mb": rss,
        "failures": counts,
        "requests": int(float(requests.group(1))) if requests else 0,
    }


def failure_record(n: int) -> bytes:
    stamp = time.strftime("%m-%d %H:%M:%S")
    prefix = f"(APIServer pid=1000) ERROR {stamp} [serving_chat.py:1145] "
    message = MESSAGES[n % len(MESSAGES)][0]
    lines = [
        "Error in chat completion stream generator.",
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.12/dist-packages/openai_harmony/__init__.py", line 637,'
        " in process",
        "    self._inner.process(token)",
        f"openai_harmony.HarmonyError: {message}",
    ]
    return "".join(prefix + line + "\n" for line in lines).encode()


def latency_and_idle(folder: Path, samples: int, idle: float) -> dict[str, Any]:
    log = folder / "live.log"
    log.write_bytes(b"")
    port = free_port()
    process = start_watch(log, port)
    delays = []
    try:
        for n in range(samples):
            before = metrics(port).get("harmony_doctor_watch_failures_total", 0.0)
            with log.open("ab") as handle:
                handle.write(failure_record(n))
            delays.append(
                wait_for(
                    lambda b=before: (
                        metrics(port).get("harmony_doctor_watch_failures_total", 0) > b
                    ),
                    30,
                    0.01,
                )
            )
            time.sleep(0.3)
        time.sleep(2)  # its last read and save behind it
        cpu0 = cpu_seconds(process.pid)
        time.sleep(idle)
        idle_cpu = (cpu_seconds(process.pid) - cpu0) / idle
    finally:
        stop(process)
    return {
        "latency_median": statistics.median(delays),
        "latency_max": max(delays),
        "samples": samples,
        "idle_seconds": idle,
        "idle_core_percent": 100 * idle_cpu,
    }


def warm(log: Path) -> None:
    """Read the log once, so that every timed run finds it in the page cache."""
    with log.open("rb", buffering=0) as handle:
        while handle.read(8 << 20):
            pass


def counted_right(row: dict[str, Any], truth: dict[str, Any]) -> bool:
    return bool(
        row["failures"] == truth["failures_by_code"] and row["requests"] == truth["requests"]
    )


def median_row(runs: list[dict[str, Any]], truth: dict[str, Any]) -> dict[str, Any]:
    """One tool's runs as one row: median wall, CPU and peak RSS; the counts of its first run
    that missed the truth (so the row says MISMATCH), else of its first run."""
    counted = next((r for r in runs if not counted_right(r, truth)), runs[0])
    return {
        "tool": runs[0]["tool"],
        "wall": statistics.median(r["wall"] for r in runs),
        "cpu": statistics.median(r["cpu"] for r in runs),
        "rss_mb": statistics.median(r["rss_mb"] for r in runs),
        "walls": [round(r["wall"], 2) for r in runs],
        "failures": counted["failures"],
        "requests": counted["requests"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--mb", type=int, default=1024)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "hd-bench")
    parser.add_argument("--latency", type=int, default=20, help="latency samples")
    parser.add_argument("--idle", type=float, default=30.0, help="seconds measured idle")
    parser.add_argument(
        "--jobs",
        type=int,
        nargs="+",
        help="watch -j for the backlog, a run each (default: all cores)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="rounds of the backlog runs")
    parser.add_argument("--no-live", action="store_true", help="the backlog only: no latency, idle")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    folder = args.dir / f"watch-{args.mb}"
    log, truth_file = folder / "vllm.log", folder / "vllm.truth.json"
    if not truth_file.exists():
        write(folder, args.mb)
    truth = json.loads(truth_file.read_text())
    print(
        f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}, "
        f"{os.cpu_count()} CPUs; log {log.stat().st_size / 2**30:.2f} GiB, "
        f"{truth['failures']} failures, {truth['requests']} requests"
    )
    tools: list[Any] = [
        functools.partial(backlog_watch, log, truth, jobs) for jobs in args.jobs or [None]
    ]
    tools.append(functools.partial(backlog_scan, log, folder))
    if shutil.which("mtail"):
        tools.append(functools.partial(backlog_mtail, log, folder))
    else:
        print("mtail not installed (Debian: apt-get install mtail): its row is missing")
    warm(log)
    runs: list[list[dict[str, Any]]] = [[] for _ in tools]
    for _ in range(max(1, args.repeat)):
        for tool, done in zip(tools, runs, strict=True):
            done.append(tool())
    rows = [median_row(done, truth) for done in runs]
    mtail = rows[-1] if rows[-1]["tool"] == "mtail" else None
    for row in rows:
        ok = counted_right(row, truth)
        print(
            f"backlog {row['tool']:6} wall {row['wall']:7.2f} s  cpu {row['cpu']:7.2f} s  "
            f"peak rss {row['rss_mb']:6.0f} MiB  runs {row['walls']}  "
            f"{sum(row['failures'].values())} failures, {row['requests']} requests"
            + ("" if ok else f"  MISMATCH {row['failures']} {row['requests']}")
        )
    if mtail is not None:
        for row in rows[:-1]:
            print(
                f"{row['tool']} against mtail: {mtail['wall'] / row['wall']:.1f}x faster "
                f"(wall), {mtail['cpu'] / row['cpu']:.1f}x less CPU"
            )
    print(f"load average after the backlogs: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.no_live:
        if args.json:
            print(json.dumps({"rows": rows}, indent=1))
        return
    live = latency_and_idle(folder, args.latency, args.idle)
    print(
        f"latency line -> /metrics: median {live['latency_median'] * 1000:.0f} ms, worst "
        f"{live['latency_max'] * 1000:.0f} ms over {live['samples']}"
    )
    print(f"idle: {live['idle_core_percent']:.2f}% of a core over {live['idle_seconds']:g} s")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        print(json.dumps({"rows": rows, "live": live}, indent=1))


if __name__ == "__main__":
    main()
