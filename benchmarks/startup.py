"""Start-up of each command shape, end to end, against `python -c pass` side by side.

The reference, `python -c pass`, is a bare start of the same interpreter: a virtual
environment made from it for the run, with no package and no `.pth` file. Before session
fifteen it was this environment's own `python -c pass`, which in an editable install (`make
install`, `pip install -e`) imports the editable finder and pathlib at every start (~10 of its
~20 ms): the reference was twice a bare start, and every ratio half what a user of a wheel
sees. `python -c pass (this env)` is still shown. `typer + rich floor` is a two-command typer
app (typer 0.2x imports rich when it is installed, as here): what the CLI's fixed choice costs
before a line of ours runs.

Every shape runs as a fresh process N times, after one warm-up run each (which fills the
vocabulary cache, and the bytecode cache: in a temporary PYTHONPYCACHEPREFIX, whatever
PYTHONDONTWRITEBYTECODE says). The runs are interleaved, one round at a time with every shape
in turn, so that a change in the machine's load falls on every shape alike; the table gives
the best and the median wall time, the median CPU time (user + system of the child), and each
as a multiple of `python -c pass` of the same interpreter (best over best, median over
median). The load average (os.getloadavg) before and after is printed too: on a busy machine
every number grows, the ratios much less.

    python benchmarks/startup.py [--runs 10] [--json] [--instructions]

`--instructions` counts the instructions each shape executes instead (one run each under
valgrind's callgrind, ~30x slower): a number the machine's load does not change, for comparing
two versions on a busy machine, where wall times move by half from one minute to the next.

Goals (issue 23): `scan` of an empty file and of a small clean log, and `explain` on a traceback,
at most 5x `python -c pass`; `--version` and `--help` import nothing of the scan stack (tests/cli/
test_startup.py checks the imports). Earlier targets (issue 12): --help < 0.15 s; explain on a
log < 0.25 s; on a 100-id list or a short Harmony text < 0.5 s. Not a test: nothing here
asserts a time.
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
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"

# A completion as a server logs it: 100 ids, a tool call cut short, then an analysis message.
_CALL = [200005, 12606, 815, 316, 28, 44580, 16718, 220, 200003, 4108, 200008]
_PROSE = [10848, 80, 1243, 392, 70, 555, 12, 2907, 18583, 220] * 8
IDS_100 = [200005, 35644, 200008, 23483, 316, 3684, 13, 200007, 200006, 173781]
IDS_100 = [*(IDS_100 + _CALL + _PROSE)[:99], 200012]


# A small clean vLLM log: start-up lines only (no request line, no failure), then the same with
# requests received and answered (tallies to aggregate, still no failure).
_STARTED = [
    "(APIServer pid=4121) INFO 11-28 10:14:50 [api_server.py:1885] vLLM API server version 0.10.1",
    "(APIServer pid=4121) INFO 11-28 10:14:50 [utils.py:326] non-default args: {'model': "
    "'openai/gpt-oss-20b'}",
    "(APIServer pid=4121) INFO 11-28 10:14:58 [launcher.py:29] Available routes are:",
    "(APIServer pid=4121) INFO:     Started server process [4121]",
    "(APIServer pid=4121) INFO:     Waiting for application startup.",
    "(APIServer pid=4121) INFO:     Application startup complete.",
]
_SERVED = [
    line
    for n in range(1, 7)
    for line in (
        f"(APIServer pid=4121) INFO 11-28 10:15:0{n} [logger.py:71] Received request "
        f"chatcmpl-a{n}: params: SamplingParams(n=1, temperature=1.0, max_tokens=512), "
        "prompt_token_ids: None, lora_request: None.",
        f'(APIServer pid=4121) INFO:     10.0.0.7:5123{n} - "POST /v1/chat/completions '
        'HTTP/1.1" 200 OK',
    )
]

# The shapes issue 23 sets a goal for (at most this many times `python -c pass`).
GOAL = 5.0
GOAL_SHAPES = ("scan empty file", "scan clean log", "explain traceback")


# The floor the CLI's fixed choice (typer, with rich beside it) sets: an app of two commands.
_TYPER_APP = """import typer
app = typer.Typer()
@app.command()
def scan(path: str) -> None:
    pass
@app.command()
def explain(path: str) -> None:
    pass
