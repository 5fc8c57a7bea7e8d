"""Issue 35's measure: the marginal cost of `harmony-doctor scan` per GiB of log, against the
line-scan floor, on vLLM's, SGLang's and llama.cpp's line shapes at three failure densities.

    python benchmarks/slope.py [--small 256] [--large 2048] [--repeat 3] [--dir DIR]
                               [--engines vllm,sglang,llama.cpp] [--densities 4000,12000,10]
                               [--tree NAME=PATH ...] [--json]

Per engine and density (failures per GiB), two logs of the same shape, `--small` and `--large`
MiB (benchmarks/make_logs.py's vLLM log with vLLM's real `Received request` line; SGLang's and
llama.cpp's own lines from benchmarks/shapes.py), cached in --dir with their truth. Per log,
alternating: `harmony-doctor scan --jobs 1 --format json` (with each `--tree`'s package on
PYTHONPATH; default: the installed one) and the floor, `rg -c -e 'Received request' -e
'POST /v1' -e HarmonyError` (every request and error line counted). The best CPU time (user +
sys) and wall of `--repeat` runs; the slope is (large - small) / (its GiB difference) for each,
so Python's start-up and fixed costs fall out; the ratio is scan's slope over rg's. Each scan's
requests and failures are checked against the truth (MISMATCH, and exit 1, where they differ).
The load average is printed before each log. A benchmark, not a test.

A second reference, `literals`: `rg -c -F -f FILE`, FILE holding every literal the scan core
searches for (the catalogue's error anchors and the request-line shapes' literals, as the first
tree's package builds them). It counts the lines holding any of them and nothing more (no
markup pattern, no stamp, no window read): a bound on what any scan that looks for every form
the catalogue knows can cost, against which the goals (2.5x the floor dense, 1.5x sparse) can
be read.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from make_logs import write
from shapes import _engine_lines, _engine_log

GIB = 1024**3
FLOOR = ["rg", "-c", "-e", "Received request", "-e", "POST /v1", "-e", "HarmonyError"]
# vLLM's log with its real `Received request` line: requests per failure for each density
# (make_logs.py writes about 600,000 requests a GiB: 150 gives 3,950 failures a GiB)
VLLM_EVERY = {4000: 150, 12000: 50, 10: 60_000}


def _every(engine: str, per_gib: int) -> int:
    """Requests per failure for `per_gib` failures a GiB of `engine`'s lines."""
    if engine == "vllm":
        return VLLM_EVERY.get(per_gib) or max(1, round(150 * 4000 / per_gib))
    sample = sum(len(line) + 1 for n in range(1000) for line in _engine_lines(engine, n, 10**9))
    return max(1, round(GIB / (sample / 1000) / per_gib))


def _log(folder: Path, engine: str, per_gib: int, mib: int) -> tuple[Path, dict[str, int]]:
    """The log (made once, kept with its truth) and its truth: requests, failures."""
    every = _every(engine, per_gib)
    where = folder / f"{engine}-{per_gib}-{mib}"
    truth_file = where / "truth.json"
    if truth_file.exists():
        truth = json.loads(truth_file.read_text())
        return Path(truth["path"]), truth["counts"]
    where.mkdir(parents=True, exist_ok=True)
    if engine == "vllm":
        made = write(where, mib, every, received="vllm")
        path, counts = where / "vllm.log", {k: made[k] for k in ("requests", "failures")}
    else:
        path = where / f"{engine}.log"
        counts = _engine_log(engine, path, mib * 1024 * 1024, every)
    truth_file.write_text(json.dumps({"path": str(path), "counts": counts, "every": every}))
    return path, counts


def _run(command: list[str], env: dict[str, str] | None) -> tuple[float, float, bytes]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, check=False, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, done.stdout


def _env(tree: str | None) -> dict[str, str]:
    env = dict(os.environ)
    if tree:
        env["PYTHONPATH"] = tree
    return env


# The literals the scan core searches for, one a line (rg -F -f reads them so)
_LITERALS = """
from harmony_doctor.scan.core import ERROR_ANCHORS, LINE_SHAPES
found = set(ERROR_ANCHORS)
for shape in LINE_SHAPES:
    found.update(shape.literals)
print("\\n".join(sorted(x.decode() for x in found)))
"""


