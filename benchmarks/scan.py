"""`harmony-doctor scan` against ripgrep on the same logs, side by side, plus peak memory.

The reference is what operators do today: `rg -c HarmonyError` (and `rg -z -c` on the gzip)
over the same bytes. ripgrep only counts lines; harmony-doctor also assembles tracebacks,
classifies, counts requests, replays logged token ids and aggregates. The generated log has a
known number of requests and failures, and the run checks scan's totals against them. Also: a
single 100 MB line without a newline, to show memory stays bounded.

    python benchmarks/scan.py [--mb 1024] [--repeat 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from make_logs import write

RG_PATTERN = "HarmonyError"  # what operators grep for today


_PEAK = (
    "import resource, subprocess, sys\n"
    "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def timed(command: list[str], repeat: int) -> tuple[float, int]:
    """Best wall time of `repeat` runs, and the command's own peak RSS in KiB.

    Each run goes through a small wrapper process, so the peak is this command's alone.
    """
    best, peak = float("inf"), 0
    for _ in range(repeat):
        start = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-c", _PEAK, *command], capture_output=True, text=True, check=True
        )
        best = min(best, time.perf_counter() - start)
        peak = max(peak, int(out.stdout.strip() or 0))
    return best, peak


def doctor() -> list[str]:
    exe = Path(sys.executable).with_name("harmony-doctor")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "harmony_doctor"]


def measure(megabytes: int, repeat: int) -> dict[str, Any]:
    rg = shutil.which("rg")
    results: dict[str, Any] = {"mb": megabytes, "repeat": repeat, "cases": {}}
    with tempfile.TemporaryDirectory(prefix="hd-bench-") as folder:
        for name, compress in (("plain", False), ("gzip", True)):
            out = Path(folder) / name
            requests, failures = write(out, megabytes, compress)
            command = [*doctor(), "scan", "--format", "json", str(out)]
            ours, ours_rss = timed(command, repeat)
            totals = json.loads(subprocess.run(command, capture_output=True, text=True).stdout)
            truth = (totals["totals"]["requests"], totals["totals"]["failures"])
            row: dict[str, Any] = {
                "requests": requests,
                "logged_failures": failures,
                "ground_truth": "ok" if truth == (requests, failures) else f"MISMATCH {truth}",
                "harmony_doctor_s": round(ours, 3),
                "harmony_doctor_peak_mib": round(ours_rss / 1024, 1),
                "mb_per_s": round(megabytes / ours, 1),
            }
            quick, _ = timed([*command[:-1], "--no-replay", str(out)], repeat)
            row["no_replay_s"] = round(quick, 3)
            if rg is not None:
                reference, _ = timed([rg, "-c", "-z", RG_PATTERN, str(out)], repeat)
                row["ripgrep_s"] = round(reference, 3)
                row["ratio"] = round(ours / reference, 1)
                row["no_replay_ratio"] = round(quick / reference, 1)
            results["cases"][name] = row
        long_line = Path(folder) / "long" / "one-line.log"
        long_line.parent.mkdir()
        with long_line.open("wb") as handle:
            block = b"x" * (1024 * 1024)
            for _ in range(100):
                handle.write(block)
        seconds, rss = timed([*doctor(), "scan", "--format", "json", str(long_line.parent)], 1)
        results["long_line_100mb"] = {
            "seconds": round(seconds, 2),
            "peak_mib": round(rss / 1024, 1),
        }
    results["ripgrep"] = rg is not None
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = measure(args.mb, args.repeat)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"scan benchmark: {args.mb} MB of vLLM logs, best of {args.repeat}")
    for name, row in result["cases"].items():
        reference = (
            f" | ripgrep {row['ripgrep_s']:.2f}s ({row['ratio']}x; "
            f"--no-replay {row['no_replay_s']:.2f}s, {row['no_replay_ratio']}x)"
            if "ripgrep_s" in row
            else ""
        )
        print(
            f"  {name:6} harmony-doctor {row['harmony_doctor_s']:.2f}s "
            f"({row['mb_per_s']} MB/s, peak {row['harmony_doctor_peak_mib']} MiB){reference}"
            f" | ground truth {row['ground_truth']}"
        )
    long_row = result["long_line_100mb"]
    print(f"  one 100 MB line: {long_row['seconds']}s, peak {long_row['peak_mib']} MiB")
    if not result["ripgrep"]:
        print("  (ripgrep not installed: apt-get install ripgrep)")


if __name__ == "__main__":
    main()
