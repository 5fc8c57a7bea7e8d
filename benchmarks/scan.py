"""`harmony-doctor scan` against ripgrep on generated vLLM logs: wall, CPU, peak memory, counts.

    python benchmarks/scan.py [--quick | --big] [--repeat 3] [--cores native,native2,python]
                              [--kinds plain,gzip,zstd] [--densities dense,sparse] [--json]

Logs (benchmarks/make_logs.py, cached in --dir with their ground truth): 1 GiB (--quick:
256 MiB; --big: 1 GiB and 4 GiB), dense (a failure per 500 requests) and sparse (one per
10,000; `--densities outputs`: sparse, with every request's 1,000-id completion logged;
vllm-dense and vllm-sparse: the `Received request` line as vLLM really writes it, with the
prompt's ids and the whole SamplingParams),
plain, `gzip -1` and `zstd -1`. Every command runs directly under `/usr/bin/time -v` (no Python
wrapper): `rg -c HarmonyError FILE` (`rg -z -c` when compressed) and
`harmony-doctor scan --jobs 2 --format json FILE` on the Rust core (`native`: as it chooses;
`native1` and `native2`: a large chunk's lines on one thread or in two parts on two,
HARMONY_DOCTOR_CORE_THREADS) and on the pure-Python one (HARMONY_DOCTOR_NATIVE=0). Reported
per command: best wall of N runs, its CPU time (user+sys), both as ratios to rg's, the peak RSS
of the largest process (time -v) and of the whole process tree (sampled sum), and the load
average before the run; at the end, native2 against native1 per file. Each scan's totals and
failures by code are checked against the ground truth, and one `--by pid,hour` run per file
checks requests and failures per (pid, hour): a difference prints MISMATCH.

A benchmark, not a test: wall times depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from make_logs import compress, write

RG_PATTERN = "HarmonyError"  # what operators grep for today
EVERY = {
    "dense": 500,
    "sparse": 10_000,
    "outputs": 10_000,
    "vllm-dense": 500,
    "vllm-sparse": 10_000,
}
OUTPUTS = {"outputs": 1000}  # every request logs a 1,000-id completion (--densities outputs)
# vllm-*: the `Received request` line as vLLM's request logger writes it for gpt-oss (the
# rendered prompt's ids and the whole SamplingParams), the shape most real logs hold
RECEIVED = {"vllm-dense": "vllm", "vllm-sparse": "vllm"}
# the environment of each core's scans
CORES = {
    "native": {"HARMONY_DOCTOR_NATIVE": "1", "HARMONY_DOCTOR_CORE_THREADS": ""},
    "native1": {"HARMONY_DOCTOR_NATIVE": "1", "HARMONY_DOCTOR_CORE_THREADS": "1"},
    "native2": {"HARMONY_DOCTOR_NATIVE": "1", "HARMONY_DOCTOR_CORE_THREADS": "2"},
    "python": {"HARMONY_DOCTOR_NATIVE": "0"},
}
TIME = "/usr/bin/time"
PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass
class Run:
    """The best of N runs of one command on one file."""

    density: str
    mib: int
    kind: str
    tool: str
    wall_s: float
    cpu_s: float
    maxrss_mib: float  # the largest single process (GNU time)
    tree_mib: float  # the whole process tree, sampled every 20 ms
    load: float  # 1-minute load average before the best run
    check: str
    wall_ratio: float | None = None
    cpu_ratio: float | None = None


def tree_rss(root: int) -> int:
    """Resident bytes of `root` and all its descendants now (0 when it is gone)."""
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/statm") as handle:
                total += int(handle.read().split()[1]) * PAGE
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as handle:
                    todo += [int(c) for c in handle.read().split()]
        except (OSError, ValueError):
            continue
    return total


def run_once(
    command: list[str], env: dict[str, str] | None
) -> tuple[float, float, int, int, bytes, int]:
    """wall s, cpu s, max RSS KiB (time -v), tree peak bytes, stdout, exit code."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as report:
        start = time.perf_counter()
        proc = subprocess.Popen(
            [TIME, "-v", "-o", report.name, *command],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        peak = [0]
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.02):
                peak[0] = max(peak[0], tree_rss(proc.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        out, _ = proc.communicate()
        wall = time.perf_counter() - start
        done.set()
        sampler.join()
        text = Path(report.name).read_text()
    fields = dict(line.strip().rsplit(": ", 1) for line in text.splitlines() if ": " in line)
    cpu = float(fields.get("User time (seconds)", 0)) + float(
        fields.get("System time (seconds)", 0)
    )
    rss = int(fields.get("Maximum resident set size (kbytes)", 0))
    return wall, cpu, rss, peak[0], out, proc.returncode


def best_of(
    command: list[str], repeat: int, env: dict[str, str] | None = None
) -> tuple[float, float, float, float, float, bytes]:
    """The fastest of `repeat` runs: wall, its cpu, max RSS MiB, tree MiB (max over runs), load."""
    best: tuple[float, float, float, bytes] | None = None
    rss = tree = 0
    for _ in range(repeat):
        load = os.getloadavg()[0]
        wall, cpu, maxrss, peak, out, code = run_once(command, env)
        if code not in (0, 1):  # scan exits 1 when it finds failures; rg when it finds none
            print(f"  FAILED ({code}): {' '.join(command)}", file=sys.stderr)
        rss, tree = max(rss, maxrss), max(tree, peak)
        if best is None or wall < best[0]:
            best = (wall, cpu, load, out)
    assert best is not None
    return best[0], best[1], rss / 1024, tree / 2**20, best[2], best[3]


def doctor() -> list[str]:
    exe = Path(sys.executable).with_name("harmony-doctor")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "harmony_doctor"]


def check_totals(out: bytes, truth: dict[str, Any]) -> list[str]:
    """Differences between a `--format json` scan (by code) and the ground truth."""
    try:
        result = json.loads(out)
    except ValueError:
        return ["no JSON output"]
    totals = result["totals"]
    wrong = [
        f"{k} {totals[k]} != {truth[k]}"
        for k in ("requests", "failures", "lines")
        if totals[k] != truth[k]
    ]
    by_code = {g["code"]: g["count"] for g in result["groups"]}
    if by_code != truth["failures_by_code"]:
        wrong.append(f"by code {by_code} != {truth['failures_by_code']}")
    return wrong


def check_pid_hours(path: Path, truth: dict[str, Any], env: dict[str, str]) -> list[str]:
    """Requests and failures per (pid, hour) of a `--by pid,hour` scan against the truth."""
    command = [*doctor(), "scan", "--jobs", "2", "--by", "pid,hour", "--format", "json"]
    out = subprocess.run([*command, str(path)], capture_output=True, env=env).stdout
    try:
        groups = json.loads(out)["groups"]
    except (ValueError, KeyError):
        return ["no JSON output (--by pid,hour)"]
    wrong = []
    seen = {}
    for g in groups:
        hour = g["hour"]  # 2026-11-01T00
        key = f"{g['pid']} {hour[5:7]}-{hour[8:10]} {hour[11:13]}"
        seen[key] = g["count"]
        want = truth["requests_by_pid_hour"].get(key)
        if g["requests"] != want:
            wrong.append(f"requests {key}: {g['requests']} != {want}")
    if seen != truth["failures_by_pid_hour"]:
        wrong.append("failures per (pid, hour) differ")
    return wrong[:5]


def ensure_logs(
    folder: Path, density: str, mib: int, kinds: list[str]
) -> tuple[dict[str, Path], dict[str, Any]]:
    """The log of that density and size in every kind, generated once and kept in `folder`."""
    out = folder / f"{density}-{mib}m"
    truth_path = out / "vllm.truth.json"
    if truth_path.exists() and (out / "vllm.log").exists():
        truth = json.loads(truth_path.read_text())
    else:
        print(f"generating {out}/vllm.log ...", flush=True)
        truth = write(
            out, mib, EVERY[density], OUTPUTS.get(density, 0), RECEIVED.get(density, "short")
        )
    files = {"plain": out / "vllm.log"}
    for kind, suffix in (("gzip", ".gz"), ("zstd", ".zst")):
        if kind in kinds:
            target = out / ("vllm.log" + suffix)
            if not target.exists() or target.stat().st_mtime < files["plain"].stat().st_mtime:
                print(f"compressing {target} ...", flush=True)
                compress(files["plain"], kind)
            files[kind] = target
    return files, truth


def measure(args: argparse.Namespace) -> list[Run]:
    rg = shutil.which("rg")
    if rg is None:
        sys.exit("ripgrep is missing: apt-get install ripgrep")
    if not Path(TIME).exists():
        sys.exit("GNU time is missing: apt-get install time")
    runs: list[Run] = []
    for mib in args.sizes:
        for density in args.densities:
            files, truth = ensure_logs(args.dir, density, mib, args.kinds)
            for kind in args.kinds:
                path = files[kind]
                grep = [rg, "-c", RG_PATTERN, str(path)]
                if kind != "plain":
                    grep.insert(1, "-z")
                wall, cpu, rss, tree, load, out = best_of(grep, args.repeat)
                base = Run(density, mib, kind, "rg", wall, cpu, rss, tree, load, "-")
                runs.append(base)
                report(base)
                for core in args.cores:
                    env = dict(os.environ, **CORES[core])
                    command = [*doctor(), "scan", "--jobs", str(args.jobs), "--format", "json"]
                    repeat = args.python_repeat if core == "python" else args.repeat
                    wall, cpu, rss, tree, load, out = best_of([*command, str(path)], repeat, env)
                    wrong = check_totals(out, truth)
                    if kind == "plain" or args.check_all:
                        wrong += check_pid_hours(path, truth, env)
                    check = "ok" if not wrong else "MISMATCH: " + "; ".join(wrong)
                    row = Run(density, mib, kind, core, wall, cpu, rss, tree, load, check)
                    row.wall_ratio = wall / base.wall_s
                    row.cpu_ratio = cpu / base.cpu_s if base.cpu_s else None
                    runs.append(row)
                    report(row)
                    if wrong:
                        print(f"\n*** MISMATCH *** {core} {density} {kind}: {check}\n", flush=True)
    return runs


def report(r: Run) -> None:
    ratio = " " * 13
    if r.wall_ratio is not None:
        cpu = f"{r.cpu_ratio:5.2f}x" if r.cpu_ratio is not None else "    -"
        ratio = f"{r.wall_ratio:5.2f}x {cpu}"
    print(
        f"{r.mib:5d} MiB {r.density:6s} {r.kind:5s} {r.tool:7s} wall {r.wall_s:7.2f}s "
        f"cpu {r.cpu_s:7.2f}s {ratio}  rss {r.maxrss_mib:6.0f} MiB tree {r.tree_mib:6.0f} MiB  "
        f"load {r.load:4.1f}  {r.check}",
        flush=True,
    )


def compare_threads(runs: list[Run]) -> None:
    """The Rust core on two threads against one, per file: wall and CPU ratios."""
    one = {(r.density, r.mib, r.kind): r for r in runs if r.tool == "native1"}
    for r in runs:
        other = one.get((r.density, r.mib, r.kind))
        if r.tool == "native2" and other is not None:
            print(
                f"{r.mib:5d} MiB {r.density:6s} {r.kind:5s} two threads / one: "
                f"wall {r.wall_s / other.wall_s:5.2f}x ({r.wall_s:.2f}s / {other.wall_s:.2f}s), "
                f"cpu {r.cpu_s / other.cpu_s:5.2f}x ({r.cpu_s:.2f}s / {other.cpu_s:.2f}s)",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="256 MiB logs")
    size.add_argument("--big", action="store_true", help="1 GiB and 4 GiB logs")
    size.add_argument("--mib", type=int, help="one log size in MiB")
    parser.add_argument("--repeat", type=int, default=3, help="runs per command (best kept)")
    parser.add_argument(
        "--python-repeat", type=int, default=1, help="runs of the pure-Python scan (slow)"
    )
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument(
        "--cores",
        default="native,native1,native2,python",
        help="native (the Rust core, its threads as it chooses), native1 and native2 (on one "
        "thread, on two), python",
    )
    parser.add_argument("--kinds", default="plain,gzip,zstd")
    parser.add_argument(
        "--densities",
        default="dense,sparse,vllm-dense,vllm-sparse",
        help="dense, sparse, outputs (1,000-id completions), vllm-dense, vllm-sparse (vLLM's "
        "real Received request line)",
    )
    parser.add_argument(
        "--check-all", action="store_true", help="--by pid,hour check on compressed files too"
    )
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "hd-bench")
    parser.add_argument("--json", action="store_true", help="also print the rows as JSON")
    args = parser.parse_args()
    args.sizes = (
        [args.mib] if args.mib else [256] if args.quick else [1024, 4096] if args.big else [1024]
    )
    args.cores = [c for c in args.cores.split(",") if c]
    if unknown := set(args.cores) - set(CORES):
        parser.error(f"unknown cores: {', '.join(sorted(unknown))} (known: {', '.join(CORES)})")
    args.kinds = [k for k in args.kinds.split(",") if k]
    args.densities = [d for d in args.densities.split(",") if d]
    print(
        f"scan benchmark: best of {args.repeat} (python core: {args.python_repeat}), "
        f"{os.cpu_count()} CPUs; ratios are wall and CPU time to rg's on the same file"
    )
    runs = measure(args)
    compare_threads(runs)
    if args.json:
        print(json.dumps([asdict(r) for r in runs], indent=1))
    if any(r.check.startswith("MISMATCH") for r in runs):
        print("\n*** MISMATCH against the ground truth: see the rows above ***")
        sys.exit(1)


if __name__ == "__main__":
    main()