def literals_file(folder: Path, tree: str | None) -> Path:
    """A file of the scan core's literals, one a line, from `tree`'s package."""
    out = subprocess.run(
        [sys.executable, "-c", _LITERALS], capture_output=True, check=True, env=_env(tree)
    )
    path = folder / "literals.txt"
    path.write_bytes(out.stdout)
    return path


def measure_log(
    path: Path, trees: dict[str, str | None], repeat: int, literals: Path
) -> dict[str, dict[str, Any]]:
    """Best CPU and wall of each tree's scan, of the floor and of the literals' count, runs
    alternating."""
    scan = [sys.executable, "-m", "harmony_doctor", "scan", "--jobs", "1", "--format", "json"]
    best: dict[str, dict[str, Any]] = {}
    for _ in range(repeat):
        commands: list[tuple[str, list[str], dict[str, str] | None]] = [
            (name, [*scan, "--exit-zero", str(path)], _env(tree)) for name, tree in trees.items()
        ]
        commands.append(("rg", [*FLOOR, str(path)], None))
        commands.append(("literals", ["rg", "-c", "-F", "-f", str(literals), str(path)], None))
        for name, command, env in commands:
            cpu, wall, out = _run(command, env)
            row = best.setdefault(name, {"cpu": cpu, "wall": wall, "out": out})
            row["cpu"], row["wall"], row["out"] = min(row["cpu"], cpu), min(row["wall"], wall), out
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--small", type=int, default=256, help="MiB")
    parser.add_argument("--large", type=int, default=2048, help="MiB")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", default="/tmp/harmony-doctor-slope")
    parser.add_argument("--engines", default="vllm,sglang,llama.cpp")
    parser.add_argument("--densities", default="4000,12000,10", help="failures per GiB")
    parser.add_argument("--tree", action="append", default=[], help="NAME=PATH of a checkout")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    trees: dict[str, str | None] = dict(t.split("=", 1) for t in args.tree) or {"scan": None}
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    literals = literals_file(folder, next(iter(trees.values())))
    rows, exact = [], True
    for engine in args.engines.split(","):
        for per_gib in map(int, args.densities.split(",")):
            logs = [_log(folder, engine, per_gib, mib) for mib in (args.small, args.large)]
            load = os.getloadavg()[0]
            measured = [measure_log(path, trees, args.repeat, literals) for path, _ in logs]
            gib = (logs[1][0].stat().st_size - logs[0][0].stat().st_size) / GIB
            floor = (measured[1]["rg"]["cpu"] - measured[0]["rg"]["cpu"]) / gib
            row: dict[str, Any] = {
                "engine": engine,
                "failures_per_gib": per_gib,
                "load": round(load, 2),
                "failures": [truth["failures"] for _, truth in logs],
                "rg_slope": round(floor, 3),
            }
            found = (measured[1]["literals"]["cpu"] - measured[0]["literals"]["cpu"]) / gib
            row["literals_slope"] = round(found, 3)
            row["literals_ratio"] = round(found / floor, 1) if floor > 0 else None
            for name in trees:
                slope = (measured[1][name]["cpu"] - measured[0][name]["cpu"]) / gib
                wall = (measured[1][name]["wall"] - measured[0][name]["wall"]) / gib
                row[f"{name}_slope"] = round(slope, 3)
                row[f"{name}_wall_slope"] = round(wall, 3)
                row[f"{name}_ratio"] = round(slope / floor, 1) if floor > 0 else None
                row[f"{name}_cpu"] = [round(m[name]["cpu"], 2) for m in measured]
                for (_, truth), m in zip(logs, measured, strict=True):
                    totals = json.loads(m[name]["out"])["totals"]
                    got = {"requests": totals.get("requests") or 0, "failures": totals["failures"]}
                    if got != truth:
                        exact = False
                        print(f"MISMATCH {engine} {per_gib} {name}: {got} != {truth}")
            rows.append(row)
            print(
                f"{engine:9} {per_gib:>6}/GiB load {load:4.1f}  rg {floor:.3f} s/GiB  "
                f"literals {found:.3f} s/GiB ({row['literals_ratio']}x)  "
                + "  ".join(
                    f"{n} {row[f'{n}_slope']:.2f} s/GiB ({row[f'{n}_ratio']}x)" for n in trees
                ),
                flush=True,
            )
    if args.json:
        print(json.dumps(rows, indent=2))
    sys.exit(0 if exact else 1)


if __name__ == "__main__":
    main()
