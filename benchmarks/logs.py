"""Log extraction speed: `extract_errors` against a plain read-and-regex pass, side by side.

Builds a vLLM-style log (info and access lines with a failing traceback every `--every` lines),
then reports lines per second for the extractor and its ratio to the cheapest pass any log tool
makes (split the lines, one regex search each), plus `harmony-doctor explain` end to end on a
2,000-line excerpt (the issue's target: under a second).

    python benchmarks/logs.py [--lines 200000] [--every 500] [--json]
    python benchmarks/logs.py --windows LOG [--repeat 3] [--json]

`--windows LOG`: the extractor as `scan` runs it, on the failure windows the scan core cuts
from LOG (the Rust core when built): CPU per window, per window line and per GiB of LOG, best
of --repeat, beside ripgrep's CPU for `rg -c HarmonyError LOG` when rg is installed.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from harmony_doctor.logs import extract_errors
from harmony_doctor.logs.extract import _Extractor
from harmony_doctor.scan.core import Window
from harmony_doctor.scan.cores import make_core

INFO = (
    "(APIServer pid=7) INFO 11-12 14:02:10 [loggers.py:127] Engine 000: Avg prompt throughput: "
    "812.4 tokens/s, Avg generation throughput: 96.1 tokens/s, Running: 4 reqs"
)
ACCESS = '(APIServer pid=7) INFO:     10.1.4.22:50412 - "POST /v1/chat/completions HTTP/1.1" 200 OK'
ERROR = "(APIServer pid=7) ERROR 11-12 14:02:13 [serving.py:1184] "
TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/v/site-packages/vllm/entrypoints/openai/serving_chat.py", line 702, in gen',
    "    harmony_parser.process(token_id)",
    '  File "/v/site-packages/openai_harmony/__init__.py", line 637, in process',
    "    self._inner.process(token)",
    'openai_harmony.HarmonyError: unexpected tokens remaining in message header: Some("to=f.x")',
]


def build(lines: int, every: int) -> list[str]:
    out: list[str] = []
    while len(out) < lines:
        out.extend([INFO, ACCESS] * (every // 2))
        out.extend(ERROR + line for line in TRACEBACK)
    return out[:lines]


def timed(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def windows_of(path: Path) -> list[Window]:
    """The failure windows the scan core cuts from the file at `path` (scan's window sizes)."""
    core = make_core(before=3 * 1024, after=1024)
    found: list[Window] = []
    with path.open("rb") as source:
        while chunk := source.read(1024 * 1024):
            found.extend(core.feed(chunk).windows)
    found.extend(core.finish().windows)
    return found


def read_windows(windows: list[Window]) -> tuple[int, int]:
    """The windows through the extractor as scan/source.py feeds them: (lines fed, failures)."""
    extractor = _Extractor()
    fed = failures = 0
    for window in windows:
        lines = window.text.decode("utf-8", "replace").split("\n")
        if window.first_line > fed + 1 and fed:
            failures += len(list(extractor.feed(window.first_line - 1, "")))
        for number, text in enumerate(lines, start=window.first_line):
            if number > fed:
                fed = number
                failures += len(list(extractor.feed(number, text)))
    failures += len(list(extractor.close(fed)))
    return sum(w.text.count(b"\n") + 1 for w in windows), failures


def cpu(run: Callable[[], object], repeat: int) -> float:
    """The least CPU time (this process) of `repeat` runs."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        run()
        best = min(best, time.process_time() - start)
    return best


def rg_cpu(path: Path, repeat: int) -> float | None:
    """The least CPU time of `rg -c HarmonyError path` (None without ripgrep)."""
    if shutil.which("rg") is None:
        return None
    best = float("inf")
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(["rg", "-c", "HarmonyError", str(path)], capture_output=True, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        used = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        best = min(best, used)
    return best


def windows_report(path: Path, repeat: int) -> dict[str, object]:
    windows = windows_of(path)
    counted: list[tuple[int, int]] = []
    spent = cpu(lambda: counted.append(read_windows(windows)), repeat)
    lines, failures = counted[-1]
    gib = path.stat().st_size / 2**30
    rg = rg_cpu(path, repeat)
    return {
        "log": str(path),
        "windows": len(windows),
        "window_lines": lines,
        "failures": failures,
        "extract_cpu_s": round(spent, 3),
        "ms_per_window": round(spent / max(len(windows), 1) * 1e3, 3),
        "us_per_line": round(spent / max(lines, 1) * 1e6, 2),
        "extract_s_per_gib": round(spent / gib, 3),
        "rg_s_per_gib": None if rg is None else round(rg / gib, 3),
        "extract_vs_rg": None if not rg else round(spent / rg, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--every", type=int, default=500)
    parser.add_argument("--windows", type=Path, help="a log: time the extractor on its windows")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.windows is not None:
        show(windows_report(args.windows, args.repeat), args.json)
        return
    log = build(args.lines, args.every)
    baseline_pattern = re.compile(r"HarmonyError")
    baseline = timed(lambda: sum(1 for line in log if baseline_pattern.search(line)))
    found: list[object] = []
    extract = timed(lambda: found.extend(extract_errors(log)))
    with tempfile.TemporaryDirectory() as folder:
        excerpt = Path(folder) / "excerpt.log"
        excerpt.write_text("\n".join(build(2000, args.every)) + "\n")
        command = [sys.executable, "-m", "harmony_doctor", "explain", str(excerpt)]
        explain = timed(lambda: subprocess.run(command, capture_output=True, check=False))
    result = {
        "lines": len(log),
        "failures": len(found),
        "extract_lines_per_s": round(len(log) / extract),
        "baseline_lines_per_s": round(len(log) / baseline),
        "extract_vs_baseline": round(extract / baseline, 1),
        "explain_2000_lines_s": round(explain, 3),
    }
    show(result, args.json)


def show(result: dict[str, object], as_json: bool) -> None:
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            print(f"{key:24} {value}")


if __name__ == "__main__":
    main()
