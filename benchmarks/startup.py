"""Startup latency of each command shape, end to end, against `python -c pass` side by side.

Every shape runs as a fresh process N times (after one warm-up run, which also fills the
vocabulary cache); the table gives the best and the median wall time, the median CPU time (user +
system of the child), and the median wall time as a multiple of the reference. The machine load
(os.getloadavg) before and after is printed too: on a busy machine every number grows.

    python benchmarks/startup.py [--runs 10] [--json] [--instructions]

`--instructions` counts the instructions each shape executes instead (one run each under
valgrind's callgrind, ~30x slower): a number the machine's load does not change, for comparing
two versions on a busy machine, where wall times move by half from one minute to the next.

Targets (issue 12): --help < 0.15 s; explain on a log < 0.25 s; on a 100-id list or a short
Harmony text < 0.5 s. Not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"

# A completion as a server logs it: 100 ids, a tool call cut short, then an analysis message.
_CALL = [200005, 12606, 815, 316, 28, 44580, 16718, 220, 200003, 4108, 200008]
_PROSE = [10848, 80, 1243, 392, 70, 555, 12, 2907, 18583, 220] * 8
IDS_100 = [200005, 35644, 200008, 23483, 316, 3684, 13, 200007, 200006, 173781]
IDS_100 = [*(IDS_100 + _CALL + _PROSE)[:99], 200012]


def shapes(folder: Path) -> dict[str, list[str]]:
    ids = folder / "ids-100.txt"
    ids.write_text(" ".join(map(str, IDS_100)) + "\n")
    program = [sys.executable, "-m", "harmony_doctor"]
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "--help": [*program, "--help"],
        "explain traceback": [*program, "explain", str(SAMPLES / "vllm-traceback.log")],
        "explain log excerpt": [*program, "explain", str(SAMPLES / "vllm-requests.log")],
        "explain harmony text": [*program, "explain", str(SAMPLES / "tool-call.harmony.txt")],
        "explain 100 ids": [*program, "explain", str(ids)],
    }


def measure(command: list[str], runs: int) -> dict[str, float]:
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    walls: list[float] = []
    cpus: list[float] = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return {
        "best": min(walls),
        "median": statistics.median(walls),
        "cpu": statistics.median(cpus),
    }


def instructions(command: list[str]) -> int:
    """Instructions the command executes (callgrind's `I refs`), after a warm-up run."""
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    counted = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    found = re.search(r"I\s+refs:\s+([\d,]+)", counted.stderr)
    if found is None:
        raise SystemExit(f"valgrind gave no count: {counted.stderr[-500:]}")
    return int(found.group(1).replace(",", ""))


def count_instructions(as_json: bool) -> None:
    """The instruction count of every shape, as a table or JSON."""
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind on PATH")
    with tempfile.TemporaryDirectory(prefix="hd-startup-") as tmp:
        counts = {name: instructions(cmd) for name, cmd in shapes(Path(tmp)).items()}
    if as_json:
        print(json.dumps({"instructions": counts}, indent=2))
        return
    reference = counts["python -c pass"]
    print(f"{'shape':<22} {'instructions':>14} {'x pass':>7}")
    for name, count in counts.items():
        print(f"{name:<22} {count:>14,} {count / reference:>7.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--instructions", action="store_true", help="count, not time (valgrind)")
    args = parser.parse_args()
    if args.instructions:
        count_instructions(as_json=args.json)
        return
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="hd-startup-") as tmp:
        results = {name: measure(cmd, args.runs) for name, cmd in shapes(Path(tmp)).items()}
    load_after = os.getloadavg()
    reference = results["python -c pass"]["median"]
    if args.json:
        out = {"load": [load_before, load_after], "cores": os.cpu_count(), "results": results}
        print(json.dumps(out, indent=2))
        return
    print(
        f"{args.runs} runs each on {os.cpu_count()} core(s); load average "
        f"{load_before[0]:.2f} before, {load_after[0]:.2f} after"
    )
    print(f"{'shape':<22} {'best s':>8} {'median s':>9} {'cpu s':>7} {'x pass':>7}")
    for name, r in results.items():
        ratio = r["median"] / reference if reference else float("nan")
        print(f"{name:<22} {r['best']:>8.3f} {r['median']:>9.3f} {r['cpu']:>7.3f} {ratio:>7.1f}")


if __name__ == "__main__":
    main()