app()
"""


def bare_python(folder: Path) -> str:
    """The interpreter behind this environment, in a virtual environment of its own with
    nothing installed: a bare start (no `.pth` file runs, no package is on the path)."""
    where = folder / "bare-venv"
    venv.create(where, with_pip=False, symlinks=True)
    return str(where / "bin" / "python")


def shapes(folder: Path) -> dict[str, list[str]]:
    ids = folder / "ids-100.txt"
    ids.write_text(" ".join(map(str, IDS_100)) + "\n")
    empty = folder / "empty.log"
    empty.write_bytes(b"")
    clean = folder / "clean.log"
    clean.write_text("\n".join(_STARTED) + "\n")
    served = folder / "clean-requests.log"
    served.write_text("\n".join(_STARTED + _SERVED) + "\n")
    typer_app = folder / "typer_app.py"
    typer_app.write_text(_TYPER_APP)
    program = [sys.executable, "-m", "harmony_doctor"]
    return {
        "python -c pass": [bare_python(folder), "-c", "pass"],
        "python -c pass (this env)": [sys.executable, "-c", "pass"],
        "typer + rich floor": [sys.executable, str(typer_app), "scan", "x"],
        "--version": [*program, "--version"],
        "--help": [*program, "--help"],
        "scan empty file": [*program, "scan", str(empty)],
        "scan clean log": [*program, "scan", str(clean)],
        "scan clean requests": [*program, "scan", str(served)],
        "scan traceback": [*program, "scan", str(SAMPLES / "vllm-traceback.log")],
        "explain traceback": [*program, "explain", str(SAMPLES / "vllm-traceback.log")],
        "explain log excerpt": [*program, "explain", str(SAMPLES / "vllm-requests.log")],
        "explain harmony text": [*program, "explain", str(SAMPLES / "tool-call.harmony.txt")],
        "explain 100 ids": [*program, "explain", str(ids)],
    }


def child_env(cache: Path) -> dict[str, str]:
    """The environment every shape runs in: bytecode cached (in `cache`, outside the source
    tree, filled by the warm-up run), whatever PYTHONDONTWRITEBYTECODE says here. Without a
    cache, each run compiles every module it imports from source (a third of a scan's start)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    env["PYTHONHASHSEED"] = "0"  # instruction counts vary by a few % with the hash seed
    cache.mkdir(parents=True, exist_ok=True)
    return env


def _run(command: list[str]) -> None:
    subprocess.run(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
        env=_ENV or None,
        cwd=_ENV.get("PYTHONPYCACHEPREFIX"),
    )


# Set by main (and by a caller that imports this module) before anything runs. The children
# run in the cache folder: `python -m` looks in its working folder first, and a checkout
# there would be measured instead of the interpreter's own install.
_ENV: dict[str, str] = {}


def _once(command: list[str]) -> tuple[float, float]:
    """Wall and CPU time (user + system of the child) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    _run(command)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def measure(commands: dict[str, list[str]], runs: int) -> dict[str, dict[str, float]]:
    """Every shape `runs` times, interleaved: round after round, each shape once per round (in
    a rotating order), so that the load of any minute falls on all of them alike."""
    names = list(commands)
    for name in names:  # warm-up: bytecode and vocabulary caches
        _once(commands[name])
    walls: dict[str, list[float]] = {n: [] for n in names}
    cpus: dict[str, list[float]] = {n: [] for n in names}
    for round_ in range(runs):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            wall, cpu = _once(commands[name])
            walls[name].append(wall)
            cpus[name].append(cpu)
    return {
        n: {
            "best": min(walls[n]),
            "median": statistics.median(walls[n]),
            "cpu": statistics.median(cpus[n]),
        }
        for n in names
    }


def instructions(command: list[str]) -> int:
    """Instructions the command executes (callgrind's `I refs`), after a warm-up run."""
    _run(command)
    counted = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
        env=_ENV or None,
        cwd=_ENV.get("PYTHONPYCACHEPREFIX"),
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
        _ENV.update(child_env(Path(tmp) / "pycache"))
        counts = {name: instructions(cmd) for name, cmd in shapes(Path(tmp)).items()}
    if as_json:
        print(json.dumps({"instructions": counts}, indent=2))
        return
    reference = counts["python -c pass"]
    print(f"{'shape':<26} {'instructions':>14} {'x pass':>7}")
    for name, count in counts.items():
        print(f"{name:<26} {count:>14,} {count / reference:>7.1f}")


def with_ratios(results: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Each shape's times with its best and median as multiples of `python -c pass`'s."""
    reference = results["python -c pass"]
    return {
        name: {
            **r,
            "x_best": r["best"] / reference["best"],
            "x_median": r["median"] / reference["median"],
        }
        for name, r in results.items()
    }


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
        _ENV.update(child_env(Path(tmp) / "pycache"))
        results = with_ratios(measure(shapes(Path(tmp)), args.runs))
    load_after = os.getloadavg()
    if args.json:
        out = {
            "load": [load_before, load_after],
            "cores": os.cpu_count(),
            "runs": args.runs,
            "goal": {"x_pass": GOAL, "shapes": list(GOAL_SHAPES)},
            "results": results,
        }
        print(json.dumps(out, indent=2))
        return
    print(
        f"{args.runs} interleaved runs each on {os.cpu_count()} core(s); load average "
        f"{load_before[0]:.2f} before, {load_after[0]:.2f} after; x pass = best over best "
        f"(median over median); goal <= {GOAL:g}x for {', '.join(GOAL_SHAPES)}"
    )
    print(f"{'shape':<26} {'best ms':>8} {'median ms':>10} {'cpu ms':>7} {'x pass':>13}  goal")
    for name, r in results.items():
        goal = ""
        if name in GOAL_SHAPES:
            goal = "met" if r["x_best"] <= GOAL else "not met"
        ratio = f"{r['x_best']:.1f} ({r['x_median']:.1f})"
        print(
            f"{name:<26} {r['best'] * 1000:>8.0f} {r['median'] * 1000:>10.0f} "
            f"{r['cpu'] * 1000:>7.0f} {ratio:>13}  {goal}"
        )


if __name__ == "__main__":
    main()
